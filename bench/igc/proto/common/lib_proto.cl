/* Prototype zex device libraries for bench/igc: one source, knobs set by each proto/<name>/lib.cl.
 * Every prototype keeps the report ABI (include/zex/abi.h): same report, same claim protocol, same
 * three entry points; what changes is how much code the cold path costs in IGC.
 *
 *   ZEXP_NOINLINE   entry points are noinline (SPIR-V DontInline): one copy per module, calls per site
 *   ZEXP_CLAIM32    the claim value (linear id + 1, truncated to 32 bits) computed in 32-bit
 *                   arithmetic, which is the same number: DG2 has no native 64-bit integer ALU
 *   ZEXP_FUSED      also export zex_throw_at(report, claim, launch_id, name, reason, function, file,
 *                   line): claim, record, publish in one call, with the state passed as three scalars
 *                   (a struct by value becomes a private-memory copy in a non-inlined call)
 *   ZEXP_CHEAP_OWNER  "am I the claimant" compares the claim word only; the ABI's launch-id re-read
 *                   from host USM is dropped (the host resets the claim before any later launch) */
#include <zex/abi.h>

int __spirv_SpecConstant(int id, int default_value);

/* Device-scope claim atomics, as device/zex_device.cl spells them (OpenCL C's atomic_cmpxchg is
   Workgroup-scope in llvm-spirv-15). */
__attribute__((overloadable)) uint __spirv_AtomicCompareExchange(volatile __global uint* p, int scope,
                                                                 int equal, int unequal, uint value,
                                                                 uint comparator);
__attribute__((overloadable)) uint __spirv_AtomicLoad(volatile __global uint* p, int scope, int semantics);

#ifdef ZEXP_NOINLINE
#define ZEXP_ENTRY __attribute__((noinline))
#else
#define ZEXP_ENTRY
#endif

static inline uint zexp_level(void) {
  return (uint)__spirv_SpecConstant(ZEX_SPEC_ID_DEBUG_LEVEL, 1);
}

__constant uint zex_abi_version = ZEX_ABI_VERSION;

static inline uint zexp_claim_value(void) {
#ifdef ZEXP_CLAIM32
  uint gx = (uint)get_global_id(0) - (uint)get_global_offset(0);
  uint gy = (uint)get_global_id(1) - (uint)get_global_offset(1);
  uint gz = (uint)get_global_id(2) - (uint)get_global_offset(2);
  uint v = gx + (uint)get_global_size(0) * (gy + (uint)get_global_size(1) * gz) + 1u;
#else
  uint v = (uint)get_global_linear_id() + 1u;
#endif
  return v != 0u ? v : 1u;
}

static inline bool zexp_claim(ulong claim) {
  return __spirv_AtomicCompareExchange((volatile __global uint*)claim, 1, 0, 0, zexp_claim_value(), 0u) == 0u;
}

static inline bool zexp_is_claimant(ulong report, ulong claim, ulong launch_id) {
  uint owner = __spirv_AtomicLoad((volatile __global uint*)claim, 1, 0);
#ifdef ZEXP_CHEAP_OWNER
  (void)report;
  (void)launch_id;
  return owner == zexp_claim_value();
#else
  return owner == zexp_claim_value() && ((__global zex_report_t*)report)->launch_id == launch_id;
#endif
}

static inline void zexp_record(ulong report, ulong launch_id, __constant char* name, __constant char* reason) {
  __global zex_report_t* r = (__global zex_report_t*)report;
  uint level = zexp_level();
  r->debug_level = level;
  r->launch_id = launch_id;
  r->abi_version = ZEX_ABI_VERSION;
  if (level >= 1u) {
    r->name = (ulong)name;
    r->reason = (ulong)reason;
  }
  if (level >= 2u) {
    r->global_id[0] = get_global_id(0);
    r->global_id[1] = get_global_id(1);
    r->global_id[2] = get_global_id(2);
    r->group_id[0] = get_group_id(0);
    r->group_id[1] = get_group_id(1);
    r->group_id[2] = get_group_id(2);
    r->local_id[0] = get_local_id(0);
    r->local_id[1] = get_local_id(1);
    r->local_id[2] = get_local_id(2);
  }
}

static inline void zexp_frame(ulong report, uint index, __constant char* function, __constant char* file,
                              uint line) {
  __global zex_report_t* r = (__global zex_report_t*)report;
  r->frames[index].function = (ulong)function;
  r->frames[index].file = (ulong)file;
  r->frames[index].line = line;
  if (r->frame_count < index + 1u)
    r->frame_count = index + 1u;
}

static inline void zexp_publish(ulong report) {
  atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_release, memory_scope_device);
  ((__global zex_report_t*)report)->status = ZEX_STATUS_THROWN;
}

ZEXP_ENTRY int zex_report_exception(zex_state_t zex, __constant char* name, __constant char* reason) {
  if (!zexp_claim(zex.claim))
    return 0;
  zexp_record(zex.report, zex.launch_id, name, reason);
  return 1;
}

ZEXP_ENTRY void zex_report_frame(zex_state_t zex, uint index, __constant char* function, __constant char* file,
                                 uint line) {
  if (zexp_level() < 2u || index >= ZEX_MAX_FRAMES || !zexp_is_claimant(zex.report, zex.claim, zex.launch_id))
    return;
  zexp_frame(zex.report, index, function, file, line);
}

ZEXP_ENTRY void zex_signal_exception(zex_state_t zex) {
  if (!zexp_is_claimant(zex.report, zex.claim, zex.launch_id))
    return;
  zexp_publish(zex.report);
}

#ifdef ZEXP_FUSED
/* The whole cold path of one throw site: the claimant records everything it knows, then publishes.
   No claimant re-check: the CAS result is still in a register. */
ZEXP_ENTRY void zex_throw_at(ulong report, ulong claim, ulong launch_id, __constant char* name,
                             __constant char* reason, __constant char* function, __constant char* file,
                             uint line) {
  if (!zexp_claim(claim))
    return;
  zexp_record(report, launch_id, name, reason);
  if (zexp_level() >= 2u)
    zexp_frame(report, 0u, function, file, line);
  zexp_publish(report);
}
#endif
