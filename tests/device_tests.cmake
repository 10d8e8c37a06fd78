# ABI, device library and packaging tests (owner: device library). Included from tests/CMakeLists.txt.
# None of them needs a Level Zero driver: they check headers, SPIR-V and the installed package.

# --- abi_test: the layout of include/zex/abi.h, pinned in C++ and in C ---------------------------------
add_executable(abi_test device/abi_test.cpp device/abi_test_c.c)
target_include_directories(abi_test PRIVATE ${PROJECT_SOURCE_DIR}/include)
set_target_properties(abi_test PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
target_link_libraries(abi_test PRIVATE GTest::gtest_main)
zex_target_warnings(abi_test)
zex_add_test(abi_test NO_DRIVER COMMAND abi_test)

# --- device_test: zex_device.spv and <zex/device.h> on the SPIR-V itself ------------------------------
find_package(SPIRV-Tools-opt CONFIG REQUIRED)
find_package(SPIRV-Tools-link CONFIG REQUIRED)

set(ZEX_TEST_USER_SPV ${CMAKE_CURRENT_BINARY_DIR}/device/user_kernels.spv)
file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/device)
zex_add_spirv(${ZEX_TEST_USER_SPV}
  SOURCE ${ZEX_TEST_KERNELS}/device/user_kernels.cl
  INCLUDES ${ZEX_DEVICE_INCLUDES}
  DEPENDS ${PROJECT_SOURCE_DIR}/include/zex/abi.h ${PROJECT_SOURCE_DIR}/device/include/zex/device.h)
add_custom_target(zex_device_test_kernels DEPENDS ${ZEX_TEST_USER_SPV})

add_executable(device_test device/device_test.cpp)
add_dependencies(device_test zex_device_spv zex_device_test_kernels)
target_include_directories(device_test PRIVATE ${PROJECT_SOURCE_DIR}/include)
target_compile_definitions(device_test PRIVATE
  ZEX_TEST_DEVICE_SPV="${ZEX_DEVICE_SPV}"
  ZEX_TEST_DEVICE_SPV_1_3="${ZEX_DEVICE_SPV_1_3}"
  ZEX_TEST_COMPILER_STYLE_ASM="${ZEX_TEST_KERNELS}/device/compiler_style.spvasm"
  ZEX_TEST_USER_SPV="${ZEX_TEST_USER_SPV}"
  ZEX_TEST_USER_SOURCE="${ZEX_TEST_KERNELS}/device/user_kernels.cl")
target_link_libraries(device_test PRIVATE zex_internal SPIRV-Tools-link SPIRV-Tools-opt GTest::gtest_main)
zex_target_warnings(device_test)
zex_add_test(device_test NO_DRIVER COMMAND device_test)

# The same promise through the command-line tools a compiler writer would use (docs/abi.md).
zex_add_test(device_spirv_link_cli NO_DRIVER
  COMMAND ${CMAKE_COMMAND}
    -DSPIRV_LINK=${ZEX_SPIRV_LINK} -DSPIRV_VAL=${ZEX_SPIRV_VAL}
    -DUSER=${ZEX_TEST_USER_SPV} -DLIB=${ZEX_DEVICE_SPV} -DOUT=${CMAKE_CURRENT_BINARY_DIR}/device/linked.spv
    -P ${CMAKE_CURRENT_SOURCE_DIR}/device/link_cli.cmake)

# --- package_test: find_package(zex) against a staged `cmake --install` ------------------------------
# Needs everything built first (ctest after a full build, as `make test` does).
if(ZEX_INSTALL)
  list(JOIN ZEX_PUBLIC_HEADERS "," zex_public_headers)
  string(APPEND zex_public_headers ",zex/device.h")
  set(ZEX_PACKAGE_ARGS
    -DZEX_BUILD_DIR=${CMAKE_BINARY_DIR}
    -DZEX_CONFIG=$<CONFIG>
    -DSTAGE=${CMAKE_CURRENT_BINARY_DIR}/package/stage
    -DCONSUMER_SOURCE=${CMAKE_CURRENT_SOURCE_DIR}/package
    -DCONSUMER_BUILD=${CMAKE_CURRENT_BINARY_DIR}/package/consumer
    -DGENERATOR=${CMAKE_GENERATOR}
    -DCXX_COMPILER=${CMAKE_CXX_COMPILER}
    -DC_COMPILER=${CMAKE_C_COMPILER}
    -DKERNELS=${ZEX_TEST_USER_SPV}
    -DC_API_TEST=${CMAKE_CURRENT_SOURCE_DIR}/c_api/c_api_test.c
    -DTEST_KERNELS_CL=${ZEX_TEST_KERNEL_SOURCE}
    "-DSANITIZE_FLAGS=${ZEX_SANITIZE_FLAGS}"   # the consumer is built with zex's sanitizers, if any
    "-DPUBLIC_HEADERS=${zex_public_headers}")   # the installed include tree, exactly (comma-separated)
  zex_add_test(package_test NO_DRIVER
    COMMAND ${CMAKE_COMMAND} -DMODE=build ${ZEX_PACKAGE_ARGS}
            -P ${CMAKE_CURRENT_SOURCE_DIR}/package/run_package_test.cmake)
  set_tests_properties(package_test PROPERTIES TIMEOUT 600 FIXTURES_SETUP zex_package)
  if(TARGET ze_zex_cpu)
    # End to end through the installed libzex and the installed zex-cpu.
    zex_add_test(package_e2e_test NO_DRIVER
      COMMAND ${CMAKE_COMMAND} -DMODE=e2e ${ZEX_PACKAGE_ARGS}
              -P ${CMAKE_CURRENT_SOURCE_DIR}/package/run_package_test.cmake)
    set_tests_properties(package_e2e_test PROPERTIES TIMEOUT 600 FIXTURES_REQUIRED zex_package
                         ENVIRONMENT "POCL_CACHE_DIR=${CMAKE_BINARY_DIR}/pocl-cache")
  endif()
endif()

# --- device_igc_check: the library through Intel's compiler (ocloc, no GPU needed) --------------------
find_program(ZEX_SPIRV_OPT NAMES spirv-opt)
if(ZEX_SPIRV_OPT)
  foreach(device dg2 pvc)
    zex_add_test(device_igc_check_${device} NO_DRIVER
      COMMAND ${CMAKE_COMMAND}
        -DSPIRV_LINK=${ZEX_SPIRV_LINK} -DSPIRV_OPT=${ZEX_SPIRV_OPT} -DDEVICE=${device}
        -DUSER=${ZEX_TEST_USER_SPV} -DLIB=${ZEX_DEVICE_SPV} -DWORK=${CMAKE_CURRENT_BINARY_DIR}/device/igc_${device}
        -P ${CMAKE_CURRENT_SOURCE_DIR}/device/igc_check.cmake)
    set_tests_properties(device_igc_check_${device} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
  endforeach()
endif()

# --- device_prebuilt: device/prebuilt/ (what a subproject links) is the library built from source ------
if(ZEX_DEVICE_FROM_SOURCE)
  foreach(spv IN ITEMS zex_device.spv zex_device-1.3.spv zex_graph.spv)
    zex_add_test(device_prebuilt_${spv} NO_DRIVER
      COMMAND ${CMAKE_COMMAND} -E compare_files ${ZEX_DEVICE_PREBUILT_DIR}/${spv} ${PROJECT_BINARY_DIR}/device/${spv})
    set_tests_properties(device_prebuilt_${spv} PROPERTIES
      FAIL_REGULAR_EXPRESSION "."  # compare_files prints nothing when equal
      REQUIRED_FILES ${PROJECT_BINARY_DIR}/device/${spv})
  endforeach()
endif()
