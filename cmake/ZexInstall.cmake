# Install rules (ZEX_INSTALL): the headers, the device library, zex-cpu, the package config
# (find_package(zex) -> zex::zex, zex::cpu_driver) and zex.pc. Included from the root CMakeLists.txt
# after every target exists.
#
# Layout under the prefix:
#   include/zex/*.h, *.hpp                 public headers, incl. abi.h and the kernel header device.h
#   lib/libzex.a                           the C++ library (static; libzex_cpp.so with BUILD_SHARED_LIBS)
#   lib/libzex.so.1 (-> .so.1.x.y), .so    the C API (<zex/zex.h>), exporting only zex_*
#   lib/libze_zex_cpu.so                   zex-cpu, for ZE_ENABLE_ALT_DRIVERS (not linked by anyone)
#   share/zex/zex_device.spv               the device library (SPIR-V 1.4), for compilers that link it
#   share/zex/zex_device-1.3.spv           themselves, and the same as SPIR-V 1.3 (docs/abi.md)
#   lib/cmake/zex/                         zexConfig.cmake, zexConfigVersion.cmake, zexTargets*.cmake,
#                                          FindLevelZero.cmake
#   lib/cmake/zex/ZexSpirv.cmake           zex_add_spirv(), included by zexConfig.cmake
#   lib/pkgconfig/zex.pc                   the C API (libzex.so): `pkg-config --cflags --libs zex`
#   lib/pkgconfig/zex-cpp.pc               the C++ library
include(CMakePackageConfigHelpers)

set(ZEX_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/zex CACHE STRING
    "Where zexConfig.cmake is installed, relative to the prefix")
set(ZEX_INSTALL_DATADIR ${CMAKE_INSTALL_DATADIR}/zex)

# --- headers -----------------------------------------------------------------------------------------
# The explicit list of public headers (ZEX_PUBLIC_HEADERS, the root CMakeLists.txt).
foreach(header IN LISTS ZEX_PUBLIC_HEADERS)
  get_filename_component(dir ${header} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/include/${header}
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${dir}
          COMPONENT zex_development)
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/device/include/zex/device.h   # the kernel header
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/zex
        COMPONENT zex_development)

# --- device library ----------------------------------------------------------------------------------
if(DEFINED ZEX_DEVICE_SPV)
  install(FILES ${ZEX_DEVICE_SPV} ${ZEX_DEVICE_SPV_1_3}
          DESTINATION ${ZEX_INSTALL_DATADIR} COMPONENT zex_development)
endif()

# --- targets -----------------------------------------------------------------------------------------
set(ZEX_INSTALLED_TARGETS)
set(ZEX_STATIC_LIBRARY OFF)
if(TARGET zex)
  install(TARGETS zex
          EXPORT zexTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT zex_development
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT zex_runtime
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT zex_runtime
          INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  list(APPEND ZEX_INSTALLED_TARGETS zex)
  get_target_property(_zex_type zex TYPE)
  if(_zex_type STREQUAL "STATIC_LIBRARY")
    set(ZEX_STATIC_LIBRARY ON)   # its private SPIRV-Tools dependencies travel with it
  endif()
endif()
if(TARGET zex_c)
  # The C API: the versioned file and the SONAME link are runtime, the plain .so link development.
  install(TARGETS zex_c
          EXPORT zexTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT zex_runtime NAMELINK_COMPONENT zex_development
          INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  list(APPEND ZEX_INSTALLED_TARGETS zex_c)
endif()
if(TARGET zex-spirv)
  # The SPIR-V steps zex::Module runs, as a command for compilers that want them offline (tools/).
  install(TARGETS zex-spirv RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT zex_development)
endif()
if(TARGET ze_zex_cpu)
  # A loader-loaded driver, exported so consumers can write $<TARGET_FILE:zex::cpu_driver> into
  # ZE_ENABLE_ALT_DRIVERS; nothing links it.
  set_target_properties(ze_zex_cpu PROPERTIES EXPORT_NAME cpu_driver)
  install(TARGETS ze_zex_cpu
          EXPORT zexTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT zex_runtime
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT zex_runtime)
  list(APPEND ZEX_INSTALLED_TARGETS ze_zex_cpu)
endif()

if(ZEX_INSTALLED_TARGETS)
  install(EXPORT zexTargets
          NAMESPACE zex::
          DESTINATION ${ZEX_INSTALL_CMAKEDIR}
          COMPONENT zex_development)
endif()

# --- package config ----------------------------------------------------------------------------------
set(ZEX_INSTALL_DEVICE_SPV ${ZEX_INSTALL_DATADIR}/zex_device.spv)
set(ZEX_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR})
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/zexConfig.cmake.in
  ${PROJECT_BINARY_DIR}/zexConfig.cmake
  INSTALL_DESTINATION ${ZEX_INSTALL_CMAKEDIR}
  PATH_VARS ZEX_INSTALL_DEVICE_SPV ZEX_INSTALL_INCLUDEDIR)
# The ABI and the API change incompatibly only with the major version (0.x: every minor may break,
# which SameMajorVersion cannot express; docs/abi.md has the ABI's own version rules).
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/zexConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)
install(FILES
          ${PROJECT_BINARY_DIR}/zexConfig.cmake
          ${PROJECT_BINARY_DIR}/zexConfigVersion.cmake
          ${PROJECT_SOURCE_DIR}/cmake/FindLevelZero.cmake
          ${PROJECT_SOURCE_DIR}/cmake/ZexSpirv.cmake
        DESTINATION ${ZEX_INSTALL_CMAKEDIR}
        COMPONENT zex_development)

# --- pkg-config --------------------------------------------------------------------------------------
# Relocatable: the prefix is found from the .pc file's own directory, so a staged or moved install
# still resolves.
file(RELATIVE_PATH ZEX_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" ZEX_PC_TO_PREFIX "${ZEX_PC_TO_PREFIX}")
# zex.pc is the C API (libzex.so: everything inside it, so a C program needs nothing else); zex-cpp.pc
# the C++ library. The static libzex.a is named by its path: `-lzex` finds libzex.so first.
set(ZEX_PC_NAME zex)
set(ZEX_PC_DESCRIPTION "${PROJECT_DESCRIPTION} (C API, <zex/zex.h>)")
set(ZEX_PC_LIBS "-L\${libdir} -lzex")
set(ZEX_PC_LIBS_PRIVATE "")
configure_file(${CMAKE_CURRENT_LIST_DIR}/zex.pc.in ${PROJECT_BINARY_DIR}/zex.pc @ONLY)
set(ZEX_PC_NAME zex-cpp)
set(ZEX_PC_DESCRIPTION "${PROJECT_DESCRIPTION} (C++ API, <zex/zex.hpp>)")
if(ZEX_STATIC_LIBRARY)
  # libzex.a needs SPIRV-Tools at every link; the order is the static link order.
  set(ZEX_PC_LIBS "\${libdir}/libzex.a -lSPIRV-Tools-link -lSPIRV-Tools-opt -lSPIRV-Tools -pthread")
  set(ZEX_PC_LIBS_PRIVATE "")
else()
  set(ZEX_PC_LIBS "-L\${libdir} -lzex_cpp")
  set(ZEX_PC_LIBS_PRIVATE "-lSPIRV-Tools-link -lSPIRV-Tools-opt -lSPIRV-Tools -pthread")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/zex.pc.in ${PROJECT_BINARY_DIR}/zex-cpp.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/zex.pc ${PROJECT_BINARY_DIR}/zex-cpp.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT zex_development)
