// zex::DeviceReport and the CPER decoder (include/zex/device_report.hpp, common/cper.hpp):
// unit tests, no device needed. The records here are assembled byte by byte at the offsets of the UEFI
// specification (2.10, appendix N), not with the decoder's own constants, so a wrong constant fails.
#include "common/cper.hpp"
#include <zex/device_report.hpp>
#include <zex/error.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

namespace cper = zex::detail::cper;

void le(std::vector<uint8_t>& b, size_t off, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i) b[off + i] = static_cast<uint8_t>(v >> (8 * i));
}

// A GUID in CPER's byte order from its text form's fields.
void guid(std::vector<uint8_t>& b, size_t off, uint32_t d1, uint16_t d2, uint16_t d3, std::initializer_list<uint8_t> d4) {
  le(b, off, d1, 4);
  le(b, off + 4, d2, 2);
  le(b, off + 6, d3, 2);
  size_t i = 0;
  for (uint8_t x : d4) b[off + 8 + i++] = x;
}

enum class Kind { Processor, Memory, Pcie, Unknown };

// Header (128) + `kinds.size()` descriptors (72 each) + the sections.
std::vector<uint8_t> record(const std::vector<Kind>& kinds, uint32_t severity = 1) {
  std::vector<size_t> sizes;
  for (Kind k : kinds) sizes.push_back(k == Kind::Processor ? 192 : k == Kind::Memory ? 80 : k == Kind::Pcie ? 208 : 16);
  size_t total = 128 + 72 * kinds.size();
  for (size_t s : sizes) total += s;
  std::vector<uint8_t> b(total, 0);
  std::memcpy(b.data(), "CPER", 4);
  le(b, 4, 0x0101, 2);           // revision 1.1
  le(b, 6, 0xffffffff, 4);       // signature end
  le(b, 10, kinds.size(), 2);    // section count
  le(b, 12, severity, 4);        // error severity
  le(b, 16, 2, 4);               // validation: timestamp valid
  le(b, 20, total, 4);           // record length
  const uint8_t ts[8] = {0x11, 0x25, 0x10, 0, 0x01, 0x12, 0x26, 0x20};  // 2026-12-01 10:25:11
  std::memcpy(b.data() + 24, ts, 8);
  size_t off = 128 + 72 * kinds.size();
  for (size_t i = 0; i < kinds.size(); ++i) {
    const size_t d = 128 + 72 * i;
    le(b, d + 0, off, 4);
    le(b, d + 4, sizes[i], 4);
    le(b, d + 8, 0x0100, 2);
    switch (kinds[i]) {
      case Kind::Processor:
        guid(b, d + 16, 0x9876ccad, 0x47b4, 0x4bdb, {0xb6, 0x5e, 0x16, 0xf1, 0x93, 0xc4, 0xf3, 0xdb});
        le(b, off + 0, (1u << 2) | (1u << 3) | (1u << 9), 8);  // error type, operation, target address
        b[off + 10] = 0x02;                                    // TLB error
        b[off + 11] = 2;                                       // data write
        le(b, off + 160, 0xdead0000, 8);
        break;
      case Kind::Memory:
        guid(b, d + 16, 0xa5bc1114, 0x6f64, 0x4ede, {0xb8, 0x63, 0x3e, 0x83, 0xed, 0x7c, 0x83, 0xb1});
        le(b, off + 0, (1u << 1) | (1u << 14), 8);  // physical address, error type
        le(b, off + 16, 0x1000, 8);
        b[off + 72] = 3;                            // multi-bit ECC
        break;
      case Kind::Pcie:
        guid(b, d + 16, 0xd995e954, 0xbbc1, 0x430f, {0xad, 0x91, 0xb4, 0x4d, 0xcb, 0x3c, 0x6f, 0x35});
        le(b, off + 0, 1u | (1u << 3), 8);  // port type, device id
        le(b, off + 8, 0, 4);               // PCIe endpoint
        le(b, off + 24, 0x8086, 2);
        le(b, off + 26, 0x0bd5, 2);
        break;
      case Kind::Unknown:
        guid(b, d + 16, 0x01020304, 0x0506, 0x0708, {9, 10, 11, 12, 13, 14, 15, 16});
        break;
    }
    le(b, d + 48, i == 0 ? severity : 2, 4);  // section severity
    std::memcpy(b.data() + d + 52, "GPU0", 4);  // FRU text
    off += sizes[i];
  }
  return b;
}

TEST(Cper, DecodesEachKnownSectionType) {
  auto b = record({Kind::Processor, Kind::Memory, Kind::Pcie, Kind::Unknown});
  cper::Record r = cper::decode(b.data(), b.size());
  EXPECT_TRUE(r.valid) << r.problem;
  EXPECT_EQ(r.revision, 0x0101);
  EXPECT_EQ(r.severity, 1u);
  EXPECT_EQ(r.timestamp, "2026-12-01 10:25:11");
  ASSERT_EQ(r.sections.size(), 4u);
  EXPECT_EQ(r.sections[0].type, "processor generic");
  EXPECT_EQ(r.sections[0].error, "TLB error during data write, target address 0xdead0000");
  EXPECT_EQ(r.sections[0].fru, "GPU0");
  EXPECT_EQ(r.sections[1].type, "platform memory");
  EXPECT_EQ(r.sections[1].error, "multi-bit ECC, physical address 0x1000");
  EXPECT_EQ(r.sections[1].severity, 2u);
  EXPECT_EQ(r.sections[2].type, "PCIe");
  EXPECT_EQ(r.sections[2].error, "PCIe endpoint, device 8086:0bd5");
  EXPECT_EQ(r.sections[3].type, "01020304-0506-0708-090a-0b0c0d0e0f10");
  const std::string s = cper::summarize(r);
  EXPECT_EQ(s.rfind("CPER 1.1, fatal, 2026-12-01 10:25:11, 4 sections: processor generic (fatal): TLB error", 0), 0u) << s;
  EXPECT_NE(s.find("platform memory (corrected): multi-bit ECC"), std::string::npos) << s;
  EXPECT_EQ(s.find("malformed"), std::string::npos) << s;
}

TEST(Cper, SaysWhatIsWrongWithAMalformedRecord) {
  auto b = record({Kind::Processor});
  EXPECT_EQ(cper::summarize(cper::decode(b.data(), 100)).rfind("not a CPER record: too short for a CPER header", 0), 0u);
  auto bad = b;
  bad[0] = 'X';
  EXPECT_EQ(cper::summarize(cper::decode(bad.data(), bad.size())), "not a CPER record: no CPER signature");
  bad = b;
  le(bad, 6, 0, 4);
  EXPECT_NE(cper::summarize(cper::decode(bad.data(), bad.size())).find("signature end is not 0xffffffff"),
            std::string::npos);
  // A record cut after its descriptor: the section lies outside what was given.
  cper::Record cut = cper::decode(b.data(), 128 + 72 + 10);
  EXPECT_FALSE(cut.valid);
  EXPECT_NE(cut.problem.find("only 210 bytes were given"), std::string::npos) << cut.problem;
  EXPECT_NE(cut.problem.find("lies outside the record"), std::string::npos) << cut.problem;
  ASSERT_EQ(cut.sections.size(), 1u);
  EXPECT_EQ(cut.sections[0].type, "processor generic");  // the descriptor still names it
  EXPECT_FALSE(cut.sections[0].decoded);
  // A section count far beyond the record: descriptors past the end are not read.
  bad = b;
  le(bad, 10, 65535, 2);
  cper::Record many = cper::decode(bad.data(), bad.size());
  EXPECT_NE(many.problem.find("the first 64 are shown"), std::string::npos) << many.problem;
  EXPECT_NE(many.problem.find("past the end of the record"), std::string::npos) << many.problem;
  // A section shorter than its type.
  bad = b;
  le(bad, 128 + 4, 100, 4);
  EXPECT_NE(cper::decode(bad.data(), bad.size()).problem.find("too short for its type (100 bytes)"), std::string::npos);
  // Non-BCD timestamp: no timestamp, no failure.
  bad = b;
  bad[24] = 0xff;
  EXPECT_EQ(cper::decode(bad.data(), bad.size()).timestamp, "");
  EXPECT_EQ(cper::summarize(cper::decode(nullptr, 500)).rfind("not a CPER record", 0), 0u);
}

// Every prefix and many random corruptions of valid records: the decoder must never read outside the
// bytes it is given (each input is copied into a vector of exactly its size, so ASan sees a read past
// it) and never crash. A bounded random-input test; tests/fuzz/cper_fuzz.cpp is the libFuzzer one.
TEST(Cper, SurvivesHostileRecords) {
  std::mt19937_64 rng(12345);
  const std::vector<std::vector<uint8_t>> seeds = {record({Kind::Processor}), record({Kind::Memory, Kind::Pcie}),
                                                   record({Kind::Unknown, Kind::Processor, Kind::Memory})};
  size_t decoded = 0;
  for (const auto& seed : seeds) {
    for (size_t n = 0; n <= seed.size(); ++n) {
      std::vector<uint8_t> in(seed.begin(), seed.begin() + static_cast<long>(n));
      decoded += !cper::summarize(cper::decode(in.data(), in.size())).empty();
    }
    for (int round = 0; round < 20000; ++round) {
      std::vector<uint8_t> in = seed;
      const int flips = 1 + static_cast<int>(rng() % 8);
      for (int f = 0; f < flips; ++f) {
        size_t at = rng() % in.size();
        // Bias toward the header and descriptor fields that steer the decoder.
        if (rng() % 2) at = rng() % std::min<size_t>(in.size(), 128 + 72 * 3);
        in[at] = static_cast<uint8_t>(rng());
      }
      in.resize(rng() % 4 == 0 ? rng() % (in.size() + 1) : in.size());
      decoded += !cper::summarize(cper::decode(in.data(), in.size())).empty();
    }
  }
  EXPECT_GT(decoded, 60000u);
}

TEST(DeviceReport, SummaryNamesStateCountersRecordsAndGaps) {
  zex::DeviceReport r;
  r.device = "zex-cpu (PoCL cpu)";
  r.state = "reset needed (wedged: the hardware is hung); repair: not supported";
  r.counters.push_back({"uncorrectable", "reset", 0, 1});
  zex::DeviceRecord rec;
  rec.format = "CPER";
  rec.summary = "CPER 1.1, fatal, 1 section: processor generic (fatal)";
  r.records.push_back(rec);
  r.notes.push_back("RAS correctable: zesRasGetState answered ZE_RESULT_ERROR_UNKNOWN");
  const std::string s = r.summary();
  EXPECT_EQ(s.rfind("Device report for 'zex-cpu (PoCL cpu)': state: reset needed (wedged", 0), 0u) << s;
  EXPECT_NE(s.find("RAS uncorrectable reset: 0 -> 1 since the context was created."), std::string::npos) << s;
  EXPECT_NE(s.find("CPER record: CPER 1.1, fatal"), std::string::npos) << s;
  EXPECT_NE(s.find("(RAS correctable: zesRasGetState answered"), std::string::npos) << s;
  zex::DeviceReport none;
  none.state = "unavailable";
  none.info_log = "info log: not offered by the driver";
  EXPECT_NE(none.summary().find("info log: not offered by the driver."), std::string::npos) << none.summary();
}

TEST(DeviceReport, AZeErrorCarriesAGivenReportInWhat) {
  auto rep = std::make_shared<zex::DeviceReport>();
  rep->device = "gpu";
  rep->state = "no reset needed; repair: not supported";
  zex::ZeError e(rep, ZE_RESULT_ERROR_DEVICE_LOST, "zeEventHostSynchronize", "waiting for a zex::Stream");
  ASSERT_NE(e.device_report(), nullptr);
  EXPECT_EQ(e.device_report()->device, "gpu");
  const std::string m = e.what();
  EXPECT_NE(m.find("zeEventHostSynchronize failed with ZE_RESULT_ERROR_DEVICE_LOST"), std::string::npos) << m;
  EXPECT_NE(m.find("\nDevice report for 'gpu': state: no reset needed"), std::string::npos) << m;
  zex::ZeError copy = e;  // thrown exceptions are copied: the report goes along
  EXPECT_EQ(copy.device_report(), e.device_report());
}

TEST(DeviceReport, OtherErrorsNeverCollect) {
  zex::ZeError other(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, "zeFoo");
  EXPECT_EQ(other.device_report(), nullptr);
  EXPECT_EQ(std::string(other.what()).find("Device report"), std::string::npos);
}

}  // namespace
