# ctest -R subproject_test: configure, build and run tests/subproject (add_subdirectory(zex)) in BUILD,
# with zex's subproject defaults. The run needs a Level Zero driver in the environment (CTest gives
# zex-cpu) and the test kernels in KERNELS.
foreach(var ZEX_SOURCE_DIR BUILD KERNELS GENERATOR CXX_COMPILER C_COMPILER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_subproject_test.cmake: -D${var}= is required")
  endif()
endforeach()

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${what}:\n${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
endfunction()

file(REMOVE_RECURSE ${BUILD})
run("configure" ${CMAKE_COMMAND} -S ${ZEX_SOURCE_DIR}/tests/subproject -B ${BUILD} -G ${GENERATOR}
    -DZEX_SOURCE_DIR=${ZEX_SOURCE_DIR} -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_C_COMPILER=${C_COMPILER}
    -DCMAKE_BUILD_TYPE=Release)
run("build" ${CMAKE_COMMAND} --build ${BUILD} -j 2)
run("run" ${BUILD}/subproject_consumer ${KERNELS})
