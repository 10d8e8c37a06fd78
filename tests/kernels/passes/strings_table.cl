// A program-scope table of strings passed to ZEX_THROW, for the entry-point interface pass
// (src/spirv/passes/interfaces.cpp). llvm-spirv-15 (SPIR-V 1.4) does not list the strings in the kernel's
// OpEntryPoint: they are reached only through the table's initializer (OpConstantComposite of
// OpSpecConstantOp addresses), and SPIRV-Tools 2023.1 refuses the module as it comes.
#include <zex/device.h>

__constant char* const computed_names[2] = {"FirstName", "SecondName"};

__kernel void k(uint which, zex_state_t zex) {
  if (get_global_id(0) == 0) ZEX_THROW(zex, computed_names[which & 1u], "a computed name");
}
