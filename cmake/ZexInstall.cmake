# Install rules: headers, zex-cpu, the package config (find_package(zex)) and zex.pc.
include(CMakePackageConfigHelpers)
