/* The zex device library: the entry points of the report ABI (include/zex/abi.h,
 * docs/abi.md), compiled to a SPIR-V library module that zex links after the user's module.
 *
 * Shape constraints, because this is the cold path of every kernel that can throw and Intel's
 * compiler turns whatever is here into ISA in each such kernel:
 *  - strings are recorded by address, never copied;
 *  - no private memory: no arrays, no address-taken locals;
 *  - the debug level is a specialization constant, so a level-0 module specializes to a CAS, three
 *    stores and the status store, with no string or frame code left. */
#include <zex/abi.h>

/* llvm-spirv turns a call to this declaration into an OpSpecConstant decorated with the SpecId. */
int __spirv_SpecConstant(int id, int default_value);

/* The claim word's atomics, as the SPIR-V instructions themselves (llvm-spirv maps these names 1:1).
   The OpenCL C spellings do not give what the protocol needs: atomic_cmpxchg becomes a Workgroup-scope
   OpAtomicCompareExchange, and the C11-style atomic_compare_exchange_strong_explicit goes through a
   generic pointer and an "expected" variable in private memory. */
__attribute__((overloadable)) uint __spirv_AtomicCompareExchange(volatile __global uint* p, int scope,
                                                                 int equal, int unequal, uint value,
                                                                 uint comparator);
__attribute__((overloadable)) uint __spirv_AtomicLoad(volatile __global uint* p, int scope, int semantics);
/* The thrower count: one relaxed device-scope increment per throwing work-item (OpAtomicIIncrement on
   a 64-bit word). 64 bits so that it cannot wrap: a launch has fewer than 2^64 work-items (the host
   refuses more), and the count would need 2^64 throws between two resets to wrap, so it saturates by
   its width rather than with a compare loop on the cold path. */
__attribute__((overloadable)) ulong __spirv_AtomicIIncrement(volatile __global ulong* p, int scope, int semantics);
#define ZEX_SCOPE_DEVICE 1  /* SPIR-V Scope Device */
#define ZEX_SEMANTICS_RELAXED 0 /* the claim word publishes nothing; the status store does */

static inline uint zex_level(void) {
  return (uint)__spirv_SpecConstant(ZEX_SPEC_ID_DEBUG_LEVEL, 1);
}

/* Exported so that Intel's driver gives this module a constant surface it registers with
   zeMemGetAddressRange; without an exported constant the strings of a report could not be validated
   (docs/design.md, "Where strings live"). Its value also lets a tool read the library's ABI version
   from the binary. */
__constant uint zex_abi_version = ZEX_ABI_VERSION;

/* The claim value of this work-item: its linear global id + 1, truncated to 32 bits, never 0.
   Computed here in 32-bit arithmetic, which gives exactly the truncation of the 64-bit linear id
   (arithmetic mod 2^32), rather than with get_global_linear_id(): Intel's compiler expands that
   builtin into a switch on the work dimension which it cannot share between the three entry points
   once they are inlined into one kernel; this form it can (figure in docs/abi.md, "Code size on
   Intel's compiler"). */
static inline uint zex_claim_value(void) {
  uint x = (uint)(get_global_id(0) - get_global_offset(0));
  uint y = (uint)(get_global_id(1) - get_global_offset(1));
  uint z = (uint)(get_global_id(2) - get_global_offset(2));
  uint v = (z * (uint)get_global_size(1) + y) * (uint)get_global_size(0) + x + 1u;
  return v != 0u ? v : 1u;
}

static inline __global zex_report_t* zex_report_ptr(zex_state_t zex) {
  return (__global zex_report_t*)zex.report;
}

/* True only for the work-item that claimed the report in this launch. The launch id check keeps a
   work-item of a later launch on the same stream, whose id happens to equal the claimant's, from
   writing into an earlier launch's report before the host has reset the claim word. */
static inline bool zex_is_claimant(zex_state_t zex) {
  uint owner = __spirv_AtomicLoad((volatile __global uint*)zex.claim, ZEX_SCOPE_DEVICE,
                                  ZEX_SEMANTICS_RELAXED);
  return owner == zex_claim_value() && zex_report_ptr(zex)->launch_id == zex.launch_id;
}

/* The body of both throw entry points, inlined into each: a throw without values records a count
   of 0, which a level-1 module folds into one store. It does not write the site word (version 3):
   the host zeroes the whole report before a slot is first handed out and every time it reads or
   discards one (SlabPool::release, SlabPool::discard), and only a claimant writes to a report, so
   the site of a report written here is already 0, and the cold path saves a store. */
__attribute__((always_inline)) static inline int zex_report(zex_state_t zex, __constant char* name, __constant char* reason, uint count,
                             uint kind, ulong a, ulong b) {
  /* Every throwing work-item counts itself, claimant or not, before the claim: from level 1 up, as
     level 0 stays a CAS and three stores. The count lives next to the claim word in device memory so
     that the host resets both with its one fill. */
  if (zex_level() >= 1u)
    __spirv_AtomicIIncrement((volatile __global ulong*)(zex.claim + ZEX_COUNT_OFFSET), ZEX_SCOPE_DEVICE,
                             ZEX_SEMANTICS_RELAXED);
  uint previous = __spirv_AtomicCompareExchange((volatile __global uint*)zex.claim, ZEX_SCOPE_DEVICE,
                                                 ZEX_SEMANTICS_RELAXED, ZEX_SEMANTICS_RELAXED,
                                                 zex_claim_value(), 0u);
  if (previous != 0u)
    return 0; /* another work-item owns the report: never spin, never write */

  __global zex_report_t* r = zex_report_ptr(zex);
  uint level = zex_level();
  r->debug_level = level;
  r->launch_id = zex.launch_id;
  if (level >= 1u) {
    r->name = (ulong)name;
    r->reason = (ulong)reason;
    /* A volatile load, so that Intel's compiler cannot fold the constant away: a module that uses
       zex_abi_version gets a .data.const section with that symbol, which makes Intel's driver allocate
       the module's constants as USM, where zeMemGetAddressRange validates the string addresses. Level
       0 records no string, so it does not pay for the load. */
    r->abi_version = *(volatile __constant uint*)&zex_abi_version;
    /* Values are stored as given (count 0..2: a caller's constant, so the stores fold away). */
    r->value_count = count;
    r->value_kind = kind;
    if (count >= 1u) r->values[0] = a;
    if (count >= 2u) r->values[1] = b;
  } else {
    r->abi_version = ZEX_ABI_VERSION;
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
  return 1;
}

int zex_report_exception(zex_state_t zex, __constant char* name, __constant char* reason) {
  return zex_report(zex, name, reason, 0u, ZEX_VALUES_PLAIN, 0ul, 0ul);
}

int zex_report_exception_values(zex_state_t zex, __constant char* name, __constant char* reason, uint count,
                                 uint kind, ulong a, ulong b) {
  return zex_report(zex, name, reason, count > (uint)ZEX_MAX_VALUES ? (uint)ZEX_MAX_VALUES : count, kind, a, b);
}

void zex_report_frame(zex_state_t zex, uint index, __constant char* function, __constant char* file,
                      uint line) {
  if (zex_level() < 2u || index >= ZEX_MAX_FRAMES || !zex_is_claimant(zex))
    return;
  __global zex_report_t* r = zex_report_ptr(zex);
  r->frames[index].function = (ulong)function;
  r->frames[index].file = (ulong)file;
  r->frames[index].line = line;
  if (r->frame_count < index + 1u)
    r->frame_count = index + 1u;
}

void zex_signal_exception(zex_state_t zex) {
  if (!zex_is_claimant(zex))
    return;
  /* Every field the claimant wrote becomes visible before the status that tells the host to read
     them. The host normally reads after the kernel completed, so this orders rather than waits. */
  atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_release, memory_scope_device);
  zex_report_ptr(zex)->status = ZEX_STATUS_THROWN;
}

/* The fused cold path (issue 15, item 4): zex_report_exception_values, zex_report_frame(0, ...) and
   zex_signal_exception in one call, for a throw whose report is complete at the throw site. The
   claimant knows it is the claimant from its own CAS, so it does not re-load the claim word and
   recompute its claim value twice more (what the separate entry points must do, since a compiler may
   call them apart). Same report layout as the three calls: frame [1] at level 2,
   frame_count 1, the status last after the release fence. Losers return after the CAS. */
void zex_throw(zex_state_t zex, __constant char* name, __constant char* reason, uint count, uint kind, ulong a,
               ulong b, __constant char* function, __constant char* file, uint line) {
  if (!zex_report(zex, name, reason, count > (uint)ZEX_MAX_VALUES ? (uint)ZEX_MAX_VALUES : count, kind, a, b))
    return;
  __global zex_report_t* r = zex_report_ptr(zex);
  if (zex_level() >= 2u) {
    r->frames[0].function = (ulong)function;
    r->frames[0].file = (ulong)file;
    r->frames[0].line = line;
    r->frame_count = 1u;
  }
  atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_release, memory_scope_device);
  r->status = ZEX_STATUS_THROWN;
}

/* The claim value of zex_throw_site: a constant, since the claimant knows it owns the report from
   its own CAS and never looks at the claim word again. Any non-zero value marks the report taken.
   zex_is_claimant (the three-call protocol) compares the claim word with (linear id + 1) truncated
   to 32 bits, which equals 0xFFFFFFFF only for linear id 2^32 - 2: only a launch of at least
   2^32 - 1 work-items that mixes both protocols could have a three-call work-item take this
   claimant's report for its own. */
#define ZEX_SITE_CLAIM 0xFFFFFFFFu

/* The cold path of a numbered throw site (issue 15; ABI version 3). Everything the host can know
   from the site id (name, reason, frames, how many values and what they are) it takes from the
   module's site table, so the claimant stores only what varies at run time, one store each, no
   branch but the level's:
    - every level: the launch id, abi_version, and `site` with the debug level in its top bits (the
      level is the specialization constant, so `site | level << 30` folds to the id's expression), so
      a level-0 report names its site too and the host needs no separate debug_level store;
    - level >= 1: the thrower count (before the claim, as zex_report does) and both values, whatever
      the site's count (unconditional stores are cheaper than the branches; the host shows `count`);
    - level 2: the global id; the host derives the group and local ids from the launch's group size.
   The claim value is a constant: the claimant knows it owns the report from its own CAS, and no
   zex_report_frame/zex_signal_exception of this work-item will compare it. Three-call work-items of
   the same launch compare the claim word with their linear id + 1; only in a launch of 2^32 - 1 or
   more work-items could one of them take a zex_throw_site claimant's report for its own (docs/abi.md).
   Each store here costs 64-192 bytes of ISA on DG2 (docs/benchmarks-igc.md, "Issue 15: the site
   cold path"). */
void zex_throw_site(zex_state_t zex, uint site, ulong a, ulong b) {
  uint level = zex_level();
  if (level >= 1u)
    __spirv_AtomicIIncrement((volatile __global ulong*)(zex.claim + ZEX_COUNT_OFFSET), ZEX_SCOPE_DEVICE,
                             ZEX_SEMANTICS_RELAXED);
  uint previous = __spirv_AtomicCompareExchange((volatile __global uint*)zex.claim, ZEX_SCOPE_DEVICE,
                                                 ZEX_SEMANTICS_RELAXED, ZEX_SEMANTICS_RELAXED,
                                                 ZEX_SITE_CLAIM, 0u);
  if (previous != 0u)
    return;
  __global zex_report_t* r = zex_report_ptr(zex);
  r->launch_id = zex.launch_id;
  r->abi_version = ZEX_ABI_VERSION;
  r->site = (site & ZEX_SITE_ID_MASK) | (level << ZEX_SITE_LEVEL_SHIFT);
  if (level >= 1u) {
    r->values[0] = a;
    r->values[1] = b;
  }
  if (level >= 2u) {
    r->global_id[0] = get_global_id(0);
    r->global_id[1] = get_global_id(1);
    r->global_id[2] = get_global_id(2);
  }
  atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_release, memory_scope_device);
  r->status = ZEX_STATUS_THROWN;
}

/* Early stop (cfg.stop_on_throw; docs/abi.md, "Early stop"): zex's stop_on_throw pass calls this at
   the entry of every kernel of a module it builds for early stop, with the kernel's zex_state_t in
   pieces, and the kernel returns at once if it gives non-zero. Not for compilers to call: zex adds the
   call. The fast path, when nothing was thrown, is one volatile load of the claim word (device memory):
   the check is advisory (a group that reads a stale 0 runs its work, as one that started earlier does),
   and on Intel's compiler a volatile load is the hand-written floor of the check where OpAtomicLoad
   costs 64-192 bytes more per kernel (docs/decisions.md, "The stop check's claim read").
    - `uniform` 0 (a kernel without work-group barriers): stop once anything claimed the slot: an
      earlier launch of the stream or graph execution, or a work-item of this launch, so the launch's
      remaining work-groups skip their work too.
    - `uniform` 1 (a kernel with barriers, where all work-items of a group must decide alike, and
      deciding together would need a barrier of its own): stop only if an *earlier* launch threw, which
      no work-item of this launch can change while it runs. The report's status is read with acquire
      semantics, so that a status of this launch's own throw is seen with this launch's id, never with a
      stale one. */
#define ZEX_SEMANTICS_ACQUIRE_GLOBAL 0x202 /* Acquire | CrossWorkgroupMemory */
uint zex_stop_requested(ulong report, ulong claim, ulong launch_id, uint uniform) {
  uint owner = *(volatile __global uint*)claim;  /* a 32-bit aligned word: the old or the new value */
  if (owner == 0u)
    return 0u;
  if (uniform == 0u)
    return 1u;
  volatile __global zex_report_t* r = (volatile __global zex_report_t*)report;
  uint status = __spirv_AtomicLoad((volatile __global uint*)&r->status, ZEX_SCOPE_DEVICE, ZEX_SEMANTICS_ACQUIRE_GLOBAL);
  return status == ZEX_STATUS_THROWN && r->launch_id != launch_id ? 1u : 0u;
}
