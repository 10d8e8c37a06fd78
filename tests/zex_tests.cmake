# The zex library's test suites: one file per public header, tests/<name>_test.cpp.
