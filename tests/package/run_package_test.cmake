# ctest -R package_test / package_e2e_test (registered in tests/device_tests.cmake).
#
# MODE=build (package_test): stage `cmake --install` of the zex build into STAGE, configure and build
#   the consumer project (tests/package) with find_package(zex) against it and nothing else, run its
#   driver-free checks, and build the consumer once more with the flags of `pkg-config zex`.
# MODE=e2e (package_e2e_test, after package_test): run the consumer end to end on the installed
#   zex-cpu, with the kernels in KERNELS, and the C API's test (tests/c_api/c_api_test.c, built both ways) on
#   the test kernels the consumer compiled with the installed zex_add_spirv().
include(${CMAKE_CURRENT_LIST_DIR}/../run_steps.cmake)
zex_require_vars(run_package_test.cmake MODE ZEX_BUILD_DIR STAGE CONSUMER_SOURCE CONSUMER_BUILD C_API_TEST
                 TEST_KERNELS_CL PUBLIC_HEADERS)
# The C API test's files, beside C_API_TEST (its main file).
get_filename_component(c_api_test_dir ${C_API_TEST} DIRECTORY)
include(${c_api_test_dir}/sources.cmake)

if(MODE STREQUAL "build")
  file(REMOVE_RECURSE ${STAGE} ${CONSUMER_BUILD})
  set(config_args)
  if(ZEX_CONFIG)
    set(config_args --config ${ZEX_CONFIG})
  endif()
  zex_run("cmake --install" ${CMAKE_COMMAND} --install ${ZEX_BUILD_DIR} --prefix ${STAGE} ${config_args})

  # The installed include tree is the API and nothing else (ZEX_PUBLIC_HEADERS): no private header of
  # the runtime, the SPIR-V layer or common/ reaches a user.
  file(GLOB_RECURSE installed_headers RELATIVE ${STAGE}/include ${STAGE}/include/*)
  list(SORT installed_headers)
  string(REPLACE "," ";" expected_headers "${PUBLIC_HEADERS}")
  list(SORT expected_headers)
  if(NOT installed_headers STREQUAL expected_headers)
    message(FATAL_ERROR "the installed include tree is not the public header list:\n"
                        "  installed: ${installed_headers}\n  expected:  ${expected_headers}\n"
                        "Add a new public header to ZEX_PUBLIC_HEADERS (CMakeLists.txt); keep private ones in src/.")
  endif()

  # Only the stage: no user or system package registry, no zex_DIR from a cache. SANITIZE_FLAGS (a
  # ZEX_SANITIZE build): the installed libzex is sanitized and static, so the consumer needs the
  # sanitizer's runtime too, and its process later loads the sanitized zex-cpu.
  zex_run("configure the consumer" ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE} -B ${CONSUMER_BUILD}
      -G "${GENERATOR}" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS=${SANITIZE_FLAGS}"
      "-DCMAKE_C_FLAGS=${SANITIZE_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${SANITIZE_FLAGS}"
      -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_C_COMPILER=${C_COMPILER}
      -DCMAKE_PREFIX_PATH=${STAGE} -DZEX_STAGE=${STAGE}
      -DZEX_C_API_TEST=${C_API_TEST} -DZEX_TEST_KERNELS_CL=${TEST_KERNELS_CL}
      -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF)
  zex_run("build the consumer" ${CMAKE_COMMAND} --build ${CONSUMER_BUILD})
  zex_run("consumer abi" ${CONSUMER_BUILD}/consumer abi)
  zex_run("consumer_c" ${CONSUMER_BUILD}/consumer_c)

  # zex-cpp.pc: the same program compiled and linked with nothing but pkg-config's flags; zex.pc: the
  # C API's test program likewise (run by MODE=e2e).
  find_program(PKG_CONFIG pkg-config)
  if(PKG_CONFIG)
    file(GLOB_RECURSE pc_files ${STAGE}/*/zex.pc)
    list(LENGTH pc_files n)
    if(NOT n EQUAL 1)
      message(FATAL_ERROR "expected one installed zex.pc, found: ${pc_files}")
    endif()
    get_filename_component(pc_dir ${pc_files} DIRECTORY)
    set(ENV{PKG_CONFIG_PATH} ${pc_dir})
    execute_process(COMMAND ${PKG_CONFIG} --cflags --libs zex RESULT_VARIABLE rc OUTPUT_VARIABLE c_flags
                    ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "pkg-config zex failed: ${err}")
    endif()
    # The stage is no system directory: the program finds libzex.so.1 through its RPATH.
    execute_process(COMMAND ${PKG_CONFIG} --variable=libdir zex OUTPUT_VARIABLE c_libdir
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    separate_arguments(c_flag_list UNIX_COMMAND "${c_flags} ${SANITIZE_FLAGS} -Wl,-rpath,${c_libdir}")
    zex_run("cc with pkg-config zex (${c_flags} ${SANITIZE_FLAGS})" ${C_COMPILER} -std=c99 -Wall -Wextra -pedantic
        -Werror ${ZEX_C_API_TEST_SOURCES} ${c_flag_list} -lpthread -o ${CONSUMER_BUILD}/c_api_test_pkgconfig)
    execute_process(COMMAND ${PKG_CONFIG} --cflags --libs zex-cpp RESULT_VARIABLE rc OUTPUT_VARIABLE flags
                    ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "pkg-config zex-cpp failed: ${err}")
    endif()
    execute_process(COMMAND ${PKG_CONFIG} --variable=devicelibrary zex-cpp OUTPUT_VARIABLE spv
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT EXISTS "${spv}")
      message(FATAL_ERROR "pkg-config zex: devicelibrary '${spv}' does not exist")
    endif()
    separate_arguments(flag_list UNIX_COMMAND "${flags} ${SANITIZE_FLAGS}")
    zex_run("c++ with pkg-config zex-cpp (${flags} ${SANITIZE_FLAGS})" ${CXX_COMPILER} -std=c++17
        "-DZEX_CONSUMER_DEVICE_SPV=\"${spv}\"" ${CONSUMER_SOURCE}/consumer.cpp ${flag_list}
        -o ${CONSUMER_BUILD}/consumer_pkgconfig)
    zex_run("consumer_pkgconfig abi" ${CONSUMER_BUILD}/consumer_pkgconfig abi)
  else()
    message(STATUS "pkg-config not found: zex.pc not checked")
  endif()
elseif(MODE STREQUAL "e2e")
  file(GLOB_RECURSE drivers ${STAGE}/*/libze_zex_cpu.so)
  list(LENGTH drivers n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "expected one installed zex-cpu (libze_zex_cpu.so) in ${STAGE}, found: ${drivers}")
  endif()
  set(ENV{ZE_ENABLE_ALT_DRIVERS} ${drivers})
  zex_run("consumer run (ZE_ENABLE_ALT_DRIVERS=${drivers})" ${CONSUMER_BUILD}/consumer run ${KERNELS})
  # The C API, on kernels compiled by the installed zex_add_spirv(): built with find_package(zex), and
  # with `pkg-config --cflags --libs zex` (when pkg-config was there for MODE=build).
  set(c_kernels ${CONSUMER_BUILD}/zex_test_kernels.spv)
  zex_run("consumer_c_api" ${CONSUMER_BUILD}/consumer_c_api ${c_kernels} ${TEST_KERNELS_CL})
  if(EXISTS ${CONSUMER_BUILD}/c_api_test_pkgconfig)
    zex_run("c_api_test_pkgconfig" ${CONSUMER_BUILD}/c_api_test_pkgconfig ${c_kernels} ${TEST_KERNELS_CL})
  endif()
else()
  message(FATAL_ERROR "MODE must be build or e2e")
endif()
