# The test kernels, one folder per suite (tests/kernels/<suite>/, third-party ones with their origin and
# licence in tests/corpus/). Included from tests/CMakeLists.txt before any suite, so every suite sees
# ZEX_TEST_KERNELS and the runtime kernels every end-to-end suite shares (the C API, Python, the
# package, the passes' end-to-end tests): ZEX_TEST_KERNEL_SOURCE, ZEX_TEST_KERNEL_SPV (and its SPIR-V 1.0
# build, ZEX_TEST_KERNEL_SPV_1_0), ZEX_TEST_SITE_KERNEL_SPV, target zex_test_kernels.
set(ZEX_TEST_KERNELS ${CMAKE_CURRENT_LIST_DIR})

set(ZEX_TEST_KERNEL_SOURCE ${ZEX_TEST_KERNELS}/runtime/zex_test_kernels.cl)
set(ZEX_TEST_KERNEL_SPV ${CMAKE_BINARY_DIR}/tests/kernels/zex_test_kernels.spv)
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/tests/kernels)
zex_add_spirv(${ZEX_TEST_KERNEL_SPV}
  SOURCE ${ZEX_TEST_KERNEL_SOURCE}
  INCLUDES ${ZEX_DEVICE_INCLUDES}
  DEPENDS ${PROJECT_SOURCE_DIR}/device/include/zex/device.h ${PROJECT_SOURCE_DIR}/include/zex/abi.h)
# The same kernels as SPIR-V 1.0 (from the bitcode zex_add_spirv leaves next to its output): such a
# module must be linked with the device library built as SPIR-V 1.3.
set(ZEX_TEST_KERNEL_SPV_1_0 ${CMAKE_BINARY_DIR}/tests/kernels/zex_test_kernels-1.0.spv)
add_custom_command(
  OUTPUT ${ZEX_TEST_KERNEL_SPV_1_0}
  COMMAND ${ZEX_LLVM_SPIRV} --spirv-max-version=1.0 ${ZEX_TEST_KERNEL_SPV}.bc -o ${ZEX_TEST_KERNEL_SPV_1_0}
  DEPENDS ${ZEX_TEST_KERNEL_SPV}
  COMMENT "zex test kernels as SPIR-V 1.0"
  VERBATIM)
# zex_throw_site called directly, in a module of its own (no numbered sites: an empty site table).
set(ZEX_TEST_SITE_KERNEL_SPV ${CMAKE_BINARY_DIR}/tests/kernels/zex_site_kernels.spv)
zex_add_spirv(${ZEX_TEST_SITE_KERNEL_SPV}
  SOURCE ${ZEX_TEST_KERNELS}/runtime/zex_site_kernels.cl
  INCLUDES ${ZEX_DEVICE_INCLUDES}
  DEPENDS ${PROJECT_SOURCE_DIR}/device/include/zex/device.h ${PROJECT_SOURCE_DIR}/include/zex/abi.h)
add_custom_target(zex_test_kernels DEPENDS ${ZEX_TEST_KERNEL_SPV} ${ZEX_TEST_KERNEL_SPV_1_0} ${ZEX_TEST_SITE_KERNEL_SPV})
