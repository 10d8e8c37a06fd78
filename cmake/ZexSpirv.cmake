# zex_add_spirv(<out.spv> SOURCE <file.cl> [INCLUDES dir...] [DEFINES X=1...] [DEPENDS file...]
#               [FLAGS flag...] [DEBUG])
# Compiles OpenCL C to SPIR-V with clang-15 + llvm-spirv-15. clang-15 must run as cc1 with typed pointers,
# or llvm-spirv-15 rejects its bitcode. DEBUG: with debug information, as clang -g writes it
# (OpenCL.DebugInfo.100 and OpLine in the SPIR-V).
#
# The tools are looked up only when something is compiled (zex_require_spirv_toolchain()): a runtime
# that adds zex with add_subdirectory() gets the prebuilt device library and needs none of them.
macro(zex_require_spirv_toolchain)
  find_program(ZEX_CLANG NAMES clang-15 REQUIRED)
  find_program(ZEX_LLVM_SPIRV NAMES llvm-spirv-15 REQUIRED)
  find_program(ZEX_SPIRV_VAL NAMES spirv-val REQUIRED)
  find_program(ZEX_SPIRV_LINK NAMES spirv-link REQUIRED)
endmacro()

# Only the compiler and the translator: what zex_add_spirv() runs (an installed package's user needs no
# spirv-val or spirv-link).
macro(zex_require_spirv_compiler)
  find_program(ZEX_CLANG NAMES clang-15 REQUIRED)
  find_program(ZEX_LLVM_SPIRV NAMES llvm-spirv-15 REQUIRED)
endmacro()

function(zex_add_spirv out)
  zex_require_spirv_compiler()
  cmake_parse_arguments(A "DEBUG" "SOURCE" "INCLUDES;DEFINES;DEPENDS;FLAGS" ${ARGN})
  get_filename_component(src "${A_SOURCE}" ABSOLUTE)
  set(bc "${out}.bc")
  set(flags -cc1 -no-opaque-pointers -triple spir64-unknown-unknown -cl-std=CL2.0
            -finclude-default-header -emit-llvm-bc -O2 ${A_FLAGS})
  if(A_DEBUG)
    list(APPEND flags -debug-info-kind=limited -dwarf-version=4)
  endif()
  foreach(i IN LISTS A_INCLUDES)
    list(APPEND flags -I "${i}")
  endforeach()
  foreach(d IN LISTS A_DEFINES)
    list(APPEND flags -D "${d}")
  endforeach()
  add_custom_command(
    OUTPUT "${out}"
    COMMAND ${ZEX_CLANG} ${flags} "${src}" -o "${bc}"
    COMMAND ${ZEX_LLVM_SPIRV} "${bc}" -o "${out}"
    DEPENDS "${src}" ${A_DEPENDS}
    IMPLICIT_DEPENDS C "${src}"
    COMMENT "OpenCL C -> SPIR-V ${A_SOURCE}"
    VERBATIM)
endfunction()
