// The IR context the passes share (docs/spirv-passes.md, "The IR context"): one parsed module per link
// and the analyses of it that several passes need, each built on first use and dropped when a pass
// reports that it changed the module. A pass takes the context and returns a Status; the pipeline
// parses the user's module once into a context, runs the passes on it, and serialises it once.
//
// Contract of a pass: it reads through the analyses, writes through module(), and returns
// Status::Changed if it wrote anything (the context then drops every analysis: they are cheap next to
// the passes, and a pass that changes the module usually moves instructions, so indexes go stale). A
// pass that declines a shape throws before it writes, so that the module is as it was.
#pragma once

#include "spirv/ir.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace zex {
namespace passes {

/// What a pass did.
enum class Status { Unchanged, Changed };

inline Status changed_if(bool changed) { return changed ? Status::Changed : Status::Unchanged; }

class IRContext {
 public:
  /// A function of the module: m.insts[first] is its OpFunction, m.insts[last] its OpFunctionEnd.
  struct FunctionRange {
    uint32_t id;
    size_t first, last;
    bool defined;  // has blocks (not an import's declaration)
  };

  IRContext();
  explicit IRContext(Module m);
  ~IRContext();
  /// @throws std::invalid_argument if `words` is not a well-formed binary (parse())
  static IRContext from_words(const std::vector<uint32_t>& words) { return IRContext(parse(words)); }

  IRContext(IRContext&&) noexcept;
  IRContext& operator=(IRContext&&) noexcept;

  const Module& module() const { return m_; }
  /// The module to write to; a pass that writes reports Status::Changed (or calls invalidate()).
  Module& module() { return m_; }
  /// The module, taken out of the context (which is left empty).
  Module release();
  /// The module as words (to_words()).
  std::vector<uint32_t> words() const { return to_words(m_); }

  /// Records what a pass returned: a change drops the analyses. Returns `s`.
  Status record(Status s);
  /// Drops every analysis (after a change made outside a pass).
  void invalidate();

  // ---- analyses, each built on first use ----
  /// The instruction that defines `id` (nullptr: none), and its index in module().insts (npos: none).
  const Instruction* def(uint32_t id);
  static constexpr size_t npos = static_cast<size_t>(-1);
  size_t def_index(uint32_t id);
  /// The indices in module().insts of the OpDecorate/OpDecorateId/OpDecorateString/OpMemberDecorate
  /// whose target is `id`, in module order.
  const std::vector<size_t>& decorations(uint32_t id);
  /// Every OpName of `id` (OpName may repeat), in module order.
  const std::vector<std::string>& names(uint32_t id);
  /// The module's functions, in order (a function without OpFunctionEnd ends the list).
  const std::vector<FunctionRange>& functions();
  /// The functions (and variables) the module imports / exports (LinkageAttributes): id -> name.
  const std::map<uint32_t, std::string>& imports();
  const std::map<uint32_t, std::string>& exports();
  /// The entry points' functions.
  bool is_entry_point(uint32_t function);

  // ---- ids ----
  /// A new id: the module's bound, then the bound raised by one. Not an analysis: kept in the header.
  uint32_t take_id() { return m_.header[3]++; }
  uint32_t bound() const { return m_.header[3]; }

 private:
  struct Analyses;
  Analyses& analyses();

  Module m_;
  std::unique_ptr<Analyses> a_;
};

/// The value of `id` if it is a 32-bit OpConstant.
bool constant_u32(IRContext& ctx, uint32_t id, uint32_t* v);
/// The bytes (up to the first NUL) of the constant string whose address `id` is, through access chains
/// of zero indices, casts and their OpSpecConstantOp forms, to a variable with a constant initializer;
/// false if it cannot follow it (zex_throw's strings, an assert's expression).
bool constant_string(IRContext& ctx, uint32_t id, std::string* out);

/// Runs `pass` (Status(IRContext&)) on `m` through a context of its own: for a caller with a Module
/// (the tests, the word-level conveniences). Returns true if it changed the module.
template <class Pass>
bool run_on_module(Module& m, Pass&& pass) {
  IRContext ctx(std::move(m));
  struct Back {  // `m` gets the module back also when the pass throws
    IRContext& c;
    Module& m;
    ~Back() { m = c.release(); }
  } back{ctx, m};
  return pass(ctx) == Status::Changed;
}

}  // namespace passes
}  // namespace zex
