# zex_target_warnings(target): our code builds clean with -Wall -Wextra; ZEX_WERROR makes that a rule.
option(ZEX_WERROR "Treat warnings in zex's own code as errors" OFF)
function(zex_target_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wno-unused-parameter)
  if(ZEX_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
