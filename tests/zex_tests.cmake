# The zex library's test suites: one file per public header, tests/<name>_test.cpp, in one binary.
# End-to-end suites reach zex-cpu through the system loader (zex_add_l0_test sets
# ZE_ENABLE_ALT_DRIVERS); decoder, exception and error suites need no device.

set(ZEX_TEST_KERNEL_SOURCE ${CMAKE_CURRENT_SOURCE_DIR}/kernels/zex_test_kernels.cl)
set(ZEX_TEST_KERNEL_SPV ${CMAKE_CURRENT_BINARY_DIR}/kernels/zex_test_kernels.spv)
file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/kernels)
zex_add_spirv(${ZEX_TEST_KERNEL_SPV}
  SOURCE ${ZEX_TEST_KERNEL_SOURCE}
  INCLUDES ${ZEX_DEVICE_INCLUDES}
  DEPENDS ${PROJECT_SOURCE_DIR}/device/include/zex/device.h ${PROJECT_SOURCE_DIR}/include/zex/abi.h)
# The same kernels as SPIR-V 1.0 (from the bitcode zex_add_spirv leaves next to its output): such a
# module must be linked with the device library built as SPIR-V 1.3.
set(ZEX_TEST_KERNEL_SPV_1_0 ${CMAKE_CURRENT_BINARY_DIR}/kernels/zex_test_kernels-1.0.spv)
add_custom_command(
  OUTPUT ${ZEX_TEST_KERNEL_SPV_1_0}
  COMMAND ${ZEX_LLVM_SPIRV} --spirv-max-version=1.0 ${ZEX_TEST_KERNEL_SPV}.bc -o ${ZEX_TEST_KERNEL_SPV_1_0}
  DEPENDS ${ZEX_TEST_KERNEL_SPV}
  COMMENT "zex test kernels as SPIR-V 1.0"
  VERBATIM)
# zex_throw_site called directly, in a module of its own (no numbered sites: an empty site table).
set(ZEX_TEST_SITE_KERNEL_SPV ${CMAKE_CURRENT_BINARY_DIR}/kernels/zex_site_kernels.spv)
zex_add_spirv(${ZEX_TEST_SITE_KERNEL_SPV}
  SOURCE ${CMAKE_CURRENT_SOURCE_DIR}/kernels/zex_site_kernels.cl
  INCLUDES ${ZEX_DEVICE_INCLUDES}
  DEPENDS ${PROJECT_SOURCE_DIR}/device/include/zex/device.h ${PROJECT_SOURCE_DIR}/include/zex/abi.h)
add_custom_target(zex_test_kernels DEPENDS ${ZEX_TEST_KERNEL_SPV} ${ZEX_TEST_KERNEL_SPV_1_0} ${ZEX_TEST_SITE_KERNEL_SPV})

add_executable(zex_tests
  error_test.cpp
  device_report_test.cpp
  exception_test.cpp
  decoder_test.cpp
  context_test.cpp
  module_test.cpp
  slab_test.cpp
  stream_test.cpp
  stream_limits_test.cpp
  tracing_test.cpp)
add_dependencies(zex_tests zex_test_kernels)
target_compile_definitions(zex_tests PRIVATE
  ZEX_TEST_KERNEL_SPV="${ZEX_TEST_KERNEL_SPV}"
  ZEX_TEST_KERNEL_SPV_1_0="${ZEX_TEST_KERNEL_SPV_1_0}"
  ZEX_TEST_SITE_KERNEL_SPV="${ZEX_TEST_SITE_KERNEL_SPV}"
  ZEX_TEST_KERNEL_SOURCE="${ZEX_TEST_KERNEL_SOURCE}")
target_link_libraries(zex_tests PRIVATE zex_internal GTest::gtest GTest::gtest_main Threads::Threads)
zex_target_warnings(zex_tests)
if(TARGET ze_zex_cpu)
  add_dependencies(zex_tests ze_zex_cpu)  # loaded at run time through the loader
endif()

# The whole suite; Tracing.*, ErrorFaults.* and NoDriver.* skip themselves here and run in their own entries below.
# On zex-cpu, streams take the list path (host synchronize, in-order lists); zex_tests_events runs the
# stream suites again on the event path, with zex-cpu's host synchronize switched off.
if(ZEX_CPU_DRIVER)
  zex_add_l0_test(zex_tests COMMAND zex_tests ENV ZEX_TEST_WAIT_PATH=list)
  zex_add_l0_test(zex_tests_events COMMAND zex_tests --gtest_filter=Stream.*:StreamStress.*:StreamMoves.*:SlabPool.*:UniqueSlot.*
                  ENV ZEX_CPU_NO_HOST_SYNCHRONIZE=1 ZEX_TEST_WAIT_PATH=events)
  zex_add_l0_test(zex_tests_tracing_events COMMAND zex_tests --gtest_filter=Tracing.*
                  ENV ZE_ENABLE_TRACING_LAYER=1 ZEX_CPU_NO_HOST_SYNCHRONIZE=1)
else()
  zex_add_l0_test(zex_tests COMMAND zex_tests)
endif()
# Again under the loader's validation layer: zex must make only valid Level Zero calls.
zex_add_l0_test(zex_tests_validation COMMAND zex_tests --gtest_filter=-Tracing.*:NoDriver.*:ErrorFaults.*
                ENV ${ZEX_VALIDATION_ENV})
# The tracing layer must be on at zeInit, so the counting tests get a process of their own.
zex_add_l0_test(zex_tests_tracing COMMAND zex_tests --gtest_filter=Tracing.* ENV ZE_ENABLE_TRACING_LAYER=1)
# Failing Level Zero calls, injected by zex-cpu (so only with the CPU driver).
if(ZEX_CPU_DRIVER)
  zex_add_l0_test(zex_tests_faults COMMAND zex_tests --gtest_filter=ErrorFaults.*
                  ENV ZEX_TEST_FAULTS=1
                      "ZEX_CPU_FAIL=zeMemAllocDevice:1:ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY,zeModuleCreate:1:ZE_RESULT_ERROR_MODULE_BUILD_FAILURE,zeCommandListAppendLaunchKernel:1:ZE_RESULT_ERROR_DEVICE_LOST")
  # One failing call each, in a process of its own: ZEX_TEST_FAULT picks the test that expects it.
  foreach(fault IN ITEMS
      "slab_fill|SlabFaults.*|zeCommandListAppendBarrier:1:ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY"
      "reset|StreamFaults.*|zeCommandListAppendMemoryFill:2:ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY")
    string(REPLACE "|" ";" parts "${fault}")
    list(GET parts 0 name)
    list(GET parts 1 filter)
    list(GET parts 2 rule)
    zex_add_l0_test(zex_tests_fault_${name} COMMAND zex_tests --gtest_filter=${filter}
                    ENV ZEX_TEST_FAULT=${name} ZEX_CPU_FAIL=${rule})
  endforeach()
endif()
# A suite that needs a process of its own (zex-cpu configured by its environment at zeInit): one binary
# per source, linked like zex_tests, its CTest entries added by the caller.
function(zex_add_process_suite name source)
  add_executable(${name} ${source})
  add_dependencies(${name} zex_test_kernels ze_zex_cpu)
  target_compile_definitions(${name} PRIVATE
    ZEX_TEST_KERNEL_SPV="${ZEX_TEST_KERNEL_SPV}"
    ZEX_TEST_KERNEL_SOURCE="${ZEX_TEST_KERNEL_SOURCE}"
    ZEX_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  target_link_libraries(${name} PRIVATE zex_internal GTest::gtest GTest::gtest_main Threads::Threads)
  zex_target_warnings(${name})
endfunction()

# The fault-injection sweep (docs/reliability.md): every Level Zero call zex makes fails at its 1st,
# 2nd and 3rd call, one child process per rule; zex-cpu only (ZEX_CPU_FAIL). Its own binary, so that
# the children it re-executes load no other suite, and the full zex_tests runs never start it.
if(ZEX_CPU_DRIVER)
  zex_add_process_suite(zex_fault_sweep fault_sweep_test.cpp)
  # In two shards each (ZEX_SWEEP_SHARD), so that CTest spreads the ~600 children over the cores and no
  # entry comes near its timeout: zex_fault_sweep (rules 0, 2, 4, ...) and zex_fault_sweep_2 (1, 3, ...).
  foreach(shard IN ITEMS 0 1)
    set(sfx "")
    if(shard)
      set(sfx "_2")
    endif()
    zex_add_l0_test(zex_fault_sweep${sfx} COMMAND zex_fault_sweep
                    ENV ZEX_TEST_SWEEP=1 ZEX_SWEEP_SHARD=${shard}/2
                        ZEX_SWEEP_REPORT=${CMAKE_CURRENT_BINARY_DIR}/fault_sweep${sfx}.md)
    # The same on the event path (zex-cpu's host synchronize switched off): the streams' event pools,
    # events, waits, resets and polls are then the calls that fail.
    zex_add_l0_test(zex_fault_sweep_events${sfx} COMMAND zex_fault_sweep
                    ENV ZEX_TEST_SWEEP=1 ZEX_CPU_NO_HOST_SYNCHRONIZE=1 ZEX_SWEEP_SHARD=${shard}/2
                        ZEX_SWEEP_REPORT=${CMAKE_CURRENT_BINARY_DIR}/fault_sweep_events${sfx}.md)
  endforeach()
endif()
# A lost device (ZEX_CPU_LOSE_DEVICE; docs/integration.md "When the device is lost"): the loss lasts
# for the process, so each mode is a process of its own; zex-cpu only. Again under the validation layer.
if(ZEX_CPU_DRIVER)
  zex_add_process_suite(zex_device_lost_tests device_lost_test.cpp)
  foreach(m IN ITEMS "full|" "no-info-log|ZEX_CPU_NO_INFO_LOG=1" "no-sysman|ZEX_SYSMAN=0" "adopted|" "off|ZEX_DEVICE_REPORT=0")
    string(REPLACE "|" ";" parts "${m}")
    list(GET parts 0 name)
    list(GET parts 1 extra)
    zex_add_l0_test(zex_device_lost_${name} COMMAND zex_device_lost_tests
                    ENV ZEX_TEST_DEVICE_LOST=${name} ZEX_CPU_LOSE_DEVICE=2 ${extra})
  endforeach()
  zex_add_l0_test(zex_device_lost_threads COMMAND zex_device_lost_tests
                  ENV ZEX_TEST_DEVICE_LOST=threads ZEX_CPU_LOSE_DEVICE=2)
  set_tests_properties(zex_device_lost_threads PROPERTIES LABELS threads)
  zex_add_l0_test(zex_device_lost_injected COMMAND zex_device_lost_tests
                  ENV ZEX_TEST_DEVICE_LOST=injected ZEX_CPU_FAIL_LOSES_DEVICE=1
                      ZEX_CPU_FAIL=zeCommandListHostSynchronize:2:ZE_RESULT_ERROR_DEVICE_LOST)
  zex_add_l0_test(zex_device_lost_faults COMMAND zex_device_lost_tests
                  ENV ZEX_TEST_DEVICE_LOST=faults ZEX_CPU_LOSE_DEVICE=2
                      "ZEX_CPU_FAIL=zeDeviceGetStatus:1:ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY,zesDeviceGetState:1:ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY,zesRasGetState:3:ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY,zesInfoLogInstanceReadWithMetadataExt:1:ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY")
  zex_add_l0_test(zex_device_lost_validation COMMAND zex_device_lost_tests
                  ENV ZEX_TEST_DEVICE_LOST=full ZEX_CPU_LOSE_DEVICE=2 ${ZEX_VALIDATION_ENV})
endif()
# Several devices (issue 10): zex-cpu as two devices of two sub-devices each, a process of its own (the
# topology is read at zeInit), also under the validation layer.
if(ZEX_CPU_DRIVER)
  zex_add_process_suite(zex_multi_device_tests multi_device_test.cpp)
  zex_add_l0_test(zex_multi_device COMMAND zex_multi_device_tests ENV ZEX_CPU_DEVICES=2 ZEX_CPU_SUBDEVICES=2)
  zex_add_l0_test(zex_multi_device_validation COMMAND zex_multi_device_tests
                  ENV ZEX_CPU_DEVICES=2 ZEX_CPU_SUBDEVICES=2 ZEX_CPU_DEVICE_TYPE=gpu ${ZEX_VALIDATION_ENV})
  # The demo on device 1 of 2 (examples/demo.cpp --device): the throw is caught and names that device.
  if(TARGET zex_demo)
    zex_add_l0_test(zex_demo_device_1_of_2 COMMAND zex_demo --device 1 ${CMAKE_BINARY_DIR}/examples/vadd.spv
                    ENV ZEX_CPU_DEVICES=2)
    set_tests_properties(zex_demo_device_1_of_2 PROPERTIES PASS_REGULAR_EXPRESSION
      "caught: KernelException: A BoundsError was thrown in kernel 'vadd'[^\n]* on zex-cpu 1 ")
  endif()
endif()
# ZEX_SANITIZE=thread (make test-tsan, ctest -L threads): the suites that run zex from several threads.
if(ZEX_SANITIZE_MODE STREQUAL "thread")
  zex_add_l0_test(zex_tests_threads COMMAND zex_tests
    --gtest_filter=*Thread*:*Concurren*:StreamStress.*:Stream.ManyLaunchesQueuedBehindTheCallersOwnEventDoNotDeadlock)
  set_tests_properties(zex_tests_threads PROPERTIES LABELS threads)
  if(ZEX_CPU_DRIVER)  # six devices' threads throwing at once
    zex_add_l0_test(zex_multi_device_threads COMMAND zex_multi_device_tests ENV ZEX_CPU_DEVICES=2 ZEX_CPU_SUBDEVICES=2)
    set_tests_properties(zex_multi_device_threads PROPERTIES LABELS threads)
  endif()
endif()
# No driver at all: the loader is pointed at a file that does not exist.
add_test(NAME zex_tests_no_driver COMMAND zex_tests --gtest_filter=NoDriver.*)
set_tests_properties(zex_tests_no_driver PROPERTIES
  ENVIRONMENT "ZE_ENABLE_ALT_DRIVERS=${CMAKE_CURRENT_BINARY_DIR}/no-such-driver/libze_none.so;ZEX_TEST_NO_DRIVER=1"
  TIMEOUT 120)
