// libFuzzer target for the report decoder (src/runtime/decoder.hpp). The decoder's contract is
// that a report is hostile and so is the memory it points into, so both come from the fuzzer: the
// input is a zex_report_t plus a script for a fake address space whose MemoryReader lies.
//
// Input layout (docs/reliability.md, "Fuzzing the report decoder"):
//   [0, 512)  the report (a shorter input is zero-padded)
//   then, read front to back, each missing byte reading as 0:
//     u8 region count (mod 9), then per region: anchor, u8 size mode, u16 content length, content
//     u8 known-string count (mod 5), then per entry: anchor, u16 length, u8 flags, bytes
//     u8 launch level (as int8)
//     the rest: one byte per range() call and per read request, choosing how the oracle lies
//   where an anchor is u8 mode + u16 delta: an address taken from the report (or an absolute u64)
//   minus delta, so that regions and known strings land on or near the addresses the report holds.
//
// The oracle only ever hands out bytes from buffers it owns, each copied into a vector of exactly
// its size, so a decoder read past what it was given is an ASan report, not a silent pass.
#include "runtime/decoder.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace {

using zex::detail::kMaxString;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "decoder_fuzz: invariant violated: %s\n", what);
  std::abort();
}

#define FUZZ_CHECK(cond)         \
  do {                           \
    if (!(cond)) fail(#cond);    \
  } while (0)

// Reads the control bytes front to back (so hand-made seeds are easy to write); past the end every
// value is 0, which the oracle below treats as "tell the truth".
class Bytes {
 public:
  Bytes(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  bool empty() const { return n_ == 0; }
  uint8_t u8() {
    if (n_ == 0) return 0;
    --n_;
    return *p_++;
  }
  uint16_t u16() { return static_cast<uint16_t>(u8() | (u8() << 8)); }
  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(u8()) << (8 * i);
    return v;
  }
  // `n` content bytes; past the end of the input, `fill` (non-NUL, so that such content is an
  // unterminated string and exercises the kMaxString cut).
  std::vector<unsigned char> take(size_t n, unsigned char fill) {
    std::vector<unsigned char> v(n, fill);
    const size_t k = std::min(n, n_);
    std::copy(p_, p_ + k, v.begin());
    p_ += k;
    n_ -= k;
    return v;
  }

 private:
  const uint8_t* p_;
  size_t n_;
};

uint64_t anchor(Bytes& in, const zex_report_t& r) {
  const uint8_t mode = in.u8();
  const uint64_t delta = in.u16();
  uint64_t a = 0;
  switch (mode % 6) {
    case 0: a = r.name; break;
    case 1: a = r.reason; break;
    case 2: a = r.frames[0].function; break;
    case 3: a = r.frames[0].file; break;
    case 4: a = r.frames[in.u8() % ZEX_MAX_FRAMES].file; break;
    default: a = in.u64(); break;
  }
  return a - delta;  // wraps on purpose: regions just below 2^64 or straddling 0
}

struct Region {
  uint64_t base = 0, size = 0;           // what range() reports (may disagree with the content)
  std::vector<unsigned char> content;    // the bytes really owned at base
};

bool contains(uint64_t base, uint64_t size, uint64_t a) { return a >= base && a - base < size; }

class LyingMemory : public zex::detail::MemoryReader {
 public:
  LyingMemory(std::vector<Region> regions, Bytes script) : regions_(std::move(regions)), script_(script) {}

  std::optional<std::pair<uint64_t, uint64_t>> range(uint64_t a) override {
    FUZZ_CHECK(a != 0);  // 0 means "not recorded" in the ABI; it must never be looked up
    std::optional<std::pair<uint64_t, uint64_t>> rg;
    const uint8_t b = script_.u8();
    switch (b % 8) {
      case 0: rg = honest(a); break;
      case 1: break;  // no allocation
      case 2:         // some region, whether or not it contains a
        if (!regions_.empty()) {
          const Region& g = regions_[script_.u8() % regions_.size()];
          rg = std::make_pair(g.base, g.size);
        }
        break;
      case 3: rg = std::make_pair(a, uint64_t{0}); break;                       // empty
      case 4: rg = std::make_pair(a - script_.u8(), ~uint64_t{0} - script_.u8()); break;  // ~2^64
      case 5: rg = std::make_pair(a + 1 + script_.u8(), uint64_t{16}); break;   // starts past a
      case 6: {                                                                 // ends exactly at a
        const uint64_t k = script_.u8();
        rg = std::make_pair(a - k, k);
        break;
      }
      default: rg = std::make_pair(a, uint64_t{1} + script_.u8()); break;       // tiny
    }
    placed_[a] = rg;
    return rg;
  }

  void read(std::vector<zex::detail::ReadRequest>& reqs) override {
    FUZZ_CHECK(!reqs.empty());
    for (auto& q : reqs) {
      // The decoder may only ask for an address that range() placed inside a range, at most up to
      // that range's end, and at most kMaxString bytes.
      auto it = placed_.find(q.address);
      FUZZ_CHECK(it != placed_.end());
      FUZZ_CHECK(it->second.has_value());
      const uint64_t base = it->second->first, size = it->second->second;
      FUZZ_CHECK(contains(base, size, q.address));
      FUZZ_CHECK(q.size > 0);
      FUZZ_CHECK(q.size <= size - (q.address - base));
      FUZZ_CHECK(q.size <= kMaxString);
      FUZZ_CHECK(!q.ok && q.out.empty());

      const uint8_t b = script_.u8();
      switch (b % 6) {
        case 0: q.ok = give(q.address, q.size, q.out); break;  // truth, short if content is
        case 1: break;                                          // failed copy
        case 2: give(q.address, q.size, q.out); break;          // data, but reported failed
        case 3:                                                 // reported ok, cut short
          give(q.address, q.size, q.out);
          if (!q.out.empty()) q.out = exact(q.out.data(), script_.u8() % q.out.size());
          q.ok = true;
          break;
        case 4:  // bytes of some other region: wrong content, still owned
          if (!regions_.empty()) {
            const Region& g = regions_[script_.u8() % regions_.size()];
            q.out = exact(g.content.data(), std::min(q.size, g.content.size()));
          }
          q.ok = true;
          break;
        default:  // more than asked for
          q.ok = give(q.address, q.size + 1 + script_.u8(), q.out);
          break;
      }
    }
  }

 private:
  std::optional<std::pair<uint64_t, uint64_t>> honest(uint64_t a) const {
    for (const Region& g : regions_)
      if (contains(g.base, g.size, a)) return std::make_pair(g.base, g.size);
    return std::nullopt;
  }

  // A fresh vector of exactly n bytes (capacity n): ASan then flags any read past its end.
  static std::vector<unsigned char> exact(const unsigned char* p, size_t n) {
    std::vector<unsigned char> v;
    v.reserve(n);
    v.assign(p, p + n);
    return v;
  }

  // Up to n bytes from the owned content at address a; true if all n were available.
  bool give(uint64_t a, size_t n, std::vector<unsigned char>& out) const {
    for (const Region& g : regions_) {
      if (a < g.base || a - g.base >= g.content.size()) continue;
      const size_t off = static_cast<size_t>(a - g.base);
      const size_t k = std::min(n, g.content.size() - off);
      out = exact(g.content.data() + off, k);
      return k == n;
    }
    return false;
  }

  std::vector<Region> regions_;
  Bytes script_;
  std::map<uint64_t, std::optional<std::pair<uint64_t, uint64_t>>> placed_;
};

// A decoded string: printable ASCII only (escapes are printable), at most every byte of kMaxString
// escaped as \xNN plus the "..." of a cut string.
void check_string(const std::string& s) {
  FUZZ_CHECK(s.size() <= 4 * kMaxString + 3);
  for (unsigned char c : s) FUZZ_CHECK(c >= 0x20 && c < 0x7f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zex_report_t r{};
  std::memcpy(&r, data, std::min(size, sizeof r));
  Bytes in(size > sizeof r ? data + sizeof r : data, size > sizeof r ? size - sizeof r : 0);

  std::vector<Region> regions(in.u8() % 9);
  for (Region& g : regions) {
    g.base = anchor(in, r);
    const uint8_t size_mode = in.u8();
    g.content = in.take(in.u16() % 6000, 'x');
    switch (size_mode % 5) {
      case 0: g.size = g.content.size(); break;
      case 1: g.size = 0; break;
      case 2: g.size = ~uint64_t{0} - in.u16(); break;  // wraps past 2^64 from almost any base
      case 3: g.size = in.u16(); break;                 // unrelated to the content
      default: g.size = g.content.size() + in.u16(); break;  // claims more than it holds
    }
  }

  zex::detail::KnownStrings known;
  const size_t nknown = in.u8() % 5;
  for (size_t i = 0; i < nknown; ++i) {
    const uint64_t a = anchor(in, r);
    const size_t len = in.u16() % 5000;
    const uint8_t flags = in.u8();
    std::vector<unsigned char> b = in.take(len, 'k');
    std::string s(b.begin(), b.end());
    if (flags & 1) s.push_back('\0');  // else a string without its NUL (or empty)
    known.add(a, std::move(s));
  }
  // A throw-site table (ABI version 3): trusted host data, but its strings come from a user's module,
  // and a hostile report may name any site id.
  zex::detail::SiteTable sites(in.u8() % 4);
  for (zex::detail::ThrowSite& t : sites) {
    std::vector<unsigned char> n = in.take(in.u8(), 'n');
    t.name.assign(n.begin(), n.end());
    std::vector<unsigned char> why = in.take(in.u8(), 'r');
    t.reason.assign(why.begin(), why.end());
    t.frames.resize(in.u8() % 20);
    for (zex::Frame& f : t.frames) {
      std::vector<unsigned char> fn = in.take(in.u8() % 64, 'f');
      f.function.assign(fn.begin(), fn.end());
      f.line = in.u8();
    }
    t.depth = in.u16();
  }
  const bool with_sites = in.u8() & 1;
  const int launch_level = static_cast<int8_t>(in.u8());

  LyingMemory mem(std::move(regions), in);
  const zex::detail::DecodedReport d =
      zex::detail::decode_report(r, mem, known.empty() ? nullptr : &known, with_sites ? &sites : nullptr);

  FUZZ_CHECK(d.frame_count <= ZEX_MAX_FRAMES);
  FUZZ_CHECK(d.frames.size() <= ZEX_MAX_FRAMES);
  check_string(d.name);
  check_string(d.reason);
  for (const zex::Frame& f : d.frames) {
    check_string(f.function);
    check_string(f.file);
  }
  if (!zex::detail::known_abi_version(r.abi_version))  // an unknown layout is not interpreted past the version
    FUZZ_CHECK(d.name.empty() && d.reason.empty() && d.frames.empty() && d.value_count == 0);
  FUZZ_CHECK(d.value_count <= ZEX_MAX_VALUES);
  if (r.abi_version == 1) FUZZ_CHECK(d.value_count == 0);  // version 1 has no values, whatever its bytes
  if (r.abi_version < 3) FUZZ_CHECK(d.site == 0);           // nor a site before version 3

  const zex::KernelExceptionInfo info = zex::detail::exception_info(d, "fuzz_kernel", "fuzz device", launch_level);
  FUZZ_CHECK(info.debug_level >= 0 && info.debug_level <= 2);
  FUZZ_CHECK(info.frames.size() <= ZEX_MAX_FRAMES);
  FUZZ_CHECK(info.values.size() <= ZEX_MAX_VALUES);
  FUZZ_CHECK(info.thrower_count >= 1);

  const zex::KernelException e(info);
  // The message is the decoded strings plus zex's own text, whose only control byte is the newline.
  for (const char* p = e.what(); *p; ++p) {
    const unsigned char c = static_cast<unsigned char>(*p);
    FUZZ_CHECK(c == '\n' || (c >= 0x20 && c < 0x7f));
  }
  // To see what a seed decodes to: DECODER_FUZZ_PRINT=1 decoder_fuzz <file>.
  static const bool print = std::getenv("DECODER_FUZZ_PRINT") != nullptr;
  if (print) std::fprintf(stderr, "%s\n", e.what());
  return 0;
}
