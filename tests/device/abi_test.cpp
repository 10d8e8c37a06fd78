// include/zex/abi.h: the report ABI is pinned here at compile time (static_assert) and at run time,
// in C++ and in C (abi_test_c.c). The device side is pinned by the same header's _Static_asserts,
// which device/zex_device.cl includes: a device layout that disagrees fails the library's build.
#include <zex/abi.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

extern "C" size_t zex_abi_c_layout(size_t* out, size_t capacity);

namespace {

// Values a compiler writer relies on (docs/abi.md). Changing one is an ABI break.
static_assert(ZEX_ABI_VERSION == 3u && ZEX_ABI_VERSION_MIN == 1u, "ABI version, and the oldest one read");
static_assert(ZEX_MAX_VALUES == 2 && ZEX_VALUES_PLAIN == 0u && ZEX_VALUES_BOUNDS == 1u, "values");
static_assert(ZEX_COUNT_OFFSET == 8 && ZEX_CLAIM_BYTES == 16, "the claim area: claim word, then the thrower count");
static_assert(ZEX_SPEC_ID_DEBUG_LEVEL == 0x7A657831, "SpecId of the debug level");
static_assert(ZEX_MAX_FRAMES == 16, "frame capacity");
static_assert(ZEX_STATUS_NONE == 0u && ZEX_STATUS_THROWN == 1u, "status values");

static_assert(std::is_standard_layout<zex_state_t>::value && std::is_trivially_copyable<zex_state_t>::value,
              "zex_state_t is passed by value to kernels: plain data only");
static_assert(std::is_standard_layout<zex_report_t>::value && std::is_trivially_copyable<zex_report_t>::value,
              "zex_report_t is copied byte-wise from USM");
static_assert(sizeof(zex_report_t::global_id) == 3 * 8 && sizeof(zex_report_t::frames) == 16 * 24,
              "array members");
static_assert(sizeof(zex_report_t::status) == 4 && sizeof(zex_report_t::debug_level) == 4 &&
                  sizeof(zex_report_t::launch_id) == 8 && sizeof(zex_report_t::name) == 8 &&
                  sizeof(zex_report_t::frame_count) == 4 && sizeof(zex_frame_t::line) == 4 &&
                  sizeof(zex_state_t::claim) == 8,
              "field widths");

TEST(Abi, ConstantsHaveTheirDocumentedValues) {
  EXPECT_EQ(ZEX_ABI_VERSION, 3u);
  EXPECT_EQ(ZEX_ABI_VERSION_MIN, 1u);
  EXPECT_EQ(ZEX_SPEC_ID_DEBUG_LEVEL, 2053470257);  // "zex1"
  EXPECT_EQ(ZEX_MAX_FRAMES, 16);
  EXPECT_EQ(ZEX_STATUS_NONE, 0u);
  EXPECT_EQ(ZEX_STATUS_THROWN, 1u);
  // The SpecId spells "zex1" in ASCII, most significant byte first.
  const char expected[] = {'z', 'e', 'x', '1'};
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ((ZEX_SPEC_ID_DEBUG_LEVEL >> (8 * (3 - i))) & 0xFF, expected[i]);
}

TEST(Abi, StateLayout) {
  EXPECT_EQ(sizeof(zex_state_t), 24u);
  EXPECT_EQ(alignof(zex_state_t), 8u);
  EXPECT_EQ(offsetof(zex_state_t, report), 0u);
  EXPECT_EQ(offsetof(zex_state_t, claim), 8u);
  EXPECT_EQ(offsetof(zex_state_t, launch_id), 16u);
}

TEST(Abi, FrameLayout) {
  EXPECT_EQ(sizeof(zex_frame_t), 24u);
  EXPECT_EQ(alignof(zex_frame_t), 8u);
  EXPECT_EQ(offsetof(zex_frame_t, function), 0u);
  EXPECT_EQ(offsetof(zex_frame_t, file), 8u);
  EXPECT_EQ(offsetof(zex_frame_t, line), 16u);
  EXPECT_EQ(offsetof(zex_frame_t, reserved), 20u);
}

TEST(Abi, ReportLayout) {
  EXPECT_EQ(sizeof(zex_report_t), 528u);
  EXPECT_EQ(alignof(zex_report_t), 8u);
  EXPECT_EQ(offsetof(zex_report_t, status), 0u);
  EXPECT_EQ(offsetof(zex_report_t, debug_level), 4u);
  EXPECT_EQ(offsetof(zex_report_t, launch_id), 8u);
  EXPECT_EQ(offsetof(zex_report_t, name), 16u);
  EXPECT_EQ(offsetof(zex_report_t, reason), 24u);
  EXPECT_EQ(offsetof(zex_report_t, global_id), 32u);
  EXPECT_EQ(offsetof(zex_report_t, group_id), 56u);
  EXPECT_EQ(offsetof(zex_report_t, local_id), 80u);
  EXPECT_EQ(offsetof(zex_report_t, frame_count), 104u);
  EXPECT_EQ(offsetof(zex_report_t, abi_version), 108u);
  EXPECT_EQ(offsetof(zex_report_t, frames), 112u);
  EXPECT_EQ(offsetof(zex_report_t, frames) + ZEX_MAX_FRAMES * sizeof(zex_frame_t), 496u);
  EXPECT_EQ(offsetof(zex_report_t, values), 496u);
  EXPECT_EQ(offsetof(zex_report_t, value_count), 512u);
  EXPECT_EQ(offsetof(zex_report_t, value_kind), 516u);
  EXPECT_EQ(offsetof(zex_report_t, site), 520u);
  EXPECT_EQ(offsetof(zex_report_t, reserved), 524u);
}

// The field widths, through the bytes: the host decodes a report that a device wrote, so each field
// must land at its offset with its width and little-endian order.
TEST(Abi, FieldsLandAtTheirOffsetsWithTheirWidths) {
  zex_report_t r;
  std::memset(&r, 0, sizeof r);
  r.status = ZEX_STATUS_THROWN;
  r.launch_id = 0x1122334455667788ull;
  r.frames[15].line = 0xA1B2C3D4u;
  r.values[1] = 0x5A00000000000000ull;
  r.value_kind = 0xC3u;
  r.site = 0x0000D2E1u;
  r.reserved = 0xF7000000u;
  const auto* bytes = reinterpret_cast<const unsigned char*>(&r);
  EXPECT_EQ(bytes[0], 1);
  for (int i = 1; i < 8; ++i)
    EXPECT_EQ(bytes[i], 0) << "byte " << i;
  EXPECT_EQ(bytes[8], 0x88);
  EXPECT_EQ(bytes[15], 0x11);
  EXPECT_EQ(bytes[112 + 15 * 24 + 16], 0xD4);
  EXPECT_EQ(bytes[112 + 15 * 24 + 19], 0xA1);
  EXPECT_EQ(bytes[511], 0x5A);
  EXPECT_EQ(bytes[516], 0xC3);
  EXPECT_EQ(bytes[520], 0xE1);
  EXPECT_EQ(bytes[521], 0xD2);
  EXPECT_EQ(bytes[522], 0);
  EXPECT_EQ(bytes[527], 0xF7);
}

TEST(Abi, CAndCxxAgree) {
  const std::vector<size_t> cxx = {
      sizeof(zex_state_t),  alignof(zex_state_t),  offsetof(zex_state_t, report),
      offsetof(zex_state_t, claim), offsetof(zex_state_t, launch_id),
      sizeof(zex_frame_t),  alignof(zex_frame_t),  offsetof(zex_frame_t, function),
      offsetof(zex_frame_t, file), offsetof(zex_frame_t, line), offsetof(zex_frame_t, reserved),
      sizeof(zex_report_t), alignof(zex_report_t), offsetof(zex_report_t, status),
      offsetof(zex_report_t, debug_level), offsetof(zex_report_t, launch_id),
      offsetof(zex_report_t, name), offsetof(zex_report_t, reason),
      offsetof(zex_report_t, global_id), offsetof(zex_report_t, group_id),
      offsetof(zex_report_t, local_id), offsetof(zex_report_t, frame_count),
      offsetof(zex_report_t, abi_version), offsetof(zex_report_t, frames),
      offsetof(zex_report_t, values), offsetof(zex_report_t, value_count),
      offsetof(zex_report_t, value_kind), offsetof(zex_report_t, site),
      offsetof(zex_report_t, reserved)};
  std::vector<size_t> c(64, ~size_t{0});
  size_t n = zex_abi_c_layout(c.data(), c.size());
  ASSERT_EQ(n, cxx.size());
  c.resize(n);
  EXPECT_EQ(c, cxx);
}

}  // namespace
