# Runs a fuzzer (decoder_fuzz, cper_fuzz) for SECONDS on the committed seeds plus the build tree's corpus (cmake -P; see
# tests/fuzz/CMakeLists.txt). A crash, leak, timeout or invariant violation fails it; the input is
# left as WORK/crash-* (or leak-*, timeout-*).
foreach(v FUZZER WORK SEEDS SECONDS)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_fuzz.cmake: -D${v}= missing")
  endif()
endforeach()
file(MAKE_DIRECTORY ${WORK}/corpus)
execute_process(
  COMMAND ${FUZZER} -max_total_time=${SECONDS} -seed=1 -rss_limit_mb=2048 -timeout=10 -print_final_stats=1
          -artifact_prefix=${WORK}/ ${WORK}/corpus ${SEEDS}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${FUZZER} failed (exit ${rc}); reproduce with: ${FUZZER} ${WORK}/<crash file>")
endif()
