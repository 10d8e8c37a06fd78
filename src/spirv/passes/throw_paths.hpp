// number_throw_paths's parts (throw_paths.cpp has the whole story), one concern each:
//   throw_graph.cpp      the functions, their calls and which of them may throw (CallGraph)
//   throw_sites.cpp      what a zex_throw call says: its strings, line and frames (SiteReader)
//   throw_numbering.cpp  throw-path ids: paths per function, the table (number_paths)
//   throw_module.cpp     the module-level rewrite: new types, constants, function types, the
//                        zex_throw_site declaration, the write-back (Rewriter)
//   throw_rewrite.cpp    the rewrite of one function: flag returns, flag checks, zex_throw_site calls
// Private to src/spirv/passes/.
#pragma once

#include "spirv/context.hpp"
#include "spirv/ir.hpp"

#include <zex/detail/sites.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace zex {
namespace passes {
namespace throw_paths {

using Insts = std::vector<Instruction>;

// More ids than this in one module and the numbering is dropped (the flags stay): paths multiply
// through shared helpers, and the host keeps one table entry per path.
constexpr uint64_t kMaxPaths = 1u << 16;

// Where an instruction is, as the debug information says.
struct Loc {
  uint32_t scope = 0, inlined = 0;  // DebugScope operands (0: none)
  uint32_t file = 0, line = 0;      // OpLine (file: an OpString id; 0: none)
};

struct Call {
  size_t block, index;  // position in the function's blocks at analysis time
  uint32_t callee;      // a defined function, or a zex import
  Loc loc;
};

struct Function {
  uint32_t id = 0;
  size_t first = 0, last = 0;  // OpFunction, OpFunctionEnd in m.insts
  bool entry = false, wrapper = false;
  bool kernel_body = false;  // the function an entry-point wrapper calls: a kernel in all but name
  Insts head;  // OpFunctionParameters
  std::vector<Block> blocks;
  std::vector<Call> calls;  // to defined functions and to zex throw entry points, in body order
  bool may_throw = false;  // returns the flag (not a kernel)
  bool throws = false;     // calls a throw entry point, or a function that may throw
  // Numbering (identified sites and calls to functions with paths, in body order):
  uint64_t paths = 0;
  uint64_t reach = 0;  // paths from kernels to here
  bool hidden = false;  // takes its base as a hidden last parameter
  uint32_t base_param = 0;
  uint64_t base = 0;    // reach == 1: the constant base of its ids
};

// The module's defined functions (copied out of the module: the rewrite works on the copies), their
// calls, and which may throw (throw_graph.cpp).
struct CallGraph {
  std::map<uint32_t, std::string> throw_entry;  // zex's throw entry points the module imports: id -> name
  std::vector<Function> fns;
  std::map<uint32_t, size_t> fn_index;  // function id -> index in fns
  uint32_t debug_set = 0;               // the OpenCL.DebugInfo.100 import (0: none)

  /// Builds the graph. False: nothing to do (no throw entry point), or a shape the pass leaves alone
  /// (recursion, a kernel called as a function, a malformed function).
  bool build(IRContext& ctx);
  bool is_debug(const Instruction& i, uint32_t which) const {
    return i.opcode == spv::OpExtInst && debug_set && i.word(3) == debug_set && i.word(4) == which;
  }
  // zex_throw, zex_throw_site, and the three-call protocol's last call: the throw is complete.
  bool completes_throw(uint32_t callee) const;
  bool has_throw_call(const Function& f) const;

 private:
  bool collect_functions(IRContext& ctx);
  bool mark_may_throw();
};

// The sites of one zex_throw call. clang -O2 sinks the throws of several checks into one call whose
// strings and line are OpPhis of constants (over the predecessors of the call's block) or OpSelects
// (of one condition): each choice is a site, the same choice twice one site, and the call's id is
// chosen on the device the same way (an OpPhi or OpSelect of the sites' ids).
struct Sites {
  std::vector<detail::ThrowSite> sites;
  std::vector<uint32_t> preds;  // OpPhi: the predecessor of each choice
  uint32_t cond = 0;            // OpSelect: its condition (choice 0: true)
  std::vector<size_t> site_of;  // choice -> index in sites
};

// Reads what the module says about a throw: constant strings, names, debug scopes (throw_sites.cpp).
class SiteReader {
 public:
  // `renamed`: functions whose frames say another name than their OpName (kernel_calls.cpp's copies).
  SiteReader(IRContext& ctx, const CallGraph& g, const std::map<uint32_t, std::string>& renamed)
      : ctx_(ctx), g_(g), renamed_(renamed) {}
  /// The sites of zex_throw call `c` of `f`; false if it is not one whose strings and line are constants.
  bool identify(const Function& f, const Call& c, Sites* out) const;
  /// The frames of a call at `loc` in function `fn`, innermost first.
  std::vector<Frame> call_frames(const Loc& loc, uint32_t fn) const;

 private:
  bool constant_u32(uint32_t id, uint32_t* v) const;
  bool string_of(uint32_t id, std::string* out) const;
  bool op_string(uint32_t id, std::string* out) const;  // an OpString's text (false: not one)
  bool has_name(uint32_t fn) const;
  std::string function_name(uint32_t fn) const;
  uint32_t debug_function(uint32_t scope) const;
  std::string scope_function_name(uint32_t scope, uint32_t fallback_fn) const;
  std::string scope_file(uint32_t scope) const;
  void inlined_frames(uint32_t inlined, uint32_t fn, std::vector<Frame>& out) const;
  template <class Value>
  bool identify_one(const Function& f, const Call& c, Value value, detail::ThrowSite* site) const;

  IRContext& ctx_;
  const CallGraph& g_;
  const std::map<uint32_t, std::string>& renamed_;
};

// The throw-path ids (throw_numbering.cpp).
struct Item {
  size_t call;      // index in f.calls
  uint64_t offset;  // of the item's ids within the function's
};
struct Numbering {
  std::map<std::pair<uint32_t, size_t>, Sites> site_info;  // (function, call) -> its identified sites
  std::map<uint32_t, std::vector<Item>> items;              // function -> its numbered items
  bool numbered = false;
};
/// Numbers every path from every kernel (ids from 1 into `out`) and sets the functions' paths,
/// reach, hidden and base. Too many paths: `n` stays empty (not numbered).
void number_paths(CallGraph& g, const SiteReader& reader, detail::SiteTable* out, Numbering* n);

// Writes the flags and the numbering into the module (throw_module.cpp, throw_rewrite.cpp). Until
// run() ends the module is only read: a shape it declines throws std::invalid_argument before that.
class Rewriter {
 public:
  Rewriter(IRContext& ctx, CallGraph& g, const Numbering& n) : ctx_(ctx), m_(ctx.module()), g_(g), n_(n), next_(m_.header[3]) {}
  /// Rewrites the module; true if its words changed.
  bool run();
  /// True if a site id needs the spec constant (zex_throw_site was declared or is the module's).
  bool stores_site_ids() const { return site_base_ != 0; }

 private:
  // What a may-throw function returns instead of `ret`: bool, or {ret, bool}.
  struct Flagged {
    uint32_t type = 0;        // the new return type
    uint32_t thrown = 0;      // the constant a throw exit returns
    uint32_t not_thrown = 0;  // void functions: the constant a normal return returns
    uint32_t null_value = 0;  // {ret, bool}: the null {ret, false} both kinds of return insert into
    bool wrapped = false;     // {ret, bool}
  };

  // throw_module.cpp
  uint32_t fresh() { return next_++; }
  uint32_t find_type(uint16_t opcode, const std::vector<uint32_t>& operands);
  uint32_t find_constant(uint16_t opcode, uint32_t type, const std::vector<uint32_t>& literals, bool ids);
  uint32_t found(const std::vector<uint32_t>& key);
  uint32_t bool_type() { return find_type(spv::OpTypeBool, {}); }
  uint32_t uint_type() { return find_type(spv::OpTypeInt, {32, 0}); }
  uint32_t void_type() { return find_type(spv::OpTypeVoid, {}); }
  uint32_t bool_constant(bool v) { return find_constant(v ? spv::OpConstantTrue : spv::OpConstantFalse, bool_type(), {}, true); }
  uint32_t uint_constant(uint32_t v) { return find_constant(spv::OpConstant, uint_type(), {v}, false); }
  const Flagged& flagged(uint32_t ret);
  void declare_throw_site();

  // throw_rewrite.cpp
  void rewrite_function(Function& f, const std::map<uint32_t, uint32_t>& ret_of);
  uint32_t site_id(uint32_t k, Insts& before);
  uint32_t site_base();
  uint32_t thrown_value(const Flagged& fl, Insts& insts);

  IRContext& ctx_;
  Module& m_;
  CallGraph& g_;
  const Numbering& n_;
  uint32_t next_;
  Insts globals_;  // new types and constants, inserted before the first function
  std::map<std::vector<uint32_t>, uint32_t> found_;  // see found()
  bool indexed_ = false;
  std::map<uint32_t, Flagged> flagged_;  // original return type -> its flagged form
  uint32_t throw_decl_after_ = 0, throw_site_fn_ = 0;
  std::string throw_site_name_;
  Insts throw_site_decl_;
  std::map<uint32_t, uint32_t> new_fn_type_;
  uint32_t site_base_ = 0;
  Insts decorations_;  // new decorations, placed after the module's last one
};

}  // namespace throw_paths
}  // namespace passes
}  // namespace zex
