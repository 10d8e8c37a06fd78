// The string-wrapping pass (src/spirv/passes/strings.cpp) on real modules: clang-15 with and without -g,
// compiler-style SPIR-V. After it, no argument of a zex call traces back to a plain [N x i8] variable
// (what IGC 1.0.12504 puts into .data.const.string), every call still receives the same bytes, printf
// never receives a wrapped string, the module stays valid, the merge still collapses the sites, and a
// second run changes nothing.
#include "passes_util.hpp"

#include <gtest/gtest.h>

#include <set>

using namespace passes_test;

namespace {

constexpr uint16_t kTypeArray = 28, kTypeStruct = 30, kTypePointer = 32, kConstant = 43, kConstantComposite = 44,
                   kSpecConstantOp = 52, kAccessChain = 65, kInBoundsPtrAccessChain = 70, kCopyObject = 83,
                   kBitcast = 124, kSelect = 169;
constexpr uint32_t kPrintf = 184;  // OpenCL.std printf

const char* const kModules[] = {"gather17",       "gather17_g",       "stencil2d_g",  "vadd",
                                "merge_patterns", "merge_patterns_g", "abi_calls",    "abi_sequence",
                                "compiler_style", "compiler_style_sites", "strings_shared", "strings_shared_g",
                                "strings_compiler"};

// A module-scope variable an argument traces back to: its pointee's opcode and its bytes.
struct Source {
  uint32_t var;
  uint16_t pointee;  // kTypeArray or kTypeStruct
  std::string bytes;
  bool operator<(const Source& o) const { return std::tie(pointee, bytes, var) < std::tie(o.pointee, o.bytes, o.var); }
};

class Tracer {
 public:
  explicit Tracer(const Module& m) : m_(m), defs_(definitions(m)) {}

  // The module-scope variables `id` may point into, through the address computations compilers emit.
  std::set<Source> sources(uint32_t id) const {
    std::set<Source> out;
    std::set<uint32_t> seen;
    walk(id, out, seen);
    return out;
  }

  // The variable's initializer bytes (through the struct wrapper), empty if it has none.
  std::string bytes_of(const Instruction& var) const {
    const Instruction* init = get(var.word(4));
    if (init && init->opcode == kConstantComposite && init->size() == 4) {
      const Instruction* inner = get(init->words[3]);
      if (inner && inner->opcode == kConstantComposite) init = inner;
    }
    std::string b;
    if (!init) return b;
    for (size_t k = 3; k < init->size(); ++k) {
      const Instruction* c = get(init->words[k]);
      b.push_back(c && c->opcode == kConstant ? static_cast<char>(c->words[3]) : '\0');
    }
    return b;
  }

  const Instruction* get(uint32_t id) const {
    auto it = defs_.find(id);
    return it == defs_.end() ? nullptr : &it->second;
  }

 private:
  void walk(uint32_t id, std::set<Source>& out, std::set<uint32_t>& seen) const {
    if (!seen.insert(id).second) return;
    const Instruction* d = get(id);
    if (!d) return;
    const uint16_t o = d->opcode == kSpecConstantOp ? static_cast<uint16_t>(d->word(3)) : d->opcode;
    const size_t first = d->opcode == kSpecConstantOp ? 4 : 3;
    if (d->opcode == spv::OpVariable) {
      const Instruction* p = get(d->type_id);
      const Instruction* t = p && p->opcode == kTypePointer ? get(p->word(3)) : nullptr;
      if (t && (t->opcode == kTypeArray || t->opcode == kTypeStruct)) out.insert({id, t->opcode, bytes_of(*d)});
    } else if ((o >= kAccessChain && o <= kInBoundsPtrAccessChain) || o == kCopyObject || o == kBitcast) {
      walk(d->word(first), out, seen);
    } else if (o == spv::OpPhi) {
      for (size_t k = 3; k + 1 < d->size(); k += 2) walk(d->words[k], out, seen);
    } else if (o == kSelect) {
      walk(d->word(4), out, seen);
      walk(d->word(5), out, seen);
    }
  }

  const Module& m_;
  std::map<uint32_t, Instruction> defs_;
};

std::vector<Instruction> zex_calls(const Module& m) {
  std::vector<Instruction> calls;
  for (const char* f : {"zex_report_exception", "zex_report_exception_values", "zex_report_frame", "zex_signal_exception",
                        "zex_throw"})
    for (Instruction& c : calls_to(m, f)) calls.push_back(c);
  return calls;
}

// Per zex call and argument (in order): the bytes the argument may point at.
std::vector<std::set<std::string>> zex_argument_bytes(const Module& m) {
  const Tracer t(m);
  std::vector<std::set<std::string>> out;
  for (const Instruction& c : zex_calls(m))
    for (size_t w = 4; w < c.size(); ++w) {
      std::set<std::string> b;
      for (const Source& s : t.sources(c.words[w])) b.insert(s.bytes);
      out.push_back(b);
    }
  return out;
}

std::vector<std::string> zex_names(const Module& m) {
  std::vector<std::string> names;
  for (const Instruction& i : m.insts)
    if (i.opcode == spv::OpName && i.string_at(2).rfind("__zex_str_", 0) == 0) names.push_back(i.string_at(2));
  return names;
}

TEST(WrapZexStrings, NoZexArgumentTracesToAPlainByteArray) {
  for (const char* name : kModules) {
    SCOPED_TRACE(name);
    const auto w = kernel(name);
    const Module before = zex::passes::parse(w);
    const auto wrapped = zex::passes::wrap_zex_strings(w);
    const Module after = zex::passes::parse(wrapped);
    EXPECT_NO_THROW(zex::detail::validate_spirv(wrapped, "wrapped"));
    // The test is not vacuous: before the pass, zex calls took plain strings.
    size_t plain_before = 0;
    const Tracer tb(before), ta(after);
    for (const Instruction& c : zex_calls(before))
      for (size_t k = 4; k < c.size(); ++k)
        for (const Source& s : tb.sources(c.words[k])) plain_before += s.pointee == kTypeArray;
    EXPECT_GT(plain_before, 0u);
    for (const Instruction& c : zex_calls(after))
      for (size_t k = 4; k < c.size(); ++k)
        for (const Source& s : ta.sources(c.words[k]))
          EXPECT_EQ(s.pointee, kTypeStruct) << "a zex argument still points into the plain array %" << s.var;
    // Same bytes per call and argument.
    EXPECT_EQ(zex_argument_bytes(after), zex_argument_bytes(before));
    // Idempotent.
    EXPECT_EQ(zex::passes::wrap_zex_strings(wrapped), wrapped);
    // Unique names, one per wrapped variable, and zex_strings lists exactly them.
    const auto names = zex_names(after);
    EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
    const auto listed = zex::passes::zex_strings(after);
    EXPECT_EQ(listed.size(), names.size());
  }
}

// printf must never receive a wrapped string (IGC 2.17+ would put it into .data.const.string again).
TEST(WrapZexStrings, PrintfKeepsItsOwnString) {
  for (const char* name : {"strings_shared", "strings_shared_g", "strings_compiler"}) {
    SCOPED_TRACE(name);
    const auto w = kernel(name);
    const Module after = zex::passes::parse(zex::passes::wrap_zex_strings(w));
    const Tracer t(after);
    size_t printf_strings = 0;
    for (const Instruction& i : after.insts) {
      if (i.opcode != spv::OpExtInst || i.word(4) != kPrintf) continue;
      for (size_t k = 5; k < i.size(); ++k)
        for (const Source& s : t.sources(i.words[k])) {
          EXPECT_EQ(s.pointee, kTypeArray) << "printf takes the wrapped %" << s.var;
          ++printf_strings;
        }
    }
    EXPECT_GT(printf_strings, 0u);
  }
  // strings_shared: clang emits "BoundsError" once for printf and ZEX_THROW: it is copied, not moved,
  // and so is the named __constant string the kernel also reads.
  const Module after = zex::passes::parse(zex::passes::wrap_zex_strings(kernel("strings_shared")));
  const Tracer t(after);
  std::multiset<std::string> plain, wrapped;
  for (const Instruction& i : after.insts)
    if (i.opcode == spv::OpVariable && i.size() == 5) {
      const Instruction* p = t.get(i.type_id);
      const Instruction* ty = p ? t.get(p->word(3)) : nullptr;
      if (ty && ty->opcode == kTypeArray) plain.insert(t.bytes_of(i));
      if (ty && ty->opcode == kTypeStruct) wrapped.insert(t.bytes_of(i));
    }
  const std::string bounds("BoundsError", 12), domain("DomainError", 12);
  EXPECT_EQ(plain.count(bounds), 1u);
  EXPECT_EQ(wrapped.count(bounds), 1u);
  EXPECT_EQ(plain.count(domain), 1u);
  EXPECT_EQ(wrapped.count(domain), 1u);
}

// The compiler-style shapes: what is wrapped, what stays, and the names and bytes the host is given.
TEST(WrapZexStrings, CompilerShapesAndWhatIsLeftAlone) {
  const auto w = kernel("strings_compiler");
  const auto linked = zex::detail::link_with_device_library(w);
  const auto strings = zex::detail::spirv_zex_strings(linked);
  std::vector<std::pair<std::string, std::string>> expect;
  int n = 0;
  for (const char* s : {"E1", "E2", "A", "F", "P", "G", "X", "U"})
    expect.push_back({"__zex_str_" + std::to_string(n++), std::string(s) + '\0'});
  EXPECT_EQ(strings, expect);
  const Module after = zex::passes::parse(zex::passes::wrap_zex_strings(w));
  const Tracer t(after);
  std::set<std::string> plain;
  for (const Instruction& i : after.insts) {
    if (i.opcode == spv::OpFunction) break;
    const Instruction* p = i.opcode == spv::OpVariable && i.size() == 5 ? t.get(i.type_id) : nullptr;
    const Instruction* ty = p ? t.get(p->word(3)) : nullptr;
    if (ty && ty->opcode == kTypeArray) plain.insert(t.bytes_of(i));
  }
  // Kept: printf's P, the kernel's own U, the exported X, the untraceable Q (a helper's parameter),
  // and the i32 array and the __global one, which are not strings.
  const std::set<std::string> kept{std::string("P", 2), std::string("U", 2), std::string("X", 2),
                                   std::string("Q", 2), std::string("\1\0\0\0\2\0\0\0", 2), std::string("Z", 2)};
  EXPECT_EQ(plain.size(), kept.size());
  for (const std::string& k : {std::string("P", 2), std::string("U", 2), std::string("X", 2), std::string("Q", 2)})
    EXPECT_EQ(plain.count(k), 1u) << k;
  EXPECT_EQ(zex::detail::spirv_zex_strings(w), (std::vector<std::pair<std::string, std::string>>{}));
}

// zex::Module's pipeline: wrapped and merged (the merge collapses as many sites as without the pass),
// valid, and listing its strings.
TEST(WrapZexStrings, LinkWrapsAndStillMerges) {
  for (const char* name : kModules) {
    SCOPED_TRACE(name);
    const auto w = kernel(name);
    // Without the throw-path numbering (which takes the strings of the sites it numbers into the host's
    // table), every string that reaches zex is wrapped; with it, each module either numbered its sites
    // or wrapped what is left.
    EXPECT_FALSE(zex::detail::spirv_zex_strings(zex::detail::link_with_device_library(w, nullptr, false)).empty())
        << "linked without the pass";
    const auto linked = zex::detail::link_module(w);
    EXPECT_TRUE(!linked.sites.empty() || !zex::detail::spirv_zex_strings(linked.words).empty());
    EXPECT_EQ(count_throws(zex::passes::merge_throw_sites(zex::passes::wrap_zex_strings(w))),
              count_throws(zex::passes::merge_throw_sites(w)));
  }
}

// Debug information stays sane: every <id> any instruction or annotation names is defined, and no
// line is lost.
TEST(WrapZexStrings, DebugInformationTravels) {
  for (const char* name : {"gather17_g", "strings_shared_g", "merge_patterns_g"}) {
    SCOPED_TRACE(name);
    const Module before = zex::passes::parse(kernel(name));
    const Module after = zex::passes::parse(zex::passes::wrap_zex_strings(kernel(name)));
    std::set<uint32_t> defined;
    size_t lines_before = 0, lines_after = 0;
    for (const Instruction& i : after.insts) {
      if (i.result_id) defined.insert(i.result_id);
      lines_after += i.annotations.size();
    }
    for (const Instruction& i : before.insts) lines_before += i.annotations.size();
    EXPECT_GE(lines_after, lines_before);
    auto check = [&](const Instruction& i, auto& self) -> void {
      for (uint32_t id : i.used_ids()) EXPECT_TRUE(defined.count(id)) << "undefined %" << id << " in opcode " << i.opcode;
      for (const Instruction& a : i.annotations) self(a, self);
    };
    for (const Instruction& i : after.insts) check(i, check);
  }
}

}  // namespace
