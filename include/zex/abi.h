/* zex report ABI, version 3 (version 1 plus operand values and a thrower count in version 2, plus a
 * throw-site id in version 3; docs/abi.md).
 *
 * The contract between the device library (device/zex_device.cl, or any compiler that emits the same
 * calls), the kernel, and the host decoder. Plain C so that one header serves OpenCL C (clang-15
 * -cl-std=CL2.0), C and C++. docs/abi.md describes it for compiler writers.
 *
 * Every field is an integer: the state is passed to kernels by value, and SPIR-V rejects pointer
 * fields in by-value kernel arguments; the report holds device addresses that the host must validate
 * before reading, so it must never be tempted to dereference them as host pointers.
 *
 * Changing a size, an offset, a value or a meaning below is an ABI break: bump ZEX_ABI_VERSION. */
#ifndef ZEX_ABI_H
#define ZEX_ABI_H

#define ZEX_ABI_VERSION 3u
/* The oldest report version a host still reads: a version-1 report is a version-2 report without
   values (its last 16 bytes were reserved, written as zero), and a version-2 report is a version-3
   report without a site (the host ignores bytes 520..528 of a report older than version 3, whatever
   they hold), so the host reads both. */
#define ZEX_ABI_VERSION_MIN 1u
/* SPIR-V SpecId of the debug level (a 32-bit OpSpecConstant, default 1). "zex1" in ASCII, chosen so
   that it cannot collide with the small SpecIds a user's own kernels use. */
#define ZEX_SPEC_ID_DEBUG_LEVEL 0x7A657831
/* SPIR-V SpecId of the throw-site base (version 3; "zex2"), default 0: a module zex numbered stores
   base + k for its site k, and zex::Module sets the base so that site ids are unique in the process
   (the host then finds the table from the id alone, SlabPool::check included). */
#define ZEX_SPEC_ID_SITE_BASE 0x7A657832
#define ZEX_MAX_FRAMES 16
#define ZEX_STATUS_NONE 0u   /* report empty */
#define ZEX_STATUS_THROWN 1u /* a work-item threw; the report is complete */
#define ZEX_MAX_VALUES 2
#define ZEX_VALUES_PLAIN 0u  /* zex_report_t.value_kind: printed as "values a, b" */
#define ZEX_VALUES_BOUNDS 1u /* printed as "index a, length b" (ZEX_CHECK_BOUNDS) */
#define ZEX_VALUES_MEMORY 2u /* printed after the reason as "at byte offset a of an allocation of b bytes"
                                (zex's memory checks, docs/design.md "Automatic memory checks") */
/* The claim area of one slot in device memory: the 32-bit claim word at 0, the 64-bit thrower count
   at ZEX_COUNT_OFFSET (version 2). The host resets all ZEX_CLAIM_BYTES at once. */
#define ZEX_COUNT_OFFSET 8
#define ZEX_CLAIM_BYTES 16
/* zex_report_t.site (version 3): the id in the low 30 bits, the debug level above them. Ids are at
   most ZEX_SITE_ID_MASK; zex numbers fewer than 2^16 per module. */
#define ZEX_SITE_ID_MASK 0x3FFFFFFFu
#define ZEX_SITE_LEVEL_SHIFT 30

#ifdef __OPENCL_C_VERSION__
/* OpenCL C: ulong/uint/uchar are exactly 64/32/8 bits, as the host's stdint types. */
typedef ulong zex_u64_t;
typedef uint zex_u32_t;
typedef uchar zex_u8_t;
#define ZEX_OFFSETOF(type, member) __builtin_offsetof(type, member)
#define ZEX_ALIGNOF(type) __alignof__(type)
#define ZEX_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#else
#include <stddef.h>
#include <stdint.h>
typedef uint64_t zex_u64_t;
typedef uint32_t zex_u32_t;
typedef uint8_t zex_u8_t;
#define ZEX_OFFSETOF(type, member) offsetof(type, member)
#ifdef __cplusplus
#define ZEX_ALIGNOF(type) alignof(type)
#define ZEX_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define ZEX_ALIGNOF(type) _Alignof(type)
#define ZEX_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#else
/* C99 (<zex/zex.h> promises C99, and -pedantic rejects C11's keywords there): the same checks as a
   negative array size; __alignof__ is the GNU spelling every compiler of Level Zero hosts has. */
#define ZEX_ALIGNOF(type) __alignof__(type)
#define ZEX_STATIC_ASSERT_CAT2(a, b) a##b
#define ZEX_STATIC_ASSERT_CAT(a, b) ZEX_STATIC_ASSERT_CAT2(a, b)
#define ZEX_STATIC_ASSERT(cond, msg) \
  typedef char ZEX_STATIC_ASSERT_CAT(zex_static_assert_line_, __LINE__)[(cond) ? 1 : -1]
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Passed BY VALUE as the kernel's LAST argument. 24 bytes, align 8. */
typedef struct zex_state {
  zex_u64_t report;    /* 0:  address of the zex_report_t (host USM) */
  zex_u64_t claim;     /* 8:  address of the 32-bit claim word (device USM, 16-aligned); 0 = free, else
                          claimant id + 1. Version 2: claim + ZEX_COUNT_OFFSET is the 64-bit count of
                          work-items that threw since the host last reset the claim word (level >= 1) */
  zex_u64_t launch_id; /* 16: host-chosen id of this launch, never 0 */
} zex_state_t;

/* One stack frame. 24 bytes, align 8. */
typedef struct zex_frame {
  zex_u64_t function; /* 0:  address of a NUL-terminated constant string, 0 = not recorded */
  zex_u64_t file;     /* 8:  likewise */
  zex_u32_t line;     /* 16 */
  zex_u32_t reserved; /* 20 */
} zex_frame_t;

/* The report: 528 bytes (version 1: 512), align 8, in host USM. Written only by the work-item that claimed it, with
   plain stores, status last. */
typedef struct zex_report {
  zex_u32_t status;          /* 0:   ZEX_STATUS_*; written LAST by the claimant */
  zex_u32_t debug_level;     /* 4:   level the throwing module was specialized for */
  zex_u64_t launch_id;       /* 8:   copied from the state */
  zex_u64_t name;            /* 16:  address of the exception name string, 0 if not recorded (level 0) */
  zex_u64_t reason;          /* 24:  address of the reason string, 0 if not recorded */
  zex_u64_t global_id[3];    /* 32:  level 2 */
  zex_u64_t group_id[3];     /* 56:  level 2 */
  zex_u64_t local_id[3];     /* 80:  level 2 */
  zex_u32_t frame_count;     /* 104: frames recorded; the host clamps it to ZEX_MAX_FRAMES */
  zex_u32_t abi_version;     /* 108: ZEX_ABI_VERSION of the device library that wrote it */
  zex_frame_t frames[ZEX_MAX_FRAMES]; /* 112 .. 496; frames[0] is printed as [1] */
  /* Version 2 (version 1 had 16 reserved bytes here, and ended at 512): */
  zex_u64_t values[ZEX_MAX_VALUES]; /* 496: operand values (level >= 1), e.g. index and length */
  zex_u32_t value_count;     /* 512: how many of values[] were recorded; the host clamps it */
  zex_u32_t value_kind;      /* 516: ZEX_VALUES_*: how the host labels them */
  /* Version 3 (versions 1 and 2 had 8 reserved bytes here): */
  zex_u32_t site;            /* 520: written by zex_throw_site at every level: bits 0..29 the
                                throw-site id (>= 1), bits 30..31 the debug level (ZEX_SITE_*); 0 = not
                                written (the other entry points). The host takes name, reason, value
                                count and kind, and frames from the module's site table */
  zex_u32_t reserved;        /* 524 */
} zex_report_t;

#ifdef __cplusplus
} /* extern "C" */
#endif

/* The same checks compile on the device (OpenCL C) and on the host, so both sides agree or neither
   builds. */
ZEX_STATIC_ASSERT(sizeof(zex_state_t) == 24, "zex_state_t must be 24 bytes");
ZEX_STATIC_ASSERT(ZEX_ALIGNOF(zex_state_t) == 8, "zex_state_t must be 8-aligned");
ZEX_STATIC_ASSERT(ZEX_OFFSETOF(zex_state_t, report) == 0, "zex_state_t.report at 0");
ZEX_STATIC_ASSERT(ZEX_OFFSETOF(zex_state_t, claim) == 8, "zex_state_t.claim at 8");
ZEX_STATIC_ASSERT(ZEX_OFFSETOF(zex_state_t, launch_id) == 16, "zex_state_t.launch_id at 16");

ZEX_STATIC_ASSERT(sizeof(zex_frame_t) == 24, "zex_frame_t must be 24 bytes");
ZEX_STATIC_ASSERT(ZEX_ALIGNOF(zex_frame_t) == 8, "zex_frame_t must be 8-aligned");
ZEX_STATIC_ASSERT(ZEX_OFFSETOF(zex_frame_t, function) == 0, "zex_frame_t.function at 0");
ZEX_STATIC_ASSERT(ZEX_OFFSETOF(zex_frame_t, file) == 8, "zex_frame_t.file at 8");
ZEX_STATIC_ASSERT(ZEX_OFFSETOF(zex_frame_t, line) == 16, "zex_frame_t.line at 16");
ZEX_STATIC_ASSERT(ZEX_OFFSETOF(zex_frame_t, reserved) == 20, "zex_frame_t.reserved at 20");

ZEX_STATIC_ASSERT(sizeof(zex_report_t) == 528, "zex_report_t must be 528 bytes");
ZEX_STATIC_ASSERT(ZEX_ALIGNOF(zex_report_t) == 8, "zex_report_t must be 8-aligned");
ZEX_STATIC_ASSERT(ZEX_OFFSETOF(zex_report_t, status) == 0, "zex_report_t.status at 0");
ZEX_STATIC_ASSERT(ZEX_OFFSETOF(zex_report_t, debug_level) == 4, "zex_report_t.debug_level at 4");
ZEX_STATIC_ASSERT(ZEX_OFFSETOF(zex_report_t, launch_id) == 8, "zex_report_t.launch_id at 8");
ZEX_STATIC_ASSERT(ZEX_OFFSETOF(zex_report_t, name) == 16, "zex_report_t.name at 16");
ZEX_STATIC_ASSERT(ZEX_OFFSETOF(zex_report_t, reason) == 24, "zex_report_t.reason at 24");
ZEX_STATIC_ASSERT(ZEX_OFFSETOF(zex_report_t, global_id) == 32, "zex_report_t.global_id at 32");
ZEX_STATIC_ASSERT(ZEX_OFFSETOF(zex_report_t, group_id) == 56, "zex_report_t.group_id at 56");
ZEX_STATIC_ASSERT(ZEX_OFFSETOF(zex_report_t, local_id) == 80, "zex_report_t.local_id at 80");
ZEX_STATIC_ASSERT(ZEX_OFFSETOF(zex_report_t, frame_count) == 104, "zex_report_t.frame_count at 104");
ZEX_STATIC_ASSERT(ZEX_OFFSETOF(zex_report_t, abi_version) == 108, "zex_report_t.abi_version at 108");
ZEX_STATIC_ASSERT(ZEX_OFFSETOF(zex_report_t, frames) == 112, "zex_report_t.frames at 112");
ZEX_STATIC_ASSERT(ZEX_OFFSETOF(zex_report_t, values) == 496, "zex_report_t.values at 496");
ZEX_STATIC_ASSERT(ZEX_OFFSETOF(zex_report_t, value_count) == 512, "zex_report_t.value_count at 512");
ZEX_STATIC_ASSERT(ZEX_OFFSETOF(zex_report_t, value_kind) == 516, "zex_report_t.value_kind at 516");
ZEX_STATIC_ASSERT(ZEX_OFFSETOF(zex_report_t, site) == 520, "zex_report_t.site at 520");
ZEX_STATIC_ASSERT(ZEX_OFFSETOF(zex_report_t, reserved) == 524, "zex_report_t.reserved at 524");

#endif /* ZEX_ABI_H */
