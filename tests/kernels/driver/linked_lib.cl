// A library module, linked into linked_main.cl's module with spirv-link at build time (the way zex links its
// device library after the user's module). Exports a function that uses work-item builtins and a constant.
__constant uint lib_abi_version = 0x5a450001u;

int lib_scale(int x) { return x * 10 + (int)get_global_id(0) % 10; }

ulong lib_version_address(void) { return (ulong)&lib_abi_version; }
