// The report decoder (src/runtime/decoder.hpp) on hand-made hostile reports: every string address is
// validated against a fake address space, reads are bounded, nothing is ever dereferenced.
#include "runtime/decoder.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

// A fake device address space: allocations at chosen addresses. Records every read so that tests
// can assert the bounds the decoder asked for.
class FakeMemory : public zex::detail::MemoryReader {
 public:
  void add(uint64_t base, std::vector<unsigned char> bytes) { allocs_[base] = std::move(bytes); }
  void add(uint64_t base, const std::string& s, bool nul = true) {
    std::vector<unsigned char> b(s.begin(), s.end());
    if (nul) b.push_back(0);
    add(base, std::move(b));
  }

  std::optional<std::pair<uint64_t, uint64_t>> range(uint64_t a) override {
    ++range_calls;
    if (lie) return lie_range;
    for (auto& [base, bytes] : allocs_)
      if (a >= base && a - base < bytes.size()) return std::make_pair(base, uint64_t(bytes.size()));
    return std::nullopt;
  }
  void read(std::vector<zex::detail::ReadRequest>& reqs) override {
    for (auto& q : reqs) {
      reads.push_back({q.address, q.size});
      if (fail_reads) continue;
      for (auto& [base, bytes] : allocs_) {
        if (q.address >= base && q.address - base + q.size <= bytes.size()) {
          auto* p = bytes.data() + (q.address - base);
          q.out.assign(p, p + q.size);
          q.ok = true;
        }
      }
      // A read the decoder was not allowed to make (outside every allocation) is left !ok, and
      // recorded: the tests assert it never happens.
      if (!q.ok) bad_reads++;
    }
  }

  int range_calls = 0;
  int bad_reads = 0;
  bool fail_reads = false;
  bool lie = false;
  std::optional<std::pair<uint64_t, uint64_t>> lie_range;
  std::vector<std::pair<uint64_t, size_t>> reads;

 private:
  std::map<uint64_t, std::vector<unsigned char>> allocs_;
};

zex_report_t report() {
  zex_report_t r;
  std::memset(&r, 0, sizeof r);
  r.status = ZEX_STATUS_THROWN;
  r.debug_level = 2;
  r.launch_id = 5;
  r.abi_version = ZEX_ABI_VERSION;
  return r;
}

}  // namespace

TEST(Decoder, ReadsValidStrings) {
  FakeMemory m;
  m.add(0x1000, "BoundsError");
  m.add(0x2000, "Out-of-bounds array access");
  m.add(0x3000, std::string("vadd\0/k.cl", 10));  // two strings in one allocation
  auto r = report();
  r.name = 0x1000;
  r.reason = 0x2000;
  r.frame_count = 1;
  r.frames[0] = {0x3000, 0x3005, 12, 0};
  r.global_id[0] = 9;
  auto d = zex::detail::decode_report(r, m);
  EXPECT_EQ(d.name, "BoundsError");
  EXPECT_EQ(d.reason, "Out-of-bounds array access");
  ASSERT_EQ(d.frames.size(), 1u);
  EXPECT_EQ(d.frames[0].function, "vadd");
  EXPECT_EQ(d.frames[0].file, "/k.cl");
  EXPECT_EQ(d.frames[0].line, 12u);
  EXPECT_EQ(d.global_id[0], 9u);
  EXPECT_EQ(d.launch_id, 5u);
  EXPECT_EQ(m.bad_reads, 0);
  // Each read stops at its allocation's end.
  for (auto& [a, n] : m.reads) {
    if (a == 0x3005) {
      EXPECT_EQ(n, 6u);  // "/k.cl" and its NUL, up to the allocation's end
    }
    if (a == 0x1000) {
      EXPECT_EQ(n, 12u);
    }
  }
}

TEST(Decoder, ZeroAddressesAreNotRecorded) {
  FakeMemory m;
  auto r = report();
  auto d = zex::detail::decode_report(r, m);
  EXPECT_EQ(d.name, "");
  EXPECT_EQ(d.reason, "");
  EXPECT_EQ(m.range_calls, 0);
  EXPECT_TRUE(m.reads.empty());
}

TEST(Decoder, AddressOutsideEveryAllocationIsInvalidAndNeverRead) {
  FakeMemory m;
  m.add(0x1000, "ok");
  auto r = report();
  r.name = 0xdeadbeef;
  r.reason = 0xffffffffffffffffull;
  auto d = zex::detail::decode_report(r, m);
  EXPECT_EQ(d.name, "<invalid address 0xdeadbeef>");
  EXPECT_EQ(d.reason, "<invalid address 0xffffffffffffffff>");
  EXPECT_TRUE(m.reads.empty());
}

TEST(Decoder, ALyingRangeIsNotTrusted) {
  FakeMemory m;
  m.lie = true;
  auto r = report();
  r.name = 0x5000;
  // Allocation said to start after the address.
  m.lie_range = std::make_pair(uint64_t(0x6000), uint64_t(0x100));
  EXPECT_EQ(zex::detail::decode_report(r, m).name, "<invalid address 0x5000>");
  // Allocation said to end before the address.
  m.lie_range = std::make_pair(uint64_t(0x4000), uint64_t(0x1000));
  EXPECT_EQ(zex::detail::decode_report(r, m).name, "<invalid address 0x5000>");
  // Zero-sized.
  m.lie_range = std::make_pair(uint64_t(0x5000), uint64_t(0));
  EXPECT_EQ(zex::detail::decode_report(r, m).name, "<invalid address 0x5000>");
  // A size that would overflow base + size: the read is still capped at 4 KiB.
  m.lie_range = std::make_pair(uint64_t(0x5000), ~uint64_t(0));
  zex::detail::decode_report(r, m);
  ASSERT_FALSE(m.reads.empty());
  EXPECT_EQ(m.reads.back().second, zex::detail::kMaxString);
}

TEST(Decoder, StringWithoutNulStopsAtTheAllocationEnd) {
  FakeMemory m;
  m.add(0x1000, "unterminated", /*nul=*/false);
  auto r = report();
  r.name = 0x1004;
  auto d = zex::detail::decode_report(r, m);
  EXPECT_EQ(d.name, "rminated...");
  ASSERT_EQ(m.reads.size(), 1u);
  EXPECT_EQ(m.reads[0].second, 8u);
  EXPECT_EQ(m.bad_reads, 0);
}

TEST(Decoder, LongStringsAreCutAt4KiB) {
  FakeMemory m;
  m.add(0x10000, std::string(100000, 'x'));
  auto r = report();
  r.reason = 0x10000;
  auto d = zex::detail::decode_report(r, m);
  EXPECT_EQ(d.reason, std::string(4096, 'x') + "...");
  EXPECT_EQ(m.reads[0].second, 4096u);
}

TEST(Decoder, NonPrintableBytesAreEscaped) {
  FakeMemory m;
  m.add(0x1000, std::vector<unsigned char>{'a', '\n', 0x7f, 0xff, 'b', 0, 'c'});
  auto r = report();
  r.name = 0x1000;
  EXPECT_EQ(zex::detail::decode_report(r, m).name, "a\\x0a\\x7f\\xffb");
}

TEST(Decoder, FrameCountIsClamped) {
  FakeMemory m;
  m.add(0x1000, "f");
  auto r = report();
  r.frame_count = 0xffffffffu;
  for (auto& f : r.frames) f = {0x1000, 0x1000, 1, 0};
  auto d = zex::detail::decode_report(r, m);
  EXPECT_EQ(d.frame_count, 16u);
  EXPECT_EQ(d.frames.size(), 16u);
  // The shared string is validated and read once.
  EXPECT_EQ(m.reads.size(), 1u);
}

TEST(Decoder, FailedCopiesShowAsInvalid) {
  FakeMemory m;
  m.add(0x1000, "name");
  m.fail_reads = true;
  auto r = report();
  r.name = 0x1000;
  EXPECT_EQ(zex::detail::decode_report(r, m).name, "<invalid address 0x1000>");
}

TEST(Decoder, MissingFrameStringsAreNamedUnknown) {
  FakeMemory m;
  auto r = report();
  r.frame_count = 1;
  r.frames[0] = {0, 0, 3, 0};
  auto d = zex::detail::decode_report(r, m);
  ASSERT_EQ(d.frames.size(), 1u);
  EXPECT_EQ(d.frames[0].function, "<unknown function>");
  EXPECT_EQ(d.frames[0].file, "<unknown file>");
}

TEST(Decoder, CorruptLevelFallsBackToTheLaunchLevel) {
  FakeMemory m;
  m.add(0x1000, "E");
  auto r = report();
  r.debug_level = 77;
  r.name = 0x1000;
  auto info = zex::detail::exception_info(zex::detail::decode_report(r, m), "k", "d", 1);
  EXPECT_EQ(info.debug_level, 1);
  EXPECT_EQ(info.name, "E");
  EXPECT_FALSE(info.global_id.has_value());
  // And a level-0 report hides whatever strings a buggy device left in it.
  r.debug_level = 0;
  info = zex::detail::exception_info(zex::detail::decode_report(r, m), "k", "d", 2);
  EXPECT_EQ(info.debug_level, 0);
  EXPECT_EQ(info.name, "");
}

// docs/abi.md: a host must not interpret a report of a version it does not know. Nothing past the
// version is read (no address is even looked up), and the exception says why.
TEST(Decoder, UnknownAbiVersionIsNotInterpreted) {
  for (uint32_t version : {0u, ZEX_ABI_VERSION + 1, 99u}) {
    FakeMemory m;
    m.add(0x1000, "BoundsError");
    auto r = report();
    r.abi_version = version;
    r.name = 0x1000;
    r.reason = 0x1000;
    r.frame_count = 1;
    r.frames[0] = {0x1000, 0x1000, 7, 0};
    r.global_id[0] = 12;
    auto d = zex::detail::decode_report(r, m);
    EXPECT_EQ(m.range_calls, 0) << version;
    EXPECT_TRUE(m.reads.empty()) << version;
    EXPECT_EQ(d.abi_version, version);
    EXPECT_EQ(d.launch_id, 5u);
    auto info = zex::detail::exception_info(std::move(d), "vadd", "dev", 2);
    EXPECT_EQ(info.abi_version, version);
    EXPECT_EQ(info.name, "");
    EXPECT_EQ(info.reason, "");
    EXPECT_FALSE(info.global_id.has_value());
    EXPECT_TRUE(info.frames.empty());
    zex::KernelException ex(info);
    EXPECT_EQ(ex.abi_version(), version);
    const std::string what = ex.what();
    EXPECT_EQ(what.rfind("KernelException: An exception was thrown in kernel 'vadd' on dev, but its report has "
                         "ABI version " + std::to_string(version) + ", which this zex (ABI version " +
                             std::to_string(ZEX_ABI_VERSION) + ") cannot read",
                         0),
              0u)
        << what;
    EXPECT_EQ(what.find("BoundsError"), std::string::npos) << what;
  }
}

// Strings the module's table knows (their relocated addresses, as the driver gave them) are decoded on
// the host from the module's bytes: no range lookup, no read. Anything else still goes through the
// validated path, and an address in neither stays invalid.
TEST(Decoder, KnownStringsAreDecodedWithoutTheDriver) {
  FakeMemory m;
  m.add(0x9000, "Frame");
  zex::detail::KnownStrings known;
  known.add(0x1000, std::string("BoundsError\0", 12));
  known.add(0x2000, std::string("Out-of-bounds array access\0", 27));
  auto r = report();
  r.name = 0x1000;
  r.reason = 0x2000 + 4;  // inside a known string: from there to its NUL
  r.frame_count = 2;
  r.frames[0] = {0x9000, 0x5000, 3, 0};  // known to the driver; in neither
  r.frames[1] = {0x100B, 0, 4, 0};       // the NUL of a known string: empty
  auto d = zex::detail::decode_report(r, m, &known);
  EXPECT_EQ(d.name, "BoundsError");
  EXPECT_EQ(d.reason, "of-bounds array access");
  ASSERT_EQ(d.frames.size(), 2u);
  EXPECT_EQ(d.frames[0].function, "Frame");
  EXPECT_EQ(d.frames[0].file, "<invalid address 0x5000>");
  EXPECT_EQ(d.frames[1].function, "");
  EXPECT_EQ(m.range_calls, 2) << "only the two unknown addresses were looked up";
  EXPECT_EQ(m.bad_reads, 0);
}

// ABI version 2: values and the thrower count, on hostile reports.
TEST(Decoder, ValuesAreClampedAndTheCountIsAtLeastOne) {
  FakeMemory m;
  auto r = report();
  r.debug_level = 1;
  r.value_count = 0xFFFFFFFFu;  // hostile: more than the report holds
  r.value_kind = 77;            // unknown kind: labelled plainly
  r.values[0] = 11;
  r.values[1] = 22;
  auto d = zex::detail::decode_report(r, m);
  EXPECT_EQ(d.value_count, 2u);
  d.thrower_count = 0;  // hostile or unread: the claimant itself threw
  auto info = zex::detail::exception_info(std::move(d), "k", "dev", 1);
  EXPECT_EQ(info.values, (std::vector<uint64_t>{11, 22}));
  EXPECT_EQ(info.thrower_count, 1u);
  zex::KernelException ex(info);
  EXPECT_NE(std::string(ex.what()).find(": values 11, 22\nHint"), std::string::npos) << ex.what();
}

TEST(Decoder, AVersion1ReportIsReadWithoutValues) {
  FakeMemory m;
  m.add(0x1000, "BoundsError");
  auto r = report();
  r.abi_version = 1;
  r.debug_level = 1;
  r.name = 0x1000;
  // A version-1 device left its reserved bytes as it liked: they are not values.
  r.values[0] = 5;
  r.value_count = 2;
  auto d = zex::detail::decode_report(r, m);
  EXPECT_EQ(d.name, "BoundsError");
  EXPECT_EQ(d.value_count, 0u);
  auto info = zex::detail::exception_info(std::move(d), "k", "dev", 1);
  EXPECT_EQ(info.abi_version, 1u);
  EXPECT_TRUE(info.values.empty());
  EXPECT_EQ(info.thrower_count, 1u);
  zex::KernelException ex(info);
  EXPECT_EQ(std::string(ex.what()).rfind("KernelException: A BoundsError was thrown in kernel 'k' on dev\nHint:", 0), 0u)
      << ex.what();
}

TEST(Decoder, Level0KeepsNoValuesAndNoCount) {
  FakeMemory m;
  auto r = report();
  r.debug_level = 0;
  r.value_count = 2;
  r.values[0] = 1;
  auto d = zex::detail::decode_report(r, m);
  d.thrower_count = 500;  // a level-0 device does not count; whatever the word holds is ignored
  auto info = zex::detail::exception_info(std::move(d), "k", "dev", 0);
  EXPECT_TRUE(info.values.empty());
  EXPECT_EQ(info.thrower_count, 1u);
}

TEST(Decoder, TheCountIsKeptAsRead) {
  FakeMemory m;
  auto r = report();
  auto d = zex::detail::decode_report(r, m);
  d.thrower_count = UINT64_MAX;
  auto info = zex::detail::exception_info(std::move(d), "k", "dev", 2);
  EXPECT_EQ(info.thrower_count, UINT64_MAX);
  EXPECT_NE(std::string(zex::KernelException(info).what()).find("\n18446744073709551615 work-items threw"),
            std::string::npos);
}

// ABI version 3: throw-site ids (issue 15). The site table stands in for the strings and frames
// the device no longer records.
namespace {

zex::detail::SiteTable site_table() {
  zex::detail::SiteTable t(3);
  t[0].name = "DomainError";
  t[0].reason = "first site";
  t[0].frames = {{"leaf", "/src/k.cl", 4}};
  t[0].depth = 1;
  t[1].name = "BoundsError";
  t[1].reason = "Out-of-bounds array access";
  t[1].frames = {{"get", "/src/k.cl", 12}, {"helper", "", 0}, {"vadd", "/src/k.cl", 30}};
  t[1].depth = 3;
  t[1].value_count = 2;
  t[1].value_kind = ZEX_VALUES_BOUNDS;
  t[2].name = "StackError";
  t[2].reason = "deep";
  for (uint32_t i = 0; i < ZEX_MAX_FRAMES; ++i)
    t[2].frames.push_back({"f" + std::to_string(i), "/src/deep.cl", 100 + i});
  t[2].depth = 40;
  return t;
}

// What zex_throw_site writes: the site word carries the level, no debug_level, no value count or kind.
zex_report_t site_report(uint32_t site, uint32_t level) {
  auto r = report();
  if (site == 0) {  // the other entry points: debug_level as they write it
    r.debug_level = level;
    r.site = 0;
    return r;
  }
  r.debug_level = 0;
  r.value_count = 0;
  r.value_kind = 0;
  r.site = site | (level << ZEX_SITE_LEVEL_SHIFT);
  return r;
}

}  // namespace

TEST(DecoderSites, ASiteTakesNameReasonAndFramesFromTheTableWithoutReading) {
  FakeMemory m;
  const auto table = site_table();
  auto r = site_report(2, 1);
  r.values[0] = 70;
  r.values[1] = 64;
  auto d = zex::detail::decode_report(r, m, nullptr, &table);
  EXPECT_EQ(d.site, 2u);
  EXPECT_EQ(d.name, "BoundsError");
  EXPECT_EQ(d.reason, "Out-of-bounds array access");
  ASSERT_EQ(d.frames.size(), 3u);
  EXPECT_EQ(d.frames[1].function, "helper");
  EXPECT_EQ(d.frames[1].line, 0u);
  EXPECT_EQ(m.range_calls, 0);
  EXPECT_TRUE(m.reads.empty());
  // Frames from the table come at level 1: that is what numbering sites buys.
  auto info = zex::detail::exception_info(std::move(d), "vadd", "dev", 1);
  EXPECT_EQ(info.name, "BoundsError");
  ASSERT_EQ(info.frames.size(), 3u);
  EXPECT_EQ(info.frame_depth, 3u);
  EXPECT_FALSE(info.global_id.has_value());
  zex::KernelException ex(info);
  EXPECT_EQ(ex.frame_depth(), 3u);
  EXPECT_STREQ(ex.what(),
               "KernelException: A BoundsError was thrown in kernel 'vadd' on dev: Out-of-bounds array access: "
               "index 70, length 64\n"
               "Stacktrace:\n"
               " [1] get at /src/k.cl:12\n"
               " [2] helper (line unknown: the module has no debug information)\n"
               " [3] vadd at /src/k.cl:30\n"
               "Hint: launch with debug_level=2 (LaunchConfig::debug_level or ZEX_DEBUG_LEVEL=2) to see the "
               "work-item that threw.");
}

TEST(DecoderSites, ATruncatedChainSaysHowDeepItWas) {
  FakeMemory m;
  const auto table = site_table();
  auto r = site_report(3, 2);
  r.global_id[0] = 9;
  auto d = zex::detail::decode_report(r, m, nullptr, &table);
  EXPECT_EQ(d.frame_depth, 40u);
  auto info = zex::detail::exception_info(std::move(d), "k", "dev", 2);
  ASSERT_EQ(info.frames.size(), size_t{ZEX_MAX_FRAMES});
  EXPECT_EQ(info.frames[15].function, "f15");
  ASSERT_TRUE(info.global_id.has_value());
  EXPECT_EQ((*info.global_id)[0], 9u);
  zex::KernelException ex(info);
  EXPECT_EQ(ex.frame_depth(), 40u);
  const std::string what = ex.what();
  EXPECT_NE(what.find("Thrown by work-item (9, 0, 0)"), std::string::npos) << what;
  EXPECT_NE(what.find("\n [16] f15 at /src/deep.cl:115\n(40 frames; the innermost 16 are shown)"), std::string::npos)
      << what;
  EXPECT_EQ(what.find("Hint"), std::string::npos) << what;
}

TEST(DecoderSites, TheSiteWinsOverStringAddresses) {
  FakeMemory m;
  m.add(0x1000, "StaleName");
  const auto table = site_table();
  auto r = site_report(1, 2);
  r.name = 0x1000;
  r.reason = 0x1000;
  r.frame_count = 1;
  r.frames[0] = {0x1000, 0x1000, 99, 0};
  auto d = zex::detail::decode_report(r, m, nullptr, &table);
  EXPECT_EQ(d.name, "DomainError");
  EXPECT_EQ(d.reason, "first site");
  ASSERT_EQ(d.frames.size(), 1u);
  EXPECT_EQ(d.frames[0].function, "leaf");
  EXPECT_TRUE(m.reads.empty());
}

TEST(DecoderSites, SiteZeroIsTheOldProtocolFromAddresses) {
  FakeMemory m;
  m.add(0x1000, "BoundsError");
  m.add(0x2000, std::string("vadd\0/k.cl", 10));
  const auto table = site_table();
  auto r = site_report(0, 1);
  r.name = 0x1000;
  r.frame_count = 1;
  r.frames[0] = {0x2000, 0x2005, 12, 0};
  auto d = zex::detail::decode_report(r, m, nullptr, &table);
  EXPECT_EQ(d.site, 0u);
  EXPECT_EQ(d.name, "BoundsError");
  ASSERT_EQ(d.frames.size(), 1u);
  // Frames the device wrote stay a level-2 matter.
  auto info = zex::detail::exception_info(d, "vadd", "dev", 1);
  EXPECT_TRUE(info.frames.empty());
  EXPECT_EQ(info.frame_depth, 0u);
  EXPECT_NE(std::string(zex::KernelException(info).what()).find("the work-item that threw and a stacktrace."),
            std::string::npos);
  d.debug_level = 2;
  info = zex::detail::exception_info(std::move(d), "vadd", "dev", 2);
  ASSERT_EQ(info.frames.size(), 1u);
  EXPECT_EQ(info.frames[0].file, "/k.cl");
}

TEST(DecoderSites, ASiteOutOfRangeSaysSoAndReadsNothing) {
  const auto table = site_table();
  const zex::detail::SiteTable empty;
  struct Case {
    uint32_t site;
    const zex::detail::SiteTable* sites;
    const char* reason;
  };
  for (const Case& c : {Case{17, &table, "unknown throw site 17 (the module numbered 3)"},
                        Case{4, &table, "unknown throw site 4 (the module numbered 3)"},
                        // All 32 bits set: id 2^30 - 1, and a level (3) that does not exist.
                        Case{0xFFFFFFFFu, &table, "unknown throw site 1073741823 (the module numbered 3)"},
                        Case{1, &empty, "unknown throw site 1 (the module numbered none)"},
                        Case{7, nullptr, "unknown throw site 7 (the module numbered none)"}}) {
    FakeMemory m;
    auto r = site_report(c.site, 1);
    r.name = 0xdeadbeef;
    auto d = zex::detail::decode_report(r, m, nullptr, c.sites);
    EXPECT_EQ(d.site, c.site & ZEX_SITE_ID_MASK);
    EXPECT_EQ(d.name, "");
    EXPECT_EQ(d.reason, c.reason);
    EXPECT_TRUE(d.frames.empty());
    EXPECT_EQ(m.range_calls, 0);
    auto info = zex::detail::exception_info(std::move(d), "k", "dev", 1);
    const std::string what = zex::KernelException(info).what();
    EXPECT_EQ(what.rfind(std::string("KernelException: An exception was thrown in kernel 'k' on dev: ") + c.reason, 0),
              0u)
        << what;
  }
}

TEST(DecoderSites, AVersion2ReportNeverHasASite) {
  FakeMemory m;
  m.add(0x1000, "BoundsError");
  const auto table = site_table();
  auto r = site_report(0, 1);
  r.abi_version = 2;
  r.name = 0x1000;
  // A version-2 device left its reserved bytes as it liked: they are not a site.
  std::memset(reinterpret_cast<unsigned char*>(&r) + 520, 0xA5, 8);
  auto d = zex::detail::decode_report(r, m, nullptr, &table);
  EXPECT_EQ(d.site, 0u);
  EXPECT_EQ(d.name, "BoundsError");
  EXPECT_EQ(d.reason, "");
  EXPECT_TRUE(d.frames.empty());
}

TEST(DecoderSites, TableStringsAreEscapedLikeDeviceStrings) {
  FakeMemory m;
  zex::detail::SiteTable table(1);
  table[0].name = "Bad\nName";
  table[0].reason = std::string(5000, 'r');
  table[0].frames = {{"f\x01", "/k.cl", 3}};
  auto d = zex::detail::decode_report(site_report(1, 1), m, nullptr, &table);
  EXPECT_EQ(d.name, "Bad\\x0aName");
  EXPECT_EQ(d.reason, std::string(zex::detail::kMaxString, 'r') + "...");
  ASSERT_EQ(d.frames.size(), 1u);
  EXPECT_EQ(d.frames[0].function, "f\\x01");
  EXPECT_EQ(d.frames[0].file, "/k.cl");
}

// zex_throw_site stores its site at every level, the level in the site word's top bits: a level-0
// report names its site and its frames too; values and the count stay level-1 matters, and the group
// and local ids are left to whoever knows the launch's group size (zex::Stream).
TEST(DecoderSites, ALevel0SiteNamesItselfAndTheLevelComesFromTheSiteWord) {
  FakeMemory m;
  const auto table = site_table();
  auto r = site_report(2, 0);
  r.values[0] = 70;
  auto d = zex::detail::decode_report(r, m, nullptr, &table);
  EXPECT_EQ(d.debug_level, 0u);
  EXPECT_EQ(d.site, 2u);
  auto info = zex::detail::exception_info(std::move(d), "vadd", "dev", 2);  // the report's level wins
  EXPECT_EQ(info.debug_level, 0);
  EXPECT_EQ(info.name, "BoundsError");
  EXPECT_EQ(info.frames.size(), 3u);
  EXPECT_TRUE(info.values.empty());
  const std::string what = zex::KernelException(info).what();
  EXPECT_NE(what.find("A BoundsError was thrown in kernel 'vadd' on dev: Out-of-bounds array access\nStacktrace:"),
            std::string::npos)
      << what;
  EXPECT_NE(what.find("to see its operand values and how many work-items threw."), std::string::npos) << what;

  auto r2 = site_report(2, 2);
  r2.global_id[0] = 77;
  r2.group_id[0] = 5;  // stale: zex_throw_site does not write it
  auto d2 = zex::detail::decode_report(r2, m, nullptr, &table);
  EXPECT_EQ(d2.debug_level, 2u);
  auto info2 = zex::detail::exception_info(std::move(d2), "vadd", "dev", 1);
  ASSERT_TRUE(info2.global_id.has_value());
  EXPECT_EQ((*info2.global_id)[0], 77u);
  EXPECT_FALSE(info2.group_id.has_value());
  ASSERT_EQ(info2.values.size(), 2u);  // the table's count (2) and kind (bounds)
  EXPECT_EQ(info2.value_kind, ZEX_VALUES_BOUNDS);
  EXPECT_NE(std::string(zex::KernelException(info2).what()).find("Thrown by work-item (77, 0, 0)."), std::string::npos);
}
