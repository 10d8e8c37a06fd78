# ctest -R subproject_test: configure, build and run tests/subproject (add_subdirectory(zex)) in BUILD,
# with zex's subproject defaults. The run needs a Level Zero driver in the environment (CTest gives
# zex-cpu) and the test kernels in KERNELS.
include(${CMAKE_CURRENT_LIST_DIR}/../run_steps.cmake)
zex_require_vars(run_subproject_test.cmake ZEX_SOURCE_DIR BUILD KERNELS GENERATOR CXX_COMPILER C_COMPILER)

file(REMOVE_RECURSE ${BUILD})
zex_run("configure" ${CMAKE_COMMAND} -S ${ZEX_SOURCE_DIR}/tests/subproject -B ${BUILD} -G ${GENERATOR}
    -DZEX_SOURCE_DIR=${ZEX_SOURCE_DIR} -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_C_COMPILER=${C_COMPILER}
    -DCMAKE_BUILD_TYPE=Release)
zex_run("build" ${CMAKE_COMMAND} --build ${BUILD} -j 2)
zex_run("run" ${BUILD}/subproject_consumer ${KERNELS})
