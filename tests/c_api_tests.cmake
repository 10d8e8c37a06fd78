# The C API (<zex/zex.h>, libzex.so): tests/c_api_test.c compiled as C99, end to end on zex-cpu, and
# the export list of libzex.so. Included from tests/CMakeLists.txt after zex_tests.cmake (it uses the
# test kernels built there).

# C99 and warning-free under -pedantic: the header must be usable from the strictest C a runtime uses.
add_executable(c_api_test c_api_test.c)
set_source_files_properties(c_api_test.c PROPERTIES LANGUAGE C)
set_target_properties(c_api_test PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
target_compile_options(c_api_test PRIVATE -Wall -Wextra -pedantic -Werror)
target_link_libraries(c_api_test PRIVATE zex::zex_c Threads::Threads)
add_dependencies(c_api_test zex_test_kernels)
if(TARGET ze_zex_cpu)
  add_dependencies(c_api_test ze_zex_cpu)
endif()
zex_add_test(c_api_test COMMAND c_api_test ${ZEX_TEST_KERNEL_SPV} ${ZEX_TEST_KERNEL_SOURCE})
# Again under the loader's validation layer: the C API makes only valid Level Zero calls too.
zex_add_test(c_api_test_validation COMMAND c_api_test ${ZEX_TEST_KERNEL_SPV} ${ZEX_TEST_KERNEL_SOURCE}
                ENV ${ZEX_VALIDATION_ENV})
if(ZEX_CPU_DRIVER)
  # A lost device (ZEX_CPU_LOSE_DEVICE=2): the wait's error comes with the device report.
  add_executable(c_api_device_lost c_api_device_lost.c)
  set_source_files_properties(c_api_device_lost.c PROPERTIES LANGUAGE C)
  set_target_properties(c_api_device_lost PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
  target_compile_options(c_api_device_lost PRIVATE -Wall -Wextra -pedantic -Werror)
  target_link_libraries(c_api_device_lost PRIVATE zex::zex_c)
  add_dependencies(c_api_device_lost zex_test_kernels ze_zex_cpu)
  zex_add_test(c_api_device_lost COMMAND c_api_device_lost ${ZEX_TEST_KERNEL_SPV} ENV ZEX_CPU_LOSE_DEVICE=2)
  # fork() after a launch: a child's calls fail at once naming the fork, its destroys and exit return.
  add_executable(c_api_fork c_api_fork.c)
  set_source_files_properties(c_api_fork.c PROPERTIES LANGUAGE C)
  set_target_properties(c_api_fork PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
  target_compile_options(c_api_fork PRIVATE -Wall -Wextra -pedantic -Werror)
  target_link_libraries(c_api_fork PRIVATE zex::zex_c)
  add_dependencies(c_api_fork zex_test_kernels ze_zex_cpu)
  zex_add_test(c_api_fork COMMAND c_api_fork ${ZEX_TEST_KERNEL_SPV})
  # Two devices of two tiles each: the sub-device functions, and a throw caught on a tile's stream.
  zex_add_test(c_api_test_2x2 COMMAND c_api_test ${ZEX_TEST_KERNEL_SPV} ${ZEX_TEST_KERNEL_SOURCE}
                  ENV ZEX_CPU_DEVICES=2 ZEX_CPU_SUBDEVICES=2)
  # The event path (zex-cpu's host synchronize off), where synchronize_for waits on an event.
  zex_add_test(c_api_test_events COMMAND c_api_test ${ZEX_TEST_KERNEL_SPV} ${ZEX_TEST_KERNEL_SOURCE}
                  ENV ZEX_CPU_NO_HOST_SYNCHRONIZE=1)
endif()

# libzex.so exports zex_* and nothing else, and carries its SONAME (as SPIRV-Tools checks its own
# exports): a leaked C++ or SPIRV-Tools symbol would interpose on the same symbol of another library in
# the process.
find_program(ZEX_NM NAMES nm REQUIRED)
find_program(ZEX_READELF NAMES readelf REQUIRED)
zex_add_test(c_api_exports NO_DRIVER
  COMMAND ${CMAKE_COMMAND} -DLIB=$<TARGET_FILE:zex_c> -DNM=${ZEX_NM} -DREADELF=${ZEX_READELF}
          -DSONAME=libzex.so.${ZEX_C_API_VERSION} -DHEADER=${PROJECT_SOURCE_DIR}/include/zex/zex.h
          -DMAP=${PROJECT_SOURCE_DIR}/src/c_api/zex_c.map
          -P ${CMAKE_CURRENT_SOURCE_DIR}/c_api_exports.cmake)
