# Helpers of the cmake -P scripts that build and run consumer projects (tests/package,
# tests/subproject).

# zex_require_vars(<script> VAR...): every VAR must be given with -DVAR=.
function(zex_require_vars script)
  foreach(var IN LISTS ARGN)
    if(NOT DEFINED ${var})
      message(FATAL_ERROR "${script}: -D${var}= is required")
    endif()
  endforeach()
endfunction()

# zex_run(<what> <command...>): runs the command, prints its output, fails the script if it fails.
function(zex_run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${what}:\n${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
endfunction()
