# The C API test's files (main() and the helpers first), for its build here and for tests/package's two
# builds from an installed tree (find_package and pkg-config), which include this file by path.
set(ZEX_C_API_TEST_SOURCES)
foreach(f c_api_test.c c_api_errors.c c_api_devices.c c_api_reports.c c_api_streams.c c_api_graphs.c c_api_memory.c)
  list(APPEND ZEX_C_API_TEST_SOURCES ${CMAKE_CURRENT_LIST_DIR}/${f})
endforeach()
