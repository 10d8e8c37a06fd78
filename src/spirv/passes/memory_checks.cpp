// add_memory_checks: a bounds check before every global access that traces back to a kernel's pointer
// parameter (issue 27; docs/design.md, "Automatic memory checks"; docs/spirv-passes.md). The second
// half of the memory-check pass: memory_accesses.cpp finds the accesses, this file rewrites them.
//
// - Every kernel (OpEntryPoint) gets a zex_state_t as its last parameter where it has none (a
//   Function-storage pointer to a struct of three 64-bit integers, FuncParamAttr ByVal, as llvm-spirv
//   writes a by-value struct), so that any SPIR-V can be launched by zex and throw.
// - A function whose accesses (or whose callees' accesses) go through its pointer parameter p gets two
//   hidden `ulong` parameters per such p, the allocation's base and end, after its own parameters; a
//   kernel keeps its zex_state_t last. A function that needs the state and is not a kernel gets it as one
//   more hidden parameter (the last). Each call passes, for each bounded parameter of the callee, the
//   caller's bounds of the argument's parameter, or the unbounded range (0, ~0) where the argument does
//   not trace to one of the caller's parameters.
// - Before each such access: `off = address - base; off <= end - base && bytes <= (end - base) - off`
//   (unsigned: an address below the base fails too, and so does an allocation smaller than the access),
//   else a cold block that calls zex_throw(state, "OutOfBoundsAccess", "read of argument 'a'", 2,
//   ZEX_VALUES_MEMORY, off, end - base, function, file, line) and returns (the access does not happen).
//   The throw block is an ordinary zex throw site: number_throw_paths numbers it and makes it end the
//   work-item from a helper, converge_throws_at_barriers makes it reach the barriers, the merge shares it.
//
// Run before the throw-path numbering (pipeline.cpp); changes nothing in a module without kernels. A
// shape it does not handle (a zex_throw import of another type, a call with fewer arguments than the
// callee's parameters) throws std::invalid_argument before it writes.
#include "spirv/passes/barrier_throws.hpp"
#include "spirv/passes/memory_accesses.hpp"
#include "spirv/passes/passes.hpp"

#include <zex/abi.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>
#include <string>
#include <utility>
#include <vector>

namespace zex {
namespace passes {

namespace {

// The imports add_memory_checks turns into throws: AdaptiveCpp's (and <assert.h>'s) and DPC++'s.
bool is_assert_import(const std::string& name) { return name == "__assert_fail" || name == "__devicelib_assert_fail"; }

using barrier_throws::is_barrier_like;
using memory::Origin;
using memory::Trace;
using Insts = std::vector<Instruction>;

bool is_module_annotation(uint16_t o) {
  return o == spv::OpDecorate || o == spv::OpMemberDecorate || o == spv::OpDecorationGroup || o == spv::OpGroupDecorate ||
         o == spv::OpGroupMemberDecorate || o == spv::OpDecorateId || o == spv::OpDecorateString ||
         o == spv::OpMemberDecorateString;
}
bool is_preamble(uint16_t o) {  // everything before the types, constants and variables
  return o == spv::OpCapability || o == spv::OpExtension || o == spv::OpExtInstImport || o == spv::OpMemoryModel ||
         o == spv::OpEntryPoint || o == spv::OpExecutionMode || o == spv::OpExecutionModeId || o == spv::OpString ||
         o == spv::OpSourceExtension || o == spv::OpSource || o == spv::OpSourceContinued || o == spv::OpName ||
         o == spv::OpMemberName || o == spv::OpModuleProcessed || is_module_annotation(o);
}

Instruction decorate(uint32_t target, uint32_t decoration, const std::vector<uint32_t>& literals) {
  Instruction d = make_instruction(spv::OpDecorate, 0, 0, {target});
  add_operand(d, decoration, SPV_OPERAND_TYPE_DECORATION);
  for (uint32_t l : literals) add_operand(d, l, SPV_OPERAND_TYPE_LITERAL_INTEGER);
  return d;
}

// What one function becomes.
struct Fn {
  uint32_t id = 0;
  size_t first = 0, last = 0;  // OpFunction, OpFunctionEnd
  bool entry = false;
  std::string kernel;          // entry: the OpEntryPoint's name
  std::vector<uint32_t> params;  // parameter ids
  bool has_state = false;        // entry whose last parameter is a zex_state_t
  uint32_t user_params = 0;      // parameters before the hidden ones
  std::set<uint32_t> bounded;    // parameters whose bounds it takes
  bool needs_state = false;
  // Rewrite:
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> bounds;  // parameter index -> (base, end) param ids
  std::map<uint32_t, uint32_t> size;                         // parameter index -> end - base, in the entry
  // A __local parameter's bounds arrive relative to its own address (the launch gives (0, bytes): it
  // cannot know where the driver puts the group's local memory; a caller gives the allocation's bounds
  // minus the pointer it passes); parameter index -> (base, end) as addresses, computed at entry.
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> absolute;
  std::vector<uint32_t> local_bounded;  // the __local parameters of `bounded` (read before the write moves the module)
  // (parameter index, access bytes) -> how many byte offsets an access of that size may start at
  // (size - bytes + 1, or 0 when size < bytes), in the entry: each check is then one compare.
  std::map<std::pair<uint32_t, uint64_t>, uint32_t> starts;
  uint32_t state = 0;                                        // the state's id in the function
  uint32_t new_state_param = 0;                              // 0: the function's own (entry with state)
  // A kernel (and llvm-spirv's kernel body behind its wrapper) takes its bounds as one by-value struct
  // of 2 ulongs per bounded parameter, loaded at entry: one argument per launch however many pointers
  // (two per pointer made the launch 1.5x at 8 pointers on PoCL, which copies each argument apart).
  bool bounds_struct = false;
  uint32_t bounds_param = 0;  // that struct's parameter
};

class Checker {
 public:
  Checker(IRContext& ctx, const CheckOptions& options) : ctx_(ctx), m_(ctx.module()), next_(m_.header[3]), options_(options) {}

  bool run(std::vector<KernelMemoryChecks>* out, MemoryCheckCounts* counts);

 private:
  // ---- reading ----
  const Instruction* def(uint32_t id) { return ctx_.def(id); }
  uint32_t storage_of_type(uint32_t type) {
    const Instruction* t = def(type);
    return t && t->opcode == spv::OpTypePointer ? t->word(2) : ~0u;
  }
  bool is_state_type(uint32_t type) {
    return is_zex_state_type([this](uint32_t id) { return def(id); }, type);
  }
  uint32_t param_storage(const Fn& f, uint32_t p) {
    const Instruction* param = p < f.params.size() ? def(f.params[p]) : nullptr;
    return param ? storage_of_type(param->type_id) : ~0u;
  }
  bool eligible(const Fn& f, uint32_t p) {
    if (p >= f.user_params) return false;
    const uint32_t sc = param_storage(f, p);
    return sc == spv::StorageClassCrossWorkgroup || sc == spv::StorageClassWorkgroup ||
           (!f.entry && sc == spv::StorageClassGeneric);
  }
  bool is_local(const Fn& f, uint32_t p) { return param_storage(f, p) == spv::StorageClassWorkgroup; }
  // Whether `a` is checked against its parameter's bounds: a Workgroup access through a __local
  // parameter, any other through a global or generic one. Never across the two (a generic pointer made
  // from a __local one is another address than the __local one on IGC: its offset would be garbage).
  bool checkable(const Fn& f, const memory::Access& a) {
    return a.trace.origin == Origin::Param && eligible(f, a.trace.param) && a.local == is_local(f, a.trace.param);
  }
  // Bytes an access of a value of `type` touches (1 if the pass cannot tell: the first byte is checked;
  // *exact then becomes false).
  uint64_t bytes_of(uint32_t type, int depth = 0, bool* exact = nullptr);
  std::string param_name(const Fn& f, uint32_t p) {
    const std::vector<std::string>& n = ctx_.names(f.params[p]);
    return n.empty() || n.front().empty() ? "argument " + std::to_string(p) : "argument '" + n.front() + "'";
  }
  std::string function_name(const Fn& f) {
    if (f.entry) return f.kernel;
    const std::vector<std::string>& n = ctx_.names(f.id);
    return n.empty() ? "<function %" + std::to_string(f.id) + ">" : n.front();
  }

  // ---- writing: new ids, types, constants, strings (placed before the first function) ----
  uint32_t fresh() { return next_++; }
  uint32_t global(uint16_t opcode, uint32_t type, const std::vector<std::pair<uint32_t, spv_operand_type_t>>& ops);
  uint32_t type_int(uint32_t bits) {
    return global(spv::OpTypeInt, 0, {{bits, SPV_OPERAND_TYPE_LITERAL_INTEGER}, {0, SPV_OPERAND_TYPE_LITERAL_INTEGER}});
  }
  uint32_t ulong_type() { return type_int(64); }
  uint32_t uint_type() { return type_int(32); }
  uint32_t bool_type() { return global(spv::OpTypeBool, 0, {}); }
  uint32_t void_type() { return global(spv::OpTypeVoid, 0, {}); }
  uint32_t pointer(uint32_t storage, uint32_t type) {
    return global(spv::OpTypePointer, 0, {{storage, SPV_OPERAND_TYPE_STORAGE_CLASS}, {type, SPV_OPERAND_TYPE_ID}});
  }
  uint32_t ulong_constant(uint64_t v) {
    return global(spv::OpConstant, ulong_type(),
                  {{static_cast<uint32_t>(v), SPV_OPERAND_TYPE_TYPED_LITERAL_NUMBER},
                   {static_cast<uint32_t>(v >> 32), SPV_OPERAND_TYPE_TYPED_LITERAL_NUMBER}});
  }
  uint32_t uint_constant(uint32_t v) { return global(spv::OpConstant, uint_type(), {{v, SPV_OPERAND_TYPE_TYPED_LITERAL_NUMBER}}); }
  uint32_t undef(uint32_t type) { return global(spv::OpUndef, type, {}); }
  uint32_t state_pointer_type();
  uint32_t bounds_struct_type(size_t members);  // a struct of `members` ulongs
  std::map<size_t, uint32_t> bounds_structs_;
  uint32_t string(const std::string& s);  // the variable holding s and its NUL
  uint32_t zex_throw();

  // The kernels, in module order: what the launch passes them.
  void report(std::vector<KernelMemoryChecks>* out) const {
    if (!out) return;
    std::vector<const Fn*> kernels;
    for (const auto& e : fns_)
      if (e.second.entry) kernels.push_back(&e.second);
    std::sort(kernels.begin(), kernels.end(), [](const Fn* a, const Fn* b) { return a->first < b->first; });
    for (const Fn* f : kernels) {
      out->push_back(KernelMemoryChecks{f->kernel, f->user_params, std::vector<uint32_t>(f->bounded.begin(), f->bounded.end()),
                                        f->needs_state && !f->has_state, f->local_bounded});
    }
  }
  // OpReturn, or OpReturnValue of an OpUndef, for a function returning `ret`.
  Instruction return_of(uint32_t ret) {
    const Instruction* rt = def(ret);
    if (rt && rt->opcode == spv::OpTypeVoid) return make_instruction(spv::OpReturn, 0, 0, {});
    return make_instruction(spv::OpReturnValue, 0, 0, {undef(ret)});
  }
  void rewrite(Fn& f, Insts* out);
  // Accesses of one block off one base pointer whose indices differ by constants (a stencil's in[c - 1],
  // in[c], in[c + 1]): one check, at the first of them, of the bytes from the least index to the
  // greatest; when it fails, a cold chain checks each of them in program order and throws the first
  // that fails, with the report its own check would have given.
  struct Member {
    size_t inst;
    int64_t c;
    const Instruction* line;
  };
  struct Group {
    uint32_t param = 0, base = 0, v = 0, v_type = 0, pointer_type = 0;
    uint64_t bytes = 0;
    int64_t lo = 0, hi = 0;
    std::vector<Member> members;  // program order
    uint64_t span() const { return static_cast<uint64_t>(hi - lo) * bytes + bytes; }
  };
  std::vector<Group> groups_of(const Fn& f, const std::map<size_t, uint32_t>& checked_at, size_t body);
  // A 64-bit integer constant's value (false if `id` is no such OpConstant: groups take 64-bit indices only).
  bool int_constant(uint32_t id, int64_t* value);
  // The id of v + c in v's 64-bit integer type (v itself for c == 0).
  uint32_t plus(uint32_t v, uint32_t v_type, int64_t c, Insts* out);
  void check_group(Fn& f, const Group& g, Insts* out, Insts* cold, uint32_t* block_label);
  // The byte offset of the group's base moved by v + k from the allocation's start (a ulong id).
  uint32_t group_offset(const Fn& f, const Group& g, int64_t k, Insts* out);
  // Ends the block with `ok ? (a new block, whose label goes to *block_label) : cold_target`, weighted
  // 1000:1; returns the new block's label.
  uint32_t branch_cold(uint32_t ok, uint32_t cold_target, Insts* out, uint32_t* block_label);
  // Whether `call` (in f) passes g f's own bounds struct as it came: each bounded parameter of g is f's
  // parameter of the same index, bounded alike (a __local one: that very pointer, its bounds being
  // relative to it).
  bool forwards_bounds(const Fn& f, const Fn& g, const memory::Call& call) {
    if (!f.bounds_struct || !g.bounds_struct || f.bounded != g.bounded) return false;
    for (uint32_t q : g.bounded) {
      if (q >= call.args.size() || !(call.args[q] == Trace{Origin::Param, q})) return false;
      if (is_local(g, q) && (4 + q >= m_.insts[call.inst].size() || m_.insts[call.inst].word(4 + q) != f.params[q])) return false;
    }
    return true;
  }
  uint64_t access_bytes(const Instruction& access);
  // Returns the pointer the access then goes through: its own, or for a __local parameter's a select
  // as check_local's.
  uint32_t check(Fn& f, const Instruction& access, const Instruction* line, uint32_t param, uint64_t bytes, Insts* out,
                 Insts* cold, uint32_t* block_label);
  // The same for an access into the __local variable `var`, against its size. Returns the pointer the
  // access then goes through (see the definition).
  uint32_t check_local(Fn& f, const Instruction& access, const Instruction* line, uint32_t var, uint64_t bytes,
                       Insts* out, Insts* cold, uint32_t* block_label);
  // The branch of a check (`ok` or the throw block), and the throw block's report of `what` at `off` of
  // an allocation of `size` bytes (ulong ids).
  void branch_and_throw(Fn& f, const Instruction& access, const Instruction* line, uint32_t ok, const std::string& what,
                        uint32_t off, uint32_t size, Insts* out, Insts* cold, uint32_t* block_label);
  // A zex_throw at `at` (its lines and debug scope, or `line_in_effect`), then the function's return.
  struct Throw {
    std::string name, reason, function, file;
    uint32_t line = 0;  // 0: the line of `at`'s annotations, when it has one
    uint32_t value_count = 0, value_kind = ZEX_VALUES_PLAIN, v0 = 0, v1 = 0;  // v0, v1: ulong ids (0: zero)
  };
  void throw_and_return(const Fn& f, const Instruction& at, const Instruction* line_in_effect, Throw t, Insts* out);
  void assertion(Fn& f, const Instruction& call, const Instruction* line, Insts* out, uint32_t* block_label);

  IRContext& ctx_;
  Module& m_;
  uint32_t next_;
  std::map<uint32_t, Fn> fns_;
  std::map<uint32_t, memory::FunctionAccesses> accesses_;
  std::map<uint32_t, uint64_t> local_sizes_;  // __local variable -> its bytes (known sizes only)
  Insts globals_, names_, decorations_, declarations_;
  std::map<std::vector<uint32_t>, uint32_t> found_;
  bool indexed_ = false;
  std::map<std::string, uint32_t> strings_;
  uint32_t zex_throw_ = 0, state_pointer_ = 0;
  std::set<uint32_t> capabilities_;
  CheckOptions options_;
  std::set<uint32_t> assert_fns_;                      // the imports of __assert_fail, __devicelib_assert_fail
  std::map<uint32_t, std::set<size_t>> assert_calls_;  // function -> its calls of them (instruction indices)
  MemoryCheckCounts* counts_ = nullptr;
  std::set<uint32_t> barrier_fns_;  // functions joined by calls to a barrier or a collective (no groups)
};

uint64_t Checker::bytes_of(uint32_t type, int depth, bool* exact) {
  const Instruction* t = def(type);
  auto unknown = [&] {
    if (exact) *exact = false;
    return uint64_t{1};
  };
  if (!t || depth > 16) return unknown();
  switch (t->opcode) {
    case spv::OpTypeInt:
    case spv::OpTypeFloat:
      return std::max<uint32_t>(t->word(2) / 8, 1);
    case spv::OpTypePointer:
      return 8;  // Physical64: the only addressing model zex accepts
    case spv::OpTypeVector:
      // A 3-vector takes 4 components' room (OpenCL's and LLVM's layout: sizeof(float3) == 16).
      return (t->word(3) == 3 ? 4 : t->word(3)) * bytes_of(t->word(2), depth + 1, exact);
    case spv::OpTypeArray: {
      const Instruction* n = def(t->word(3));
      if (!n || n->opcode != spv::OpConstant) return unknown();
      const uint64_t count = n->size() > 4 ? (uint64_t(n->word(4)) << 32 | n->word(3)) : n->word(3);
      if (count == 0 || count > (uint64_t(1) << 40)) return unknown();
      return count * bytes_of(t->word(2), depth + 1, exact);
    }
    case spv::OpTypeStruct: {
      // The end of its last member, by the members' Offset decorations; their sum without any.
      uint64_t sum = 0, end = 0;
      for (size_t k = 2; k < t->size(); ++k) sum += bytes_of(t->word(k), depth + 1, exact);
      for (size_t d : ctx_.decorations(type)) {
        const Instruction& dec = m_.insts[d];
        if (dec.opcode != spv::OpMemberDecorate || dec.word(3) != spv::DecorationOffset) continue;
        const size_t member = 2 + dec.word(2);
        if (member < t->size()) end = std::max<uint64_t>(end, dec.word(4) + bytes_of(t->word(member), depth + 1, exact));
      }
      if (!end && !sum) return unknown();
      // Without Offset decorations (llvm-spirv writes none) the sum leaves out the padding, and even with
      // them the end leaves out the tail padding: a lower bound, fine for an access's first bytes, not
      // for an array's size (its check would refuse accesses inside it).
      if (exact) *exact = false;
      return std::max<uint64_t>(end ? end : sum, 1);
    }
    default:
      return unknown();
  }
}

uint32_t Checker::global(uint16_t opcode, uint32_t type, const std::vector<std::pair<uint32_t, spv_operand_type_t>>& ops) {
  std::vector<uint32_t> key{opcode, type};
  for (const auto& o : ops) key.push_back(o.first);
  if (!indexed_) {
    indexed_ = true;
    for (const Instruction& i : m_.insts) {
      if (i.opcode == spv::OpFunction) break;
      if (!i.result_id || i.opcode == spv::OpVariable || i.opcode == spv::OpTypeStruct) continue;
      std::vector<uint32_t> k{i.opcode, i.type_id};
      k.insert(k.end(), i.words.begin() + (i.type_id ? 3 : 2), i.words.end());
      found_.emplace(std::move(k), i.result_id);
    }
  }
  auto it = found_.find(key);
  if (it != found_.end()) return it->second;
  Instruction g = make_instruction(opcode, type, fresh(), {});
  for (const auto& o : ops) add_operand(g, o.first, o.second);
  globals_.push_back(g);
  return found_[key] = g.result_id;
}

uint32_t Checker::state_pointer_type() {
  if (state_pointer_) return state_pointer_;
  // The type the module's zex_throw import takes, else the module's own zex_state_t where a kernel has
  // one, so that every call passes the type its callee declares.
  if (zex_throw_) {
    const size_t at = ctx_.def_index(zex_throw_);
    if (at != IRContext::npos && at + 1 < m_.insts.size() && m_.insts[at + 1].opcode == spv::OpFunctionParameter)
      return state_pointer_ = m_.insts[at + 1].type_id;
  }
  for (const auto& e : fns_)
    if (e.second.has_state) return state_pointer_ = def(e.second.params.back())->type_id;
  const uint32_t u64 = ulong_type();
  Instruction s = make_instruction(spv::OpTypeStruct, 0, fresh(), {u64, u64, u64});
  globals_.push_back(s);
  names_.push_back(make_name(s.result_id, "struct.zex_state"));
  return state_pointer_ = pointer(spv::StorageClassFunction, s.result_id);
}

uint32_t Checker::bounds_struct_type(size_t members) {
  auto it = bounds_structs_.find(members);
  if (it != bounds_structs_.end()) return it->second;
  Instruction s = make_instruction(spv::OpTypeStruct, 0, fresh(), std::vector<uint32_t>(members, ulong_type()));
  globals_.push_back(s);
  names_.push_back(make_name(s.result_id, "struct.zex_bounds"));
  return bounds_structs_[members] = s.result_id;
}

uint32_t Checker::string(const std::string& text) {
  auto it = strings_.find(text);
  if (it != strings_.end()) return it->second;
  capabilities_.insert(spv::CapabilityInt8);
  const uint32_t uchar = type_int(8);
  const uint32_t array = global(spv::OpTypeArray, 0, {{uchar, SPV_OPERAND_TYPE_ID}, {ulong_constant(text.size() + 1), SPV_OPERAND_TYPE_ID}});
  Instruction init = make_instruction(spv::OpConstantComposite, array, fresh(), {});
  for (size_t k = 0; k <= text.size(); ++k) {
    const uint32_t byte = k < text.size() ? static_cast<unsigned char>(text[k]) : 0;
    add_operand(init, global(spv::OpConstant, uchar, {{byte, SPV_OPERAND_TYPE_TYPED_LITERAL_NUMBER}}), SPV_OPERAND_TYPE_ID);
  }
  globals_.push_back(init);
  Instruction var = make_instruction(spv::OpVariable, pointer(spv::StorageClassUniformConstant, array), fresh(), {});
  add_operand(var, spv::StorageClassUniformConstant, SPV_OPERAND_TYPE_STORAGE_CLASS);
  add_operand(var, init.result_id, SPV_OPERAND_TYPE_ID);
  globals_.push_back(var);
  names_.push_back(make_name(var.result_id, "__zex_check_str"));
  decorations_.push_back(decorate(var.result_id, spv::DecorationConstant, {}));
  decorations_.push_back(decorate(var.result_id, spv::DecorationAlignment, {1}));
  return strings_[text] = var.result_id;
}

// The module's zex_throw import, or a new one of the device library's signature.
uint32_t Checker::zex_throw() {
  if (zex_throw_) return zex_throw_;
  const uint32_t cstr = pointer(spv::StorageClassUniformConstant, type_int(8));
  const uint32_t u32 = uint_type(), u64 = ulong_type();
  const std::vector<uint32_t> params{state_pointer_type(), cstr, cstr, u32, u32, u64, u64, cstr, cstr, u32};
  std::vector<std::pair<uint32_t, spv_operand_type_t>> ops{{void_type(), SPV_OPERAND_TYPE_ID}};
  for (uint32_t p : params) ops.push_back({p, SPV_OPERAND_TYPE_ID});
  const uint32_t type = global(spv::OpTypeFunction, 0, ops);
  Instruction f = make_instruction(spv::OpFunction, void_type(), fresh(), {});
  add_operand(f, spv::FunctionControlMaskNone, SPV_OPERAND_TYPE_FUNCTION_CONTROL);
  add_operand(f, type, SPV_OPERAND_TYPE_ID);
  declarations_.push_back(f);
  for (uint32_t p : params) declarations_.push_back(make_instruction(spv::OpFunctionParameter, p, fresh(), {}));
  declarations_.push_back(make_instruction(spv::OpFunctionEnd, 0, 0, {}));
  names_.push_back(make_name(f.result_id, "zex_throw"));
  Instruction link = make_instruction(spv::OpDecorate, 0, 0, {f.result_id});
  add_operand(link, spv::DecorationLinkageAttributes, SPV_OPERAND_TYPE_DECORATION);
  add_string_operand(link, "zex_throw");
  add_operand(link, spv::LinkageTypeImport, SPV_OPERAND_TYPE_LINKAGE_TYPE);
  decorations_.push_back(link);
  capabilities_.insert(spv::CapabilityLinkage);
  return zex_throw_ = f.result_id;
}

// The bytes an access reads or writes: its pointer's pointee (1 if that is unknown; a zero-sized
// pointee, an array of none, counts as one byte).
uint64_t Checker::access_bytes(const Instruction& access) {
  const Instruction* p = def(access.word(access_pointer_word(access.opcode)));
  const Instruction* pt = p ? def(p->type_id) : nullptr;
  return std::max<uint64_t>(pt && pt->opcode == spv::OpTypePointer ? bytes_of(pt->word(3)) : 1, 1);
}

// The check before `access` (through `param` of f, `bytes` long): ends the current block with the compare and a branch
// to a new block that `access` then starts (its label goes to *block_label), and appends the throw block
// to `cold`.
uint32_t Checker::check(Fn& f, const Instruction& access, const Instruction* line_in_effect, uint32_t param, uint64_t bytes,
                        Insts* out, Insts* cold, uint32_t* block_label) {
  const uint32_t ptr = access.word(access_pointer_word(access.opcode));
  const uint32_t u64 = ulong_type(), b = bool_type();
  auto abs = f.absolute.find(param);
  const uint32_t base = abs != f.absolute.end() ? abs->second.first : f.bounds.at(param).first, size = f.size.at(param);
  const uint32_t starts = f.starts.at({param, bytes});
  // off < starts <=> off + bytes <= size without wrapping (starts is 0 when size < bytes): one compare,
  // where `off <= size && bytes <= size - off` took four instructions more per access.
  const uint32_t addr = fresh(), off = fresh(), ok = fresh();
  out->push_back(make_instruction(spv::OpConvertPtrToU, u64, addr, {ptr}));
  out->push_back(make_instruction(spv::OpISub, u64, off, {addr, base}));
  out->push_back(make_instruction(spv::OpULessThan, b, ok, {off, starts}));
  branch_and_throw(f, access, line_in_effect, ok, param_name(f, param), off, size, out, cold, block_label);
  if (abs == f.absolute.end()) return ptr;
  // A __local parameter's access goes through select(ok, p, the allocation's start), as check_local's
  // does and for the same reason (a thrower in a kernel with barriers reads on); the start is the
  // parameter moved by its relative base (0 in a kernel).
  capabilities_.insert(spv::CapabilityInt8);
  const uint32_t bytes_ptr = pointer(spv::StorageClassWorkgroup, type_int(8));
  const uint32_t raw = fresh(), at = fresh(), start = fresh(), safe = fresh();
  const uint32_t type = def(ptr)->type_id;
  out->push_back(make_instruction(spv::OpBitcast, bytes_ptr, raw, {f.params[param]}));
  out->push_back(make_instruction(spv::OpPtrAccessChain, bytes_ptr, at, {raw, f.bounds.at(param).first}));
  out->push_back(make_instruction(spv::OpBitcast, type, start, {at}));
  out->push_back(make_instruction(spv::OpSelect, type, safe, {ok, ptr, start}));
  return safe;
}

// An access into a __local variable (a static array): its byte offset from the variable, against the
// variable's size, both constants but the offset; the same one compare and throw as a global access.
// In a kernel with barriers the thrower goes on to them along the passing path, and its reads of
// __local memory stay real (spirv-passes.md, "Throws before barriers"): so the access goes through
// select(ok, p, the variable's start), and the failing access itself reads or writes inside the
// variable, never past it. Elsewhere the select follows its own branch and folds.
uint32_t Checker::check_local(Fn& f, const Instruction& access, const Instruction* line_in_effect, uint32_t var,
                              uint64_t bytes, Insts* out, Insts* cold, uint32_t* block_label) {
  const uint32_t ptr = access.word(access_pointer_word(access.opcode));
  const uint32_t u64 = ulong_type(), b = bool_type();
  const uint64_t size = local_sizes_.at(var);
  const uint32_t addr = fresh(), base = fresh(), off = fresh(), ok = fresh();
  out->push_back(make_instruction(spv::OpConvertPtrToU, u64, addr, {ptr}));
  out->push_back(make_instruction(spv::OpConvertPtrToU, u64, base, {var}));
  out->push_back(make_instruction(spv::OpISub, u64, off, {addr, base}));
  out->push_back(make_instruction(spv::OpULessThan, b, ok, {off, ulong_constant(size >= bytes ? size - bytes + 1 : 0)}));
  const std::vector<std::string>& n = ctx_.names(var);
  std::string source = n.empty() ? std::string() : n.front();
  // clang names a kernel's `local float tile[16]` "kernel.tile": the source's name is after the dot.
  const size_t dot = source.find('.');
  if (dot != std::string::npos && dot + 1 < source.size())
    for (const auto& e : fns_)
      if (function_name(e.second) == source.substr(0, dot)) {
        source = source.substr(dot + 1);
        break;
      }
  const std::string name = source.empty() ? "__local variable " + std::to_string(var) : "__local '" + source + "'";
  branch_and_throw(f, access, line_in_effect, ok, name, off, ulong_constant(size), out, cold, block_label);
  if (size < bytes) return ptr;  // no place inside it fits the access (it always throws)
  const Instruction* p = def(ptr);
  const uint32_t start = fresh(), safe = fresh();
  out->push_back(make_instruction(spv::OpBitcast, p->type_id, start, {var}));
  out->push_back(make_instruction(spv::OpSelect, p->type_id, safe, {ok, ptr, start}));
  return safe;
}

void Checker::branch_and_throw(Fn& f, const Instruction& access, const Instruction* line_in_effect, uint32_t ok,
                               const std::string& target, uint32_t off, uint32_t size, Insts* out, Insts* cold,
                               uint32_t* block_label) {
  const uint32_t thrown = fresh();
  branch_cold(ok, thrown, out, block_label);

  // The throw block: what the access was, where (its line, when the module has lines), then return.
  const bool read = access.opcode == spv::OpLoad || access.opcode == spv::OpAtomicLoad;
  const bool write = access.opcode == spv::OpStore || access.opcode == spv::OpAtomicStore;
  const std::string what = read ? "read of " : write ? "write of " : "atomic update of ";
  cold->push_back(make_instruction(spv::OpLabel, 0, thrown, {}));
  Throw t;
  t.name = "OutOfBoundsAccess";
  t.reason = what + target;
  t.function = function_name(f);
  t.value_count = 2;
  t.value_kind = ZEX_VALUES_MEMORY;
  t.v0 = off;
  t.v1 = size;
  throw_and_return(f, access, line_in_effect, std::move(t), cold);
}

void Checker::throw_and_return(const Fn& f, const Instruction& at, const Instruction* line_in_effect, Throw t, Insts* out) {
  std::string file;
  uint32_t line = 0;
  Instruction call = make_instruction(spv::OpFunctionCall, void_type(), fresh(), {});
  // llvm-spirv writes an OpLine only where the line changes: the access's line is the one in effect.
  const bool own_line = std::any_of(at.annotations.begin(), at.annotations.end(),
                                    [](const Instruction& a) { return a.opcode == spv::OpLine; });
  std::vector<Instruction> annotations = at.annotations;
  if (!own_line && line_in_effect) annotations.insert(annotations.begin(), *line_in_effect);
  for (const Instruction& a : annotations) {
    if (!is_line_or_scope(a)) continue;
    call.annotations.push_back(a);
    // A debug scope is an OpExtInst with a result of its own: the copy needs a fresh id (the
    // original stays on the access), or the module defines that id twice.
    Instruction& copy = call.annotations.back();
    if (copy.result_id) {
      copy.result_id = fresh();
      copy.words[copy.type_id ? 2 : 1] = copy.result_id;
    }
    if (a.opcode == spv::OpLine) {
      const Instruction* s = def(a.word(1));
      if (s && s->opcode == spv::OpString) file = s->string_at(2);
      line = a.word(2);
    }
  }
  if (t.line) line = t.line, file = t.file;
  const uint32_t cstr = pointer(spv::StorageClassUniformConstant, type_int(8));
  const uint32_t zero = ulong_constant(0);
  std::vector<uint32_t> strs;
  for (const std::string& s : {t.name, t.reason, t.function, file}) {
    strs.push_back(fresh());
    out->push_back(make_instruction(spv::OpInBoundsPtrAccessChain, cstr, strs.back(), {string(s), zero, zero}));
  }
  for (uint32_t id : {zex_throw(), f.state, strs[0], strs[1], uint_constant(t.value_count), uint_constant(t.value_kind),
                      t.v0 ? t.v0 : zero, t.v1 ? t.v1 : zero, strs[2], strs[3], uint_constant(line)})
    add_operand(call, id, SPV_OPERAND_TYPE_ID);
  out->push_back(call);
  const Instruction* fn = def(f.id);
  out->push_back(return_of(fn ? fn->type_id : 0));
}

// A call of __assert_fail(expr, file, line, func) or __devicelib_assert_fail(expr, file, line, func,
// gid0, gid1, gid2, lid0, lid1, lid2) becomes a zex_throw of "AssertionError" with the expression as its
// reason and a frame of the function, file and line the call names (zex records the work-item itself),
// then a return; what followed the call (unreachable: both never return) starts a block of its own.
void Checker::assertion(Fn& f, const Instruction& call, const Instruction* line_in_effect, Insts* out, uint32_t* block_label) {
  Throw t;
  t.name = "AssertionError";
  auto arg = [&](size_t k) { return 4 + k < call.size() ? call.word(4 + k) : 0u; };
  if (!arg(0) || !constant_string(ctx_, arg(0), &t.reason) || t.reason.empty()) t.reason = "assertion failed";
  if (!arg(3) || !constant_string(ctx_, arg(3), &t.function) || t.function.empty()) t.function = function_name(f);
  uint32_t line = 0;
  if (arg(1) && arg(2) && constant_string(ctx_, arg(1), &t.file) && constant_u32(ctx_, arg(2), &line) && line) t.line = line;
  throw_and_return(f, call, line_in_effect, std::move(t), out);
  const uint32_t rest = fresh();
  out->push_back(make_instruction(spv::OpLabel, 0, rest, {}));
  *block_label = rest;
}

bool Checker::int_constant(uint32_t id, int64_t* value) {
  const Instruction* k = def(id);
  const Instruction* t = k && k->opcode == spv::OpConstant ? def(k->type_id) : nullptr;
  if (!t || t->opcode != spv::OpTypeInt || t->word(2) != 64 || k->size() != 5) return false;
  *value = static_cast<int64_t>(uint64_t(k->word(4)) << 32 | k->word(3));
  return true;
}

uint32_t Checker::plus(uint32_t v, uint32_t v_type, int64_t c, Insts* out) {
  if (c == 0) return v;
  const uint32_t sum = fresh();
  out->push_back(make_instruction(spv::OpIAdd, v_type, sum, {v, ulong_constant(static_cast<uint64_t>(c))}));
  return sum;
}

// The groups: consecutive checked accesses through a global (not __local) parameter whose pointer is
// Op(InBounds)PtrAccessChain(base, v + c), v a 64-bit index and c a constant, the chain's type the
// base's (so that the index steps by the access's exact size). Any other access, a call (it may throw
// first), a barrier or a collective ends a stretch. Only groups of two or more distinct indices are
// kept, their least and greatest index within 2^20 elements.
std::vector<Checker::Group> Checker::groups_of(const Fn& f, const std::map<size_t, uint32_t>& checked_at, size_t body) {
  std::map<std::tuple<size_t, uint32_t, uint32_t, uint32_t, uint32_t>, Group> found;
  size_t stretch = 0;
  std::tuple<uint32_t, uint32_t, uint32_t, uint32_t> open{};  // the open stretch's group (0s: none)
  const Instruction* line = nullptr;
  for (size_t i = body; i < f.last; ++i) {
    const Instruction& in = m_.insts[i];
    for (const Instruction& a : in.annotations) {
      if (a.opcode == spv::OpLine) line = &a;
      if (a.opcode == spv::OpNoLine) line = nullptr;
    }
    if (in.opcode == spv::OpLabel || in.opcode == spv::OpFunctionCall || in.opcode == spv::OpMemoryBarrier ||
        is_barrier_like(in.opcode) || is_terminator(in.opcode)) {
      if (in.opcode == spv::OpLabel) line = nullptr;
      ++stretch;
      open = {};
      continue;
    }
    if (access_pointer_word(in.opcode) == 0) continue;
    // Any other access ends the stretch: a group's members are consecutive accesses, so no other check
    // (whose report would come first) and no store falls between its check and its members.
    auto other = [&] {
      ++stretch;
      open = {};
    };
    auto c = checked_at.find(i);
    if (c == checked_at.end() || is_local(f, c->second)) {
      other();
      continue;
    }
    const Instruction* chain = def(in.word(access_pointer_word(in.opcode)));
    if (!chain || (chain->opcode != spv::OpPtrAccessChain && chain->opcode != spv::OpInBoundsPtrAccessChain) ||
        chain->size() != 5) {
      other();
      continue;
    }
    const Instruction* base = def(chain->word(3));
    const Instruction* pt = def(chain->type_id);
    bool exact = base && base->type_id == chain->type_id && pt && pt->opcode == spv::OpTypePointer;
    const uint64_t bytes = exact ? bytes_of(pt->word(3), 0, &exact) : 0;
    uint32_t v = chain->word(4);
    int64_t k = 0;
    const Instruction* index = def(v);
    const uint32_t v_type = index ? index->type_id : 0;
    const Instruction* vt = def(v_type);
    // 64-bit indices only: a 32-bit v + k may wrap (sign-extended, INT_MAX + 1 is 2^31 elements before
    // the base), and then the members are not one span; 64-bit addresses never reach the wrap.
    if (!exact || bytes == 0 || bytes > 4096 || bytes != access_bytes(in) || !vt || vt->opcode != spv::OpTypeInt ||
        vt->word(2) != 64) {
      other();
      continue;
    }
    if (index->opcode == spv::OpIAdd && int_constant(index->word(4), &k)) {
      v = index->word(3);
    } else if (index->opcode == spv::OpIAdd && int_constant(index->word(3), &k)) {
      v = index->word(4);
    } else if (index->opcode == spv::OpISub && int_constant(index->word(4), &k) && k != INT64_MIN) {
      v = index->word(3);
      k = -k;
    } else {
      k = 0;
    }
    if (k < -(int64_t(1) << 20) || k > (int64_t(1) << 20)) {
      other();
      continue;
    }
    // Another group's access ends the stretch too (A0 B0 A1: a failing B0 must not be reported as A1).
    const auto key = std::make_tuple(c->second, base->result_id, v, chain->type_id);
    if (key != open) ++stretch;
    open = key;
    Group& g = found[std::tuple_cat(std::make_tuple(stretch), key)];
    if (g.members.empty()) {
      g.param = c->second, g.base = base->result_id, g.v = v, g.v_type = v_type, g.pointer_type = chain->type_id;
      g.bytes = bytes, g.lo = g.hi = k;
    }
    g.lo = std::min(g.lo, k), g.hi = std::max(g.hi, k);
    g.members.push_back(Member{i, k, line});
  }
  std::vector<Group> out;
  for (auto& e : found)
    if (e.second.hi > e.second.lo && e.second.hi - e.second.lo <= (int64_t(1) << 20)) out.push_back(std::move(e.second));
  return out;
}

// The group's check, before its first member: the least index's offset against the starts of an
// access of the whole span; on failure the chain.
uint32_t Checker::group_offset(const Fn& f, const Group& g, int64_t k, Insts* out) {
  const uint32_t u64 = ulong_type(), index = plus(g.v, g.v_type, k, out);
  // Not InBounds: the pointer may be outside the allocation, which is what the check is there to see.
  const uint32_t p = fresh(), addr = fresh(), off = fresh();
  out->push_back(make_instruction(spv::OpPtrAccessChain, g.pointer_type, p, {g.base, index}));
  out->push_back(make_instruction(spv::OpConvertPtrToU, u64, addr, {p}));
  out->push_back(make_instruction(spv::OpISub, u64, off, {addr, f.bounds.at(g.param).first}));
  return off;
}

uint32_t Checker::branch_cold(uint32_t ok, uint32_t cold_target, Insts* out, uint32_t* block_label) {
  const uint32_t cont = fresh();
  Instruction br = make_instruction(spv::OpBranchConditional, 0, 0, {ok, cont, cold_target});
  add_operand(br, 1000, SPV_OPERAND_TYPE_LITERAL_INTEGER);  // branch weights: the failing side is cold
  add_operand(br, 1, SPV_OPERAND_TYPE_LITERAL_INTEGER);
  out->push_back(br);
  out->push_back(make_instruction(spv::OpLabel, 0, cont, {}));
  *block_label = cont;
  return cont;
}

void Checker::check_group(Fn& f, const Group& g, Insts* out, Insts* cold, uint32_t* block_label) {
  const uint32_t b = bool_type(), size = f.size.at(g.param);
  const uint32_t ok = fresh(), chain = fresh();
  out->push_back(make_instruction(spv::OpULessThan, b, ok, {group_offset(f, g, g.lo, out), f.starts.at({g.param, g.span()})}));
  const uint32_t cont = branch_cold(ok, chain, out, block_label);
  // The chain: each distinct index in program order, its own check and throw (the throw blocks after the
  // chain's, which dominate them); past the last, the passing path (taken only where every member
  // passes its own check after all: the unbounded (0, ~0), whose span's starts are smaller).
  Insts links, throws;
  links.push_back(make_instruction(spv::OpLabel, 0, chain, {}));
  std::set<int64_t> seen;
  for (const Member& m : g.members) {
    if (!seen.insert(m.c).second) continue;
    const Instruction& access = m_.insts[m.inst];
    const uint32_t off_k = group_offset(f, g, m.c, &links), ok_k = fresh();
    links.push_back(make_instruction(spv::OpULessThan, b, ok_k, {off_k, f.starts.at({g.param, g.bytes})}));
    uint32_t next = 0;
    branch_and_throw(f, access, m.line, ok_k, param_name(f, g.param), off_k, size, &links, &throws, &next);
  }
  links.push_back(make_instruction(spv::OpBranch, 0, 0, {cont}));
  cold->insert(cold->end(), links.begin(), links.end());
  cold->insert(cold->end(), throws.begin(), throws.end());
}

void Checker::rewrite(Fn& f, Insts* out) {
  const memory::FunctionAccesses& fa = accesses_[f.id];
  std::map<size_t, uint32_t> checked_at;  // instruction index -> the parameter its check uses
  for (const memory::Access& a : fa.accesses)
    if (checkable(f, a) && f.bounded.count(a.trace.param)) checked_at[a.inst] = a.trace.param;
  std::map<size_t, uint32_t> local_at;  // instruction index -> the __local variable its check uses
  for (const memory::LocalAccess& a : fa.local_accesses) local_at[a.inst] = a.variable;
  std::map<size_t, const memory::Call*> calls;
  for (const memory::Call& c : fa.calls) calls[c.inst] = &c;

  // The header: the function's new type, its parameters, the hidden ones.
  const uint32_t u64 = ulong_type();
  Instruction fn = m_.insts[f.first];
  std::vector<uint32_t> types;
  Insts params;
  for (uint32_t k = 0; k < f.user_params; ++k) params.push_back(m_.insts[f.first + 1 + k]);
  if (f.bounds_struct && !f.bounded.empty()) {
    f.bounds_param = fresh();
    params.push_back(make_instruction(spv::OpFunctionParameter,
                                      pointer(spv::StorageClassFunction, bounds_struct_type(2 * f.bounded.size())),
                                      f.bounds_param, {}));
    names_.push_back(make_name(f.bounds_param, "__zex_bounds"));
    if (f.entry) {  // a by-value struct, as llvm-spirv writes one
      decorations_.push_back(decorate(f.bounds_param, spv::DecorationFuncParamAttr, {spv::FunctionParameterAttributeByVal}));
      decorations_.push_back(decorate(f.bounds_param, spv::DecorationAlignment, {8}));
    }
  }
  for (uint32_t p : f.bounded) {  // the bounds' values: parameters, or loaded from the struct at entry
    const uint32_t base = fresh(), end = fresh();
    f.bounds[p] = {base, end};
    if (f.bounds_param) continue;  // named where the prologue loads them (if it does)
    params.push_back(make_instruction(spv::OpFunctionParameter, u64, base, {}));
    params.push_back(make_instruction(spv::OpFunctionParameter, u64, end, {}));
    const std::vector<std::string>& n = ctx_.names(f.params[p]);
    const std::string name = n.empty() ? std::to_string(p) : n.front();
    names_.push_back(make_name(base, "__zex_base_" + name));
    names_.push_back(make_name(end, "__zex_end_" + name));
  }
  if (f.needs_state) {
    if (f.has_state) {
      params.push_back(m_.insts[f.first + 1 + f.user_params]);
      f.state = params.back().result_id;
    } else {
      f.state = f.new_state_param = fresh();
      params.push_back(make_instruction(spv::OpFunctionParameter, state_pointer_type(), f.state, {}));
      names_.push_back(make_name(f.state, "__zex_state"));
      if (f.entry) {  // a by-value struct, as llvm-spirv writes one
        decorations_.push_back(decorate(f.state, spv::DecorationFuncParamAttr, {spv::FunctionParameterAttributeByVal}));
        decorations_.push_back(decorate(f.state, spv::DecorationAlignment, {8}));
      }
    }
  }
  std::vector<std::pair<uint32_t, spv_operand_type_t>> ops{{fn.type_id, SPV_OPERAND_TYPE_ID}};
  for (const Instruction& p : params) ops.push_back({p.type_id, SPV_OPERAND_TYPE_ID});
  fn.words[4] = global(spv::OpTypeFunction, 0, ops);
  out->push_back(fn);
  out->insert(out->end(), params.begin(), params.end());

  auto found = assert_calls_.find(f.id);
  const std::set<size_t>* asserts = found == assert_calls_.end() ? nullptr : &found->second;
  // The body: each check splits its block; phis of a split block's successors name its last part.
  size_t i = f.first + 1;
  while (i < f.last && m_.insts[i].opcode == spv::OpFunctionParameter) ++i;
  Insts body, cold;
  // Not where barriers are: a thrower there goes on with its reads zeroed (barrier_throws.cpp), and a
  // group's earlier members, read for real without the group, may decide which barriers it reaches.
  const std::vector<Group> groups =
      options_.memory && !barrier_fns_.count(f.id) ? groups_of(f, checked_at, i) : std::vector<Group>();
  std::map<size_t, const Group*> group_lead;  // a group's first member -> the group
  std::set<size_t> grouped;                   // every member of a group
  for (const Group& g : groups) {
    group_lead[g.members.front().inst] = &g;
    for (const Member& m : g.members) grouped.insert(m.inst);
  }
  std::map<uint32_t, uint32_t> last_part;  // original label -> the label of its last part
  uint32_t label = 0, original = 0;
  // The prologue (after the entry block's variables): a variable per call that passes a bounds struct
  // it builds, the bounds loaded from the function's own struct, the sizes. Only what the body uses: a
  // function that only passes its bounds on stays as it was apart from its parameters (llvm-spirv's
  // kernel wrappers must keep their one call; throw_graph.cpp).
  std::map<size_t, uint32_t> struct_vars;  // call instruction -> the variable its bounds struct goes in
  bool uses_values = !checked_at.empty();
  for (const auto& c : calls) {
    auto g = fns_.find(c.second->callee);
    if (g == fns_.end() || !g->second.needs_state || g->second.bounded.empty()) continue;
    if (!g->second.bounds_struct) {
      uses_values = true;
    } else if (!forwards_bounds(f, g->second, *c.second)) {
      uses_values = true;
      struct_vars[c.first] = fresh();
    }
  }
  bool entry_block = true, sizes_done = f.bounded.empty() && struct_vars.empty();
  // Pointer id -> the bytes checked through it in this (original) block, and the pointer its accesses
  // then go through (a __local access's select, else the pointer itself).
  struct Covered {
    uint64_t bytes = 0;
    uint32_t through = 0;
  };
  std::map<uint32_t, Covered> covered;
  const Instruction* line = nullptr;  // the OpLine in effect (an OpNoLine or a block's end ends it)
  for (; i < f.last; ++i) {
    const Instruction& in = m_.insts[i];
    for (const Instruction& a : in.annotations) {
      if (a.opcode == spv::OpLine) line = &a;
      if (a.opcode == spv::OpNoLine) line = nullptr;
    }
    if (in.opcode == spv::OpLabel) {
      line = nullptr;
      covered.clear();
      if (original && label != original) last_part[original] = label;
      label = original = in.result_id;
      if (!entry_block && !sizes_done) sizes_done = true;
      body.push_back(in);
      continue;
    }
    if (entry_block && !sizes_done && in.opcode != spv::OpVariable) {
      for (const auto& v : struct_vars) {
        const Fn& g = fns_[calls.at(v.first)->callee];
        Instruction var = make_instruction(spv::OpVariable,
                                           pointer(spv::StorageClassFunction, bounds_struct_type(2 * g.bounded.size())),
                                           v.second, {});
        add_operand(var, spv::StorageClassFunction, SPV_OPERAND_TYPE_STORAGE_CLASS);
        body.push_back(var);
      }
      if (f.bounds_param && uses_values) {
        const uint32_t slot = pointer(spv::StorageClassFunction, u64);
        uint32_t k = 0;
        for (const auto& b : f.bounds) {
          const std::vector<std::string>& n = ctx_.names(f.params[b.first]);
          const std::string name = n.empty() ? std::to_string(b.first) : n.front();
          names_.push_back(make_name(b.second.first, "__zex_base_" + name));
          names_.push_back(make_name(b.second.second, "__zex_end_" + name));
          for (uint32_t id : {b.second.first, b.second.second}) {
            const uint32_t at = fresh();
            body.push_back(make_instruction(spv::OpInBoundsAccessChain, slot, at, {f.bounds_param, uint_constant(k++)}));
            body.push_back(make_instruction(spv::OpLoad, u64, id, {at}));
          }
        }
      }
      // A __local parameter's bounds as addresses (they came relative to it), for its checks and calls.
      if (uses_values)
        for (uint32_t p : f.bounded) {
          if (!is_local(f, p)) continue;
          const uint32_t at = fresh(), base = fresh(), end = fresh();
          body.push_back(make_instruction(spv::OpConvertPtrToU, u64, at, {f.params[p]}));
          body.push_back(make_instruction(spv::OpIAdd, u64, base, {at, f.bounds[p].first}));
          body.push_back(make_instruction(spv::OpIAdd, u64, end, {at, f.bounds[p].second}));
          f.absolute[p] = {base, end};
        }
      if (!checked_at.empty()) {
        for (const auto& b : f.bounds) {
          const uint32_t s = fresh();
          f.size[b.first] = s;
          body.push_back(make_instruction(spv::OpISub, u64, s, {b.second.second, b.second.first}));
        }
        std::vector<std::pair<uint32_t, uint64_t>> sizes;  // (parameter, bytes) of every check
        for (const auto& c : checked_at) sizes.push_back({c.second, access_bytes(m_.insts[c.first])});
        for (const Group& g : groups) sizes.push_back({g.param, g.span()});
        for (const auto& c : sizes) {
          const uint64_t bytes = c.second;
          uint32_t& st = f.starts[{c.first, bytes}];
          if (st) continue;
          const uint32_t s = f.size.at(c.first);
          if (bytes == 1) {
            st = s;
            continue;
          }
          const uint32_t fits = fresh(), rest = fresh();
          st = fresh();
          body.push_back(make_instruction(spv::OpUGreaterThanEqual, bool_type(), fits, {s, ulong_constant(bytes)}));
          body.push_back(make_instruction(spv::OpISub, u64, rest, {s, ulong_constant(bytes - 1)}));
          body.push_back(make_instruction(spv::OpSelect, u64, st, {fits, rest, ulong_constant(0)}));
        }
      }
      sizes_done = true;
    }
    if (is_terminator(in.opcode)) entry_block = false;
    if (asserts && asserts->count(i)) {
      assertion(f, in, line, &body, &label);
      continue;
    }
    auto c = checked_at.find(i);
    auto lc = local_at.find(i);
    if (c != checked_at.end() || lc != local_at.end()) {
      const size_t w = access_pointer_word(in.opcode);
      const uint32_t ptr = in.word(w);
      const uint64_t bytes = access_bytes(in);
      Covered& done = covered[ptr];
      auto lead = group_lead.find(i);
      if (lead != group_lead.end()) {
        check_group(f, *lead->second, &body, &cold, &label);
        done = {bytes, ptr};
      } else if (grouped.count(i)) {
        // A later member of a group: the group's check, at its first member, covered its bytes.
        if (counts_ && options_.memory) ++counts_->merged;
        done = {std::max(done.bytes, bytes), done.through ? done.through : ptr};
      } else if (done.bytes >= bytes) {
        // An access through a pointer that an earlier check of this block already covered for as many
        // bytes (y[i] read, then written) cannot fail its own check: that one threw and returned first.
        // A thrower in a kernel with barriers gets here too: it goes through the earlier one's select.
        if (counts_ && options_.memory) ++counts_->merged;
      } else if (c != checked_at.end()) {
        done = {bytes, check(f, in, line, c->second, bytes, &body, &cold, &label)};
      } else {
        done = {bytes, check_local(f, in, line, lc->second, bytes, &body, &cold, &label)};
      }
      if (done.through != ptr) {
        Instruction redirected = in;
        redirected.words[w] = done.through;
        body.push_back(redirected);
        continue;
      }
    }
    auto call = calls.find(i);
    if (call != calls.end() && fns_.count(call->second->callee) && fns_[call->second->callee].needs_state) {
      const Fn& g = fns_[call->second->callee];
      Instruction nc = make_instruction(spv::OpFunctionCall, in.type_id, in.result_id, {in.word(3)});
      nc.annotations = in.annotations;
      for (uint32_t k = 0; k < g.user_params; ++k) add_operand(nc, in.word(4 + k), SPV_OPERAND_TYPE_ID);
      // Per bounded parameter of the callee, the caller's bounds of the argument, else unbounded.
      std::vector<uint32_t> values;
      auto var = struct_vars.find(i);
      const bool forwarded = g.bounds_struct && !g.bounded.empty() && var == struct_vars.end();
      for (uint32_t q : g.bounded) {
        if (forwarded) break;  // the caller's own struct goes on as it came
        const Trace t = q < call->second->args.size() ? call->second->args[q] : Trace{};
        const bool local = is_local(g, q);
        const bool traced = t.origin == Origin::Param && f.bounds.count(t.param) && is_local(f, t.param) == local;
        if (!local) {
          values.push_back(traced ? f.bounds[t.param].first : ulong_constant(0));
          values.push_back(traced ? f.bounds[t.param].second : ulong_constant(~uint64_t(0)));
          continue;
        }
        // A __local parameter's: the bounds relative to the pointer passed (unbounded: all of memory).
        const uint32_t argument = fresh(), base = fresh(), end = fresh();
        body.push_back(make_instruction(spv::OpConvertPtrToU, u64, argument, {in.word(4 + q)}));
        body.push_back(make_instruction(spv::OpISub, u64, base,
                                        {traced ? f.absolute.at(t.param).first : ulong_constant(0), argument}));
        body.push_back(make_instruction(spv::OpISub, u64, end,
                                        {traced ? f.absolute.at(t.param).second : ulong_constant(~uint64_t(0)), argument}));
        values.push_back(base);
        values.push_back(end);
      }
      if (!g.bounds_struct || g.bounded.empty()) {
        for (uint32_t v : values) add_operand(nc, v, SPV_OPERAND_TYPE_ID);
      } else if (var == struct_vars.end()) {  // the caller's own struct, passed on as it came
        add_operand(nc, f.bounds_param, SPV_OPERAND_TYPE_ID);
      } else {
        const uint32_t composite = fresh();
        body.push_back(make_instruction(spv::OpCompositeConstruct, bounds_struct_type(values.size()), composite, values));
        body.push_back(make_instruction(spv::OpStore, 0, 0, {var->second, composite}));
        add_operand(nc, var->second, SPV_OPERAND_TYPE_ID);
      }
      add_operand(nc, g.has_state ? in.word(4 + g.user_params) : f.state, SPV_OPERAND_TYPE_ID);
      body.push_back(nc);
      continue;
    }
    body.push_back(in);
  }
  if (original && label != original) last_part[original] = label;
  if (!last_part.empty())
    for (Instruction& in : body)
      if (in.opcode == spv::OpPhi)
        for (size_t k = 4; k < in.size(); k += 2) {
          auto it = last_part.find(in.words[k]);
          if (it != last_part.end()) in.words[k] = it->second;
        }
  out->insert(out->end(), body.begin(), body.end());
  out->insert(out->end(), cold.begin(), cold.end());
  out->push_back(m_.insts[f.last]);
}

bool Checker::run(std::vector<KernelMemoryChecks>* out, MemoryCheckCounts* counts) {
  counts_ = counts;
  // Read: the functions, the kernels, what each must be given.
  std::map<uint32_t, std::string> entries;
  for (const Instruction& i : m_.insts) {
    if (i.opcode == spv::OpFunction) break;
    if (i.opcode == spv::OpEntryPoint && i.size() >= 4 && i.word(1) == spv::ExecutionModelKernel)
      entries.emplace(i.word(2), i.string_at(3));
  }
  if (entries.empty()) return false;
  accesses_ = memory::analyze_functions(ctx_);
  // The functions a barrier's work-group may meet a thrower of: those with a barrier or a collective,
  // and every function joined to one by calls either way (a helper's thrower goes on in its caller; a
  // caller's, through its helpers).
  for (const IRContext::FunctionRange& r : ctx_.functions())
    if (r.defined && std::any_of(m_.insts.begin() + r.first, m_.insts.begin() + r.last,
                                 [](const Instruction& i) { return is_barrier_like(i.opcode); }))
      barrier_fns_.insert(r.id);
  for (bool grew = !barrier_fns_.empty(); grew;) {
    grew = false;
    for (const auto& e : accesses_)
      for (const memory::Call& c : e.second.calls) {
        const bool caller = barrier_fns_.count(e.first) != 0, callee = barrier_fns_.count(c.callee) != 0;
        if (caller == callee) continue;
        barrier_fns_.insert(caller ? c.callee : e.first);
        grew = true;
      }
  }
  // __local variables of a known size are checked against it (with memory checks on); the others are
  // counted with the accesses through __local parameters.
  for (auto& e : accesses_) {
    std::vector<memory::LocalAccess> kept;
    for (const memory::LocalAccess& a : e.second.local_accesses) {
      const Instruction* var = def(a.variable);
      const Instruction* pt = var ? def(var->type_id) : nullptr;
      bool exact = pt && pt->opcode == spv::OpTypePointer;
      const uint64_t size = exact ? bytes_of(pt->word(3), 0, &exact) : 0;
      if (options_.memory && exact) {
        local_sizes_[a.variable] = size;
        kept.push_back(a);
      } else {
        ++e.second.local;
      }
    }
    e.second.local_accesses = std::move(kept);
  }
  for (const IRContext::FunctionRange& r : std::vector<IRContext::FunctionRange>(ctx_.functions())) {
    if (!r.defined) continue;
    Fn f;
    f.id = r.id;
    f.first = r.first;
    f.last = r.last;
    auto e = entries.find(r.id);
    f.entry = e != entries.end();
    if (f.entry) f.kernel = e->second;
    for (size_t k = r.first + 1; k < r.last && m_.insts[k].opcode == spv::OpFunctionParameter; ++k)
      f.params.push_back(m_.insts[k].result_id);
    f.has_state = f.entry && !f.params.empty() && is_state_type(def(f.params.back())->type_id);
    f.user_params = static_cast<uint32_t>(f.params.size()) - (f.has_state ? 1 : 0);
    fns_[f.id] = f;
  }
  if (options_.asserts)
    for (const auto& i : ctx_.imports())
      if (is_assert_import(i.second)) {
        const size_t at = ctx_.def_index(i.first);
        if (at != IRContext::npos && m_.insts[at].opcode == spv::OpFunction) assert_fns_.insert(i.first);
      }
  if (!assert_fns_.empty())
    for (const auto& e : fns_)
      for (size_t k = e.second.first; k < e.second.last; ++k)
        if (m_.insts[k].opcode == spv::OpFunctionCall && assert_fns_.count(m_.insts[k].word(3))) assert_calls_[e.first].insert(k);
  // A helper whose last parameter is its callers' zex_state_t (every call passes the caller's own: a
  // kernel's body behind llvm-spirv's entry-point wrapper, a helper of zex code) throws with it; any
  // other helper (one called from nowhere too) gets the state as a hidden parameter.
  for (bool grew = true; grew;) {
    grew = false;
    for (auto& e : fns_) {
      Fn& g = e.second;
      if (g.entry || g.has_state || g.params.empty() || !is_state_type(def(g.params.back())->type_id)) continue;
      bool all = false;
      for (const auto& c : fns_) {
        for (const memory::Call& call : accesses_[c.first].calls) {
          if (call.callee != g.id) continue;
          const Instruction& in = m_.insts[call.inst];
          const bool passes_state = c.second.has_state && in.size() == 4 + g.params.size() &&
                                    in.words.back() == c.second.params.back();
          if (!passes_state) goto next;
          all = true;
        }
      }
      if (all) {
        g.has_state = grew = true;
        g.user_params = static_cast<uint32_t>(g.params.size()) - 1;
      }
    next:;
    }
  }
  // Which parameters need bounds: those an access goes through, and those passed on to a callee's.
  for (bool grew = options_.memory; grew;) {
    grew = false;
    for (auto& e : fns_) {
      Fn& f = e.second;
      const memory::FunctionAccesses& fa = accesses_[f.id];
      for (const memory::Access& a : fa.accesses)
        if (checkable(f, a)) grew = f.bounded.insert(a.trace.param).second || grew;
      for (const memory::Call& c : fa.calls) {
        auto g = fns_.find(c.callee);
        if (g == fns_.end() || g == fns_.find(f.id)) continue;
        for (uint32_t q : g->second.bounded) {
          if (q >= c.args.size()) continue;
          const Trace& t = c.args[q];
          if (t.origin == Origin::Param && eligible(f, t.param) && is_local(f, t.param) == is_local(g->second, q))
            grew = f.bounded.insert(t.param).second || grew;
        }
      }
    }
  }
  for (bool grew = true; grew;) {
    grew = false;
    for (auto& e : fns_) {
      Fn& f = e.second;
      bool needs = (options_.memory && f.entry) || !f.bounded.empty() || assert_calls_.count(f.id) ||
                   !accesses_[f.id].local_accesses.empty();
      for (const memory::Call& c : accesses_[f.id].calls) {
        auto g = fns_.find(c.callee);
        needs = needs || (g != fns_.end() && g->second.needs_state);
      }
      if (needs && !f.needs_state) f.needs_state = grew = true;
    }
  }
  // llvm-spirv's entry-point wrappers: a kernel whose body only calls a function with its own
  // parameters, in order. Its reverse translation (zex-cpu's front end, IGC's) makes that function the
  // kernel and reads the kernel's argument metadata off the wrapper, so both must take the same hidden
  // parameters: the body gets the wrapper's bounds and state even where it would need neither.
  for (auto& e : fns_) {
    Fn& w = e.second;
    const memory::FunctionAccesses& fa = accesses_[w.id];
    if (!w.entry || fa.calls.size() != 1 || !fa.accesses.empty() || fa.local || !fa.local_accesses.empty()) continue;
    auto b = fns_.find(fa.calls[0].callee);
    if (b == fns_.end() || b->second.entry || b->second.params.size() != w.params.size()) continue;
    bool forwards = true;
    for (size_t k = 0; k < w.params.size(); ++k)
      forwards = forwards && m_.insts[fa.calls[0].inst].word(4 + k) == w.params[k];
    size_t real = 0;
    for (size_t k = w.first + 1 + w.params.size(); k < w.last; ++k) {
      const uint16_t o = m_.insts[k].opcode;
      real += o != spv::OpLabel && o != spv::OpReturn && o != spv::OpFunctionCall;
    }
    if (!forwards || real || b->second.has_state != w.has_state) continue;
    Fn& body = b->second;
    w.bounded.insert(body.bounded.begin(), body.bounded.end());
    body.bounded = w.bounded;
    body.needs_state = body.needs_state || w.needs_state;
    body.bounds_struct = true;  // the kernel after reverse translation
  }
  for (auto& e : fns_) {
    if (e.second.entry) e.second.bounds_struct = true;
    for (uint32_t p : e.second.bounded)
      if (is_local(e.second, p)) e.second.local_bounded.push_back(p);
  }
  if (counts && options_.memory) {
    *counts = MemoryCheckCounts{};
    for (const auto& e : fns_) {
      const memory::FunctionAccesses& fa = accesses_[e.first];
      counts->local += fa.local;
      counts->checked += fa.local_accesses.size();
      for (const memory::Access& a : fa.accesses) {
        if (checkable(e.second, a) && e.second.bounded.count(a.trace.param)) ++counts->checked;
        else if (a.local) ++counts->local;
        else if (a.trace.origin == Origin::Loaded) ++counts->loaded;
        else if (a.trace.origin == Origin::Integer) ++counts->from_integer;
        else if (a.trace.origin == Origin::Local) ++counts->local;
        else ++counts->untraced;
      }
    }
  }
  // Declines, before anything is written: calls the rewrite could not give their arguments.
  for (const auto& e : fns_)
    for (const memory::Call& c : accesses_[e.first].calls) {
      auto g = fns_.find(c.callee);
      if (g != fns_.end() && g->second.needs_state && m_.insts[c.inst].size() < 4 + g->second.params.size())
        throw std::invalid_argument("add_memory_checks: a call passes fewer arguments than its callee takes");
    }
  for (const auto& i : ctx_.imports())
    if (i.second == "zex_throw") {
      const size_t at = ctx_.def_index(i.first);
      if (at == IRContext::npos || m_.insts[at].opcode != spv::OpFunction) continue;
      const Instruction* t = def(m_.insts[at].word(4));
      if (!t || t->opcode != spv::OpTypeFunction || t->size() != 13)
        throw std::invalid_argument("add_memory_checks: the module imports zex_throw with another signature");
      zex_throw_ = i.first;
    }
  bool any = false;
  for (const auto& e : fns_)
    any = any || (e.second.needs_state && e.second.entry && !e.second.has_state) || !e.second.bounded.empty() ||
          !accesses_[e.first].local_accesses.empty();
  any = any || !assert_calls_.empty();
  if (!any) {
    report(out);
    return false;
  }

  // Write.
  capabilities_.insert(spv::CapabilityInt64);
  std::map<uint32_t, Instruction> empty_return;  // assert import -> its empty body's return, made before
  for (uint32_t a : assert_fns_)                 // the globals are placed (an OpUndef is one)
    empty_return.emplace(a, return_of(def(a)->type_id));
  std::map<size_t, Insts> bodies;  // first instruction index -> the function's new instructions
  for (auto& e : fns_) {
    Fn& f = e.second;
    if (!f.needs_state) continue;
    rewrite(f, &bodies[f.first]);
  }
  for (const Instruction& i : m_.insts)
    if (i.opcode == spv::OpCapability) capabilities_.erase(i.word(1));
  // Where the new names, decorations and globals go.
  size_t name_at = 0, deco_at = 0, globals_at = 0;
  bool names_seen = false, decos_seen = false;
  for (size_t k = 0; k < m_.insts.size(); ++k) {
    const uint16_t o = m_.insts[k].opcode;
    if (!is_preamble(o)) {
      globals_at = k;
      break;
    }
    if (o == spv::OpName || o == spv::OpMemberName) name_at = k + 1, names_seen = true;
    if (is_module_annotation(o)) deco_at = k + 1, decos_seen = true;
    if (!names_seen && (o == spv::OpModuleProcessed || is_module_annotation(o)) && !name_at) name_at = k;
  }
  if (!decos_seen) deco_at = globals_at;
  if (!names_seen && !name_at) name_at = deco_at;
  size_t first_function = m_.insts.size();
  for (size_t k = globals_at; k < m_.insts.size(); ++k)
    if (m_.insts[k].opcode == spv::OpFunction) {
      first_function = k;
      break;
    }
  Insts result;
  result.reserve(m_.insts.size() + globals_.size() + 64);
  for (uint32_t cap : capabilities_) {
    Instruction c = make_instruction(spv::OpCapability, 0, 0, {});
    add_operand(c, cap, SPV_OPERAND_TYPE_CAPABILITY);
    result.push_back(c);
  }
  for (size_t k = 0; k <= m_.insts.size(); ++k) {
    if (k == name_at) result.insert(result.end(), names_.begin(), names_.end());
    if (k == deco_at) result.insert(result.end(), decorations_.begin(), decorations_.end());
    if (k == first_function) {
      result.insert(result.end(), globals_.begin(), globals_.end());
      result.insert(result.end(), declarations_.begin(), declarations_.end());
    }
    if (k == m_.insts.size()) break;
    if (assert_fns_.count(m_.insts[k].result_id) && m_.insts[k].opcode == spv::OpFunction) {
      // The import nobody calls now gets an empty body (its debug information may name it), not a
      // definition from elsewhere: the driver would otherwise have to resolve it.
      const Instruction ret = empty_return.at(m_.insts[k].result_id);
      size_t e = k;
      while (e < m_.insts.size() && m_.insts[e].opcode != spv::OpFunctionEnd) result.push_back(std::move(m_.insts[e++]));
      result.push_back(make_instruction(spv::OpLabel, 0, fresh(), {}));
      result.push_back(ret);
      if (e < m_.insts.size()) result.push_back(std::move(m_.insts[e]));
      k = e;
      continue;
    }
    if (m_.insts[k].opcode == spv::OpDecorate && m_.insts[k].size() >= 5 &&
        m_.insts[k].word(2) == spv::DecorationLinkageAttributes && assert_fns_.count(m_.insts[k].word(1)))
      continue;
    auto b = bodies.find(k);
    if (b != bodies.end()) {
      result.insert(result.end(), b->second.begin(), b->second.end());
      k = fns_[m_.insts[k].result_id].last;
      continue;
    }
    result.push_back(std::move(m_.insts[k]));
  }
  report(out);
  m_.insts = std::move(result);
  m_.header[3] = next_;
  return true;
}

}  // namespace

Status add_memory_checks(IRContext& ctx, std::vector<KernelMemoryChecks>* kernels, MemoryCheckCounts* counts,
                         const CheckOptions& options) {
  if (kernels) kernels->clear();
  if (counts) *counts = MemoryCheckCounts{};
  Checker c(ctx, options);
  return changed_if(c.run(kernels, counts));
}

bool imports_assert(IRContext& ctx) {
  for (const auto& i : ctx.imports())
    if (is_assert_import(i.second)) return true;
  return false;
}

}  // namespace passes
}  // namespace zex
