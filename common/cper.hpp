// CPER, the UEFI Common Platform Error Record (UEFI specification 2.10, appendix N): its layout and a
// decoder for the records a driver's Info Log hands zex after a device is lost. Header-only so that the
// fuzzer and zex-cpu (which writes such records) use exactly this layout; included by src/ and tests,
// not by <zex/zex.hpp>.
//
// A record comes from firmware or a driver and may be cut short or corrupt, so it is read like a
// report (decoder.hpp): every field is read at a checked offset inside [0, size), never past it; a
// section is decoded only when its descriptor's offset and length lie inside both the record and its
// own Record Length; counts are clamped (kMaxSections). What cannot be decoded is said in words.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace zex {
namespace detail {
namespace cper {

// --- layout (offsets in bytes; every multi-byte field little-endian) -------------------------------
constexpr size_t kHeaderSize = 128;      // N.2.1 Record Header
constexpr size_t kDescriptorSize = 72;   // N.2.2 Section Descriptor
constexpr size_t kMaxSections = 64;      // more are counted, not decoded
constexpr uint32_t kSignature = 0x52455043;  // "CPER"
constexpr uint32_t kSignatureEnd = 0xffffffffu;

// Record header fields.
constexpr size_t kOffRevision = 4;        // u16: major in the high byte
constexpr size_t kOffSignatureEnd = 6;    // u32
constexpr size_t kOffSectionCount = 10;   // u16
constexpr size_t kOffSeverity = 12;       // u32
constexpr size_t kOffValidation = 16;     // u32: bit 1 = timestamp valid
constexpr size_t kOffRecordLength = 20;   // u32: header + descriptors + sections
constexpr size_t kOffTimestamp = 24;      // 8 bytes, BCD: s, min, h, flags, day, month, year, century
constexpr size_t kOffCreatorId = 64;      // GUID
constexpr size_t kOffNotificationType = 80;  // GUID
constexpr size_t kOffRecordId = 96;       // u64
// Section descriptor fields (relative to the descriptor).
constexpr size_t kOffSectionOffset = 0;   // u32, from the start of the record
constexpr size_t kOffSectionLength = 4;   // u32
constexpr size_t kOffSectionRevision = 8;  // u16
constexpr size_t kOffSectionType = 16;    // GUID
constexpr size_t kOffSectionSeverity = 48;  // u32
constexpr size_t kOffFruText = 52;        // 20 bytes of ASCII, NUL-padded

/// Error severities (record and section).
enum Severity : uint32_t { kRecoverable = 0, kFatal = 1, kCorrected = 2, kInformational = 3 };

/// A GUID as CPER stores it: Data1 (u32), Data2, Data3 (u16), little-endian, then 8 bytes.
struct Guid {
  uint32_t d1;
  uint16_t d2, d3;
  uint8_t d4[8];
  bool operator==(const Guid& o) const {
    return d1 == o.d1 && d2 == o.d2 && d3 == o.d3 && std::memcmp(d4, o.d4, 8) == 0;
  }
};

// Section types (N.2.2, table "Section Type Definitions").
constexpr Guid kProcessorGeneric{0x9876ccad, 0x47b4, 0x4bdb, {0xb6, 0x5e, 0x16, 0xf1, 0x93, 0xc4, 0xf3, 0xdb}};
constexpr Guid kPlatformMemory{0xa5bc1114, 0x6f64, 0x4ede, {0xb8, 0x63, 0x3e, 0x83, 0xed, 0x7c, 0x83, 0xb1}};
constexpr Guid kPcie{0xd995e954, 0xbbc1, 0x430f, {0xad, 0x91, 0xb4, 0x4d, 0xcb, 0x3c, 0x6f, 0x35}};

// Processor generic error section (N.2.4.1, 192 bytes).
constexpr size_t kProcessorGenericSize = 192;
constexpr size_t kOffProcValidation = 0;   // u64: bit 2 error type, bit 3 operation, bit 9 target address
constexpr size_t kOffProcErrorType = 10;   // u8: 1 cache, 2 TLB, 4 bus, 8 micro-architectural
constexpr size_t kOffProcOperation = 11;   // u8: 0 generic, 1 data read, 2 data write, 3 instruction execution
constexpr size_t kOffProcBrand = 24;       // 128 bytes of ASCII (validation bit 7)
constexpr size_t kOffProcTargetAddress = 160;  // u64
// Platform memory error section (N.2.5, 80 bytes).
constexpr size_t kMemorySize = 80;
constexpr size_t kOffMemValidation = 0;    // u64: bit 1 physical address, bit 14 error type
constexpr size_t kOffMemPhysicalAddress = 16;  // u64
constexpr size_t kOffMemErrorType = 72;    // u8
// PCI Express error section (N.2.7, 208 bytes).
constexpr size_t kPcieSize = 208;
constexpr size_t kOffPcieValidation = 0;   // u64: bit 0 port type, bit 3 device id
constexpr size_t kOffPciePortType = 8;     // u32
constexpr size_t kOffPcieVendorId = 24;    // u16 (device id structure)
constexpr size_t kOffPcieDeviceId = 26;    // u16

// --- decoding -------------------------------------------------------------------------------------

/// A bounded view of the record: every read names its offset and fails past the end.
class View {
 public:
  View(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  size_t size() const { return n_; }
  bool has(size_t off, size_t len) const { return off <= n_ && len <= n_ - off; }
  uint64_t le(size_t off, size_t len) const {  // callers check has() first
    uint64_t v = 0;
    for (size_t i = 0; i < len; ++i) v |= static_cast<uint64_t>(p_[off + i]) << (8 * i);
    return v;
  }
  Guid guid(size_t off) const {
    Guid g{static_cast<uint32_t>(le(off, 4)), static_cast<uint16_t>(le(off + 4, 2)),
           static_cast<uint16_t>(le(off + 6, 2)), {}};
    std::memcpy(g.d4, p_ + off + 8, 8);
    return g;
  }
  const uint8_t* at(size_t off) const { return p_ + off; }

 private:
  const uint8_t* p_;
  size_t n_;
};

inline const char* severity_name(uint32_t s) {
  switch (s) {
    case kRecoverable: return "recoverable";
    case kFatal: return "fatal";
    case kCorrected: return "corrected";
    case kInformational: return "informational";
    default: return "unknown severity";
  }
}

inline std::string guid_string(const Guid& g) {
  char b[40];
  std::snprintf(b, sizeof b, "%08x-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x", g.d1, g.d2, g.d3, g.d4[0],
                g.d4[1], g.d4[2], g.d4[3], g.d4[4], g.d4[5], g.d4[6], g.d4[7]);
  return b;
}

inline const char* processor_error_type(uint64_t t) {
  switch (t) {
    case 0x01: return "cache error";
    case 0x02: return "TLB error";
    case 0x04: return "bus error";
    case 0x08: return "micro-architectural error";
    default: return nullptr;
  }
}

inline const char* processor_operation(uint64_t o) {
  switch (o) {
    case 0: return "generic";
    case 1: return "data read";
    case 2: return "data write";
    case 3: return "instruction execution";
    default: return nullptr;
  }
}

inline const char* memory_error_type(uint64_t t) {
  static const char* const names[] = {"unknown",
                                      "no error",
                                      "single-bit ECC",
                                      "multi-bit ECC",
                                      "single-symbol chipkill ECC",
                                      "multi-symbol chipkill ECC",
                                      "master abort",
                                      "target abort",
                                      "parity error",
                                      "watchdog timeout",
                                      "invalid address",
                                      "mirror broken",
                                      "memory sparing",
                                      "scrub corrected error",
                                      "scrub uncorrected error",
                                      "physical memory map-out event"};
  return t < sizeof names / sizeof names[0] ? names[t] : nullptr;
}

inline const char* pcie_port_type(uint64_t t) {
  switch (t) {
    case 0: return "PCIe endpoint";
    case 1: return "legacy PCI endpoint";
    case 4: return "root port";
    case 5: return "upstream switch port";
    case 6: return "downstream switch port";
    case 7: return "PCIe to PCI/PCI-X bridge";
    case 8: return "PCI/PCI-X to PCIe bridge";
    case 9: return "root complex integrated endpoint";
    case 10: return "root complex event collector";
    default: return nullptr;
  }
}

inline std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

/// One decoded section.
struct Section {
  std::string type;       // "processor generic", "platform memory", "PCIe", or the type GUID
  uint32_t severity = 0;
  std::string error;      // what the section says went wrong, in words ("" if it says nothing)
  std::string fru;        // the FRU text, printable ASCII only
  bool decoded = false;   // the section's body lay inside the record and was read
};

/// What a record says; `problem` is non-empty when it is not (wholly) a well-formed CPER record.
struct Record {
  bool recognized = false;      // a 128-byte header with the "CPER" signature was found
  bool valid = false;           // and everything else is as the specification says
  uint16_t revision = 0;
  uint32_t severity = 0;
  uint32_t section_count = 0;   // as the header says
  uint32_t record_length = 0;
  std::string timestamp;        // "2026-12-01 10:25:11" when marked valid and well-formed BCD
  std::vector<Section> sections;
  std::string problem;
};

inline int bcd(uint8_t b) { return (b >> 4) <= 9 && (b & 15) <= 9 ? (b >> 4) * 10 + (b & 15) : -1; }

inline std::string decode_timestamp(const View& v) {
  int s = bcd(v.at(kOffTimestamp)[0]), mi = bcd(v.at(kOffTimestamp)[1]), h = bcd(v.at(kOffTimestamp)[2]);
  int d = bcd(v.at(kOffTimestamp)[4]), mo = bcd(v.at(kOffTimestamp)[5]), y = bcd(v.at(kOffTimestamp)[6]);
  int c = bcd(v.at(kOffTimestamp)[7]);
  if (s < 0 || s > 59 || mi < 0 || mi > 59 || h < 0 || h > 23 || d < 1 || d > 31 || mo < 1 || mo > 12 || y < 0 ||
      c < 0)
    return {};
  char b[32];
  std::snprintf(b, sizeof b, "%02d%02d-%02d-%02d %02d:%02d:%02d", c, y, mo, d, h, mi, s);
  return b;
}

inline void decode_body(const View& v, size_t off, size_t len, Section& s, const Guid& type) {
  if (type == kProcessorGeneric) {
    s.type = "processor generic";
    if (len < kProcessorGenericSize) return;
    s.decoded = true;
    const uint64_t valid = v.le(off + kOffProcValidation, 8);
    std::string e;
    if (valid & (1u << 2)) {
      const uint64_t t = v.le(off + kOffProcErrorType, 1);
      const char* n = processor_error_type(t);
      e = n ? n : "error type " + hex(t);
    }
    if (valid & (1u << 3)) {
      const char* n = processor_operation(v.le(off + kOffProcOperation, 1));
      if (n) e += std::string(e.empty() ? "" : " ") + "during " + n;
    }
    if (valid & (1u << 9)) e += std::string(e.empty() ? "" : ", ") + "target address " + hex(v.le(off + kOffProcTargetAddress, 8));
    if (valid & (1u << 7)) {
      std::string brand;
      for (size_t k = 0; k < 128; ++k) {
        const uint8_t c = v.at(off + kOffProcBrand)[k];
        if (c == 0) break;
        brand += c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?';
      }
      if (!brand.empty()) e += std::string(e.empty() ? "" : ", ") + "processor \"" + brand + "\"";
    }
    s.error = e;
  } else if (type == kPlatformMemory) {
    s.type = "platform memory";
    if (len < kMemorySize) return;
    s.decoded = true;
    const uint64_t valid = v.le(off + kOffMemValidation, 8);
    std::string e;
    if (valid & (1u << 14)) {
      const uint64_t t = v.le(off + kOffMemErrorType, 1);
      const char* n = memory_error_type(t);
      e = n ? n : "memory error type " + hex(t);
    }
    if (valid & (1u << 1)) e += std::string(e.empty() ? "" : ", ") + "physical address " + hex(v.le(off + kOffMemPhysicalAddress, 8));
    s.error = e;
  } else if (type == kPcie) {
    s.type = "PCIe";
    if (len < kPcieSize) return;
    s.decoded = true;
    const uint64_t valid = v.le(off + kOffPcieValidation, 8);
    std::string e;
    if (valid & 1u) {
      const uint64_t t = v.le(off + kOffPciePortType, 4);
      const char* n = pcie_port_type(t);
      e = n ? n : "port type " + hex(t);
    }
    if (valid & (1u << 3)) {
      char b[32];
      std::snprintf(b, sizeof b, "device %04x:%04x", static_cast<unsigned>(v.le(off + kOffPcieVendorId, 2)),
                    static_cast<unsigned>(v.le(off + kOffPcieDeviceId, 2)));
      e += std::string(e.empty() ? "" : ", ") + b;
    }
    s.error = e;
  } else {
    s.type = guid_string(type);
  }
}

/// Decodes `size` bytes at `p`. Never reads outside [p, p + size); never throws but std::bad_alloc.
inline Record decode(const uint8_t* p, size_t size) {
  Record r;
  View v(p, p ? size : 0);
  if (!v.has(0, kHeaderSize)) {
    r.problem = "too short for a CPER header (" + std::to_string(v.size()) + " of 128 bytes)";
    return r;
  }
  if (v.le(0, 4) != kSignature) {
    r.problem = "no CPER signature";
    return r;
  }
  r.recognized = true;
  r.revision = static_cast<uint16_t>(v.le(kOffRevision, 2));
  r.section_count = static_cast<uint32_t>(v.le(kOffSectionCount, 2));
  r.severity = static_cast<uint32_t>(v.le(kOffSeverity, 4));
  r.record_length = static_cast<uint32_t>(v.le(kOffRecordLength, 4));
  if (v.le(kOffValidation, 4) & 2u) r.timestamp = decode_timestamp(v);
  std::string problems;
  auto note = [&](const std::string& s) { problems += (problems.empty() ? "" : "; ") + s; };
  if (v.le(kOffSignatureEnd, 4) != kSignatureEnd) note("signature end is not 0xffffffff");
  // Sections are read only inside the smaller of the bytes given and the length the record claims.
  size_t limit = v.size();
  if (r.record_length < kHeaderSize) {
    note("record length " + std::to_string(r.record_length) + " is shorter than the header");
  } else if (r.record_length > v.size()) {
    note("record length " + std::to_string(r.record_length) + " but only " + std::to_string(v.size()) +
         " bytes were given");
  } else {
    limit = r.record_length;
  }
  const View in(p, limit);
  const size_t n = r.section_count < kMaxSections ? r.section_count : kMaxSections;
  if (r.section_count > kMaxSections) note(std::to_string(r.section_count) + " sections; the first 64 are shown");
  for (size_t i = 0; i < n; ++i) {
    const size_t d = kHeaderSize + i * kDescriptorSize;
    if (!in.has(d, kDescriptorSize)) {
      note("section descriptor " + std::to_string(i) + " lies past the end of the record");
      break;
    }
    Section s;
    const Guid type = in.guid(d + kOffSectionType);
    s.severity = static_cast<uint32_t>(in.le(d + kOffSectionSeverity, 4));
    for (size_t k = 0; k < 20; ++k) {
      const uint8_t c = in.at(d + kOffFruText)[k];
      if (c == 0) break;
      if (c >= 0x20 && c < 0x7f) s.fru += static_cast<char>(c);
    }
    const uint64_t off = in.le(d + kOffSectionOffset, 4), len = in.le(d + kOffSectionLength, 4);
    if (!in.has(off, len) || off < kHeaderSize) {
      decode_body(in, 0, 0, s, type);  // names the type only
      note("section " + std::to_string(i) + " (offset " + std::to_string(off) + ", length " + std::to_string(len) +
           ") lies outside the record");
    } else {
      decode_body(in, off, len, s, type);
      if (!s.decoded && (type == kProcessorGeneric || type == kPlatformMemory || type == kPcie))
        note("section " + std::to_string(i) + " is too short for its type (" + std::to_string(len) + " bytes)");
    }
    r.sections.push_back(std::move(s));
  }
  r.valid = problems.empty();
  r.problem = problems;
  return r;
}

/// One line: "CPER 1.1, fatal, 1 section: processor generic (fatal): micro-architectural error during
/// instruction execution [FRU zex-cpu]"; a malformed record says so first.
inline std::string summarize(const Record& r) {
  if (!r.recognized) return "not a CPER record: " + r.problem;
  std::string s = "CPER " + std::to_string(r.revision >> 8) + "." + std::to_string(r.revision & 0xff) + ", " +
                  severity_name(r.severity);
  if (!r.timestamp.empty()) s += ", " + r.timestamp;
  s += ", " + std::to_string(r.section_count) + (r.section_count == 1 ? " section" : " sections");
  for (size_t i = 0; i < r.sections.size(); ++i) {
    const Section& x = r.sections[i];
    s += (i == 0 ? ": " : "; ") + x.type + " (" + severity_name(x.severity) + ")";
    if (!x.error.empty()) s += ": " + x.error;
    if (!x.fru.empty()) s += " [FRU " + x.fru + "]";
  }
  if (!r.problem.empty()) s += " (malformed: " + r.problem + ")";
  return s;
}

}  // namespace cper
}  // namespace detail
}  // namespace zex
