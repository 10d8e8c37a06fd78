// The shapes zex's device library relies on: a by-value state struct carrying pointers as integers,
// a Device-scope SPIR-V compare-exchange on a claim word, plain stores by the single winner, a release fence,
// then a status store.
__attribute__((overloadable)) uint __spirv_AtomicCompareExchange(volatile __global uint* p, int scope, int equal,
                                                                 int unequal, uint value, uint comparator);

typedef struct {
  ulong claim;   // volatile global uint*
  ulong report;  // global report_t*
  uint launch_id;
} state_t;

typedef struct {
  uint status;
  uint launch_id;
  ulong gid;
  ulong name;  // address of a __constant string
} report_t;

// Wrapped in a struct, as zex's SPIR-V pass wraps the strings it records: a plain char array would be in
// NEO's strings segment, whose addresses zeMemGetAddressRange does not find.
constant struct {
  char s[13];
} thrown_name = {"ZexLikeError"};

__attribute__((noinline)) void report(state_t s, __constant char* name) {
  uint me = (uint)get_global_id(0) + 1u;
  uint prev = __spirv_AtomicCompareExchange((volatile __global uint*)s.claim, 1 /* Device */, 0, 0, me, 0u);
  if (prev != 0u) return;
  global report_t* r = (global report_t*)s.report;
  r->launch_id = s.launch_id;
  r->gid = get_global_id(0);
  r->name = (ulong)name;
  atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_release, memory_scope_device);
  r->status = 1u;
}

kernel void throw_some(state_t s, global int* out) {
  size_t g = get_global_id(0);
  if (g % 7 == 3) {
    report(s, thrown_name.s);
    return;
  }
  out[g] = (int)g;
}
