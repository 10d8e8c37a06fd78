# ctest -R subproject_test: configure, build and run tests/subproject (add_subdirectory(zex)) in BUILD,
# with zex's subproject defaults. The run needs a Level Zero driver in the environment (CTest gives
# zex-cpu) and the test kernels in KERNELS.
include(${CMAKE_CURRENT_LIST_DIR}/../run_steps.cmake)
zex_require_vars(run_subproject_test.cmake ZEX_SOURCE_DIR BUILD KERNELS GENERATOR CXX_COMPILER C_COMPILER)

file(REMOVE_RECURSE ${BUILD})
# SANITIZE_FLAGS (a ZEX_SANITIZE build): the consumer is built with the same sanitizer, since the
# process loads the sanitized zex-cpu, whose runtime must be in the program from the start.
zex_run("configure" ${CMAKE_COMMAND} -S ${ZEX_SOURCE_DIR}/tests/subproject -B ${BUILD} -G ${GENERATOR}
    -DZEX_SOURCE_DIR=${ZEX_SOURCE_DIR} -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_C_COMPILER=${C_COMPILER}
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS=${SANITIZE_FLAGS}" "-DCMAKE_C_FLAGS=${SANITIZE_FLAGS}"
    "-DCMAKE_EXE_LINKER_FLAGS=${SANITIZE_FLAGS}")
zex_run("build" ${CMAKE_COMMAND} --build ${BUILD} -j 2)
zex_run("run" ${BUILD}/subproject_consumer ${KERNELS})
