// number_throw_paths: a throw ends the work-item wherever it happens, and every throw path gets an id.
//
// 1. A throw ends the work-item. OpenCL C cannot leave a kernel from a helper, and ZEX_THROW's `return`
//    leaves only the current function: thrown from a helper, the work-item went on (issue 15, item 3).
//    So every function that may throw (one that calls a zex throw entry point, or calls one that may
//    throw; kernels excepted) returns a flag: `bool` for a void function, `{T, bool}` for one that
//    returns T. Its throw exits return true, its other returns false, and every call to it is followed
//    by a branch, predicted not taken, to a block that returns "thrown" (or, in a kernel, returns).
//    The flag travels in the return value, never in memory: a Function-storage flag would be private
//    memory wherever Intel's compiler does not inline. A throw exit is any edge out of a block that
//    calls a throw entry point (zex_throw, zex_throw_site, the three-call protocol's blocks), and out of
//    blocks reached only through such edges; an exit edge into a block that also lies on a normal path
//    goes to the function's "thrown" return block instead (in a kernel, only if that block does more
//    than return).
// 2. Throw-path ids. Every zex_throw whose name, reason, function and file are constant strings and
//    whose line, value count and kind are constants becomes zex_throw_site(zex, id, a, b): the id names the
//    whole path, kernel -> ... -> throw site, and the table the pass returns holds its name, reason
//    and frames (innermost first). Paths are numbered per kernel in call order; a function reached by
//    one path only knows its ids as constants; a function reached by several gets the path's base as
//    a hidden last parameter (each caller passes its own base plus the call site's offset), so the
//    id is exact, never "one of several callers". Frames come from the debug information where there
//    is some (DebugScope/DebugInlinedAt of OpenCL.DebugInfo.100: functions the front end inlined keep
//    their frames and lines; OpLine gives a call's line) and from the call graph and OpName otherwise
//    (line 0: unknown).
//
// A kernel called as a function is called through a copy (kernel_calls.cpp). Left alone (the module is
// returned unchanged): a module with recursion (OpenCL C has none), and anything malformed. docs/spirv-passes.md has the order.
#include "spirv/passes/passes.hpp"

#include <zex/abi.h>

#include <spirv/unified1/OpenCLDebugInfo100.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>

namespace zex {
namespace passes {

namespace {

using Insts = std::vector<Instruction>;


// More ids than this in one module and the numbering is dropped (the flags stay): paths multiply
// through shared helpers, and the host keeps one table entry per path.
constexpr uint64_t kMaxPaths = 1u << 16;

struct Block {
  Instruction label;
  Insts insts;
  uint32_t id() const { return label.result_id; }
};

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

class Pass {
 public:
  // `names`: functions whose frames say another name than their OpName (kernel_calls.cpp's copies).
  explicit Pass(Module& m, const std::map<uint32_t, std::string>& names = {}) : m_(m), next_(m.header[3]), renamed_(names) {}

  bool run(detail::SiteTable* out) {
    index_defs();
    for (auto& [id, name] : imported_functions(m_)) {
      static const std::set<std::string> entries{"zex_throw", "zex_throw_site", "zex_report_exception",
                                                 "zex_report_exception_values", "zex_report_frame",
                                                 "zex_signal_exception"};
      if (entries.count(name)) throw_entry_[id] = name;
    }
    if (throw_entry_.empty()) return false;
    if (!collect_functions()) return false;
    if (!mark_may_throw()) return false;
    bool any = false;
    for (Function& f : fns_) any = any || f.may_throw || has_throw_call(f);
    if (!any) return false;
    if (out) number(out);
    const std::vector<uint32_t> before = to_words(m_);
    rewrite();
    m_.header[3] = next_;
    // A table whose ids no site stores (zex_throw_site could not be declared) would also make
    // zex::Module set a spec constant the module does not declare, which a driver refuses.
    if (out && !site_base_) out->clear();
    return to_words(m_) != before;
  }

 private:
  // ---- module facts ----
  void index_defs() {
    names_.insert(renamed_.begin(), renamed_.end());
    for (size_t k = 0; k < m_.insts.size(); ++k) {
      const Instruction& i = m_.insts[k];
      if (i.result_id) def_[i.result_id] = k;
      if (i.opcode == spv::OpExtInstImport && i.string_at(2) == "OpenCL.DebugInfo.100") debug_set_ = i.result_id;
      if (i.opcode == spv::OpString) strings_[i.result_id] = i.string_at(2);
      if (i.opcode == spv::OpName && !renamed_.count(i.word(1))) names_.emplace(i.word(1), i.string_at(2));
      if (i.opcode == spv::OpEntryPoint) entries_.insert(i.word(2));
    }
  }
  const Instruction* def(uint32_t id) const {
    auto d = def_.find(id);
    return d == def_.end() ? nullptr : &m_.insts[d->second];
  }
  bool is_debug(const Instruction& i, uint32_t which) const {
    return i.opcode == spv::OpExtInst && debug_set_ && i.word(3) == debug_set_ && i.word(4) == which;
  }

  bool collect_functions() {
    for (size_t k = 0; k < m_.insts.size(); ++k) {
      if (m_.insts[k].opcode != spv::OpFunction) continue;
      Function f;
      f.id = m_.insts[k].result_id;
      f.first = k;
      size_t j = k + 1;
      for (; j < m_.insts.size() && m_.insts[j].opcode != spv::OpFunctionEnd; ++j) {
        const Instruction& i = m_.insts[j];
        if (i.opcode == spv::OpLabel)
          f.blocks.push_back({i, {}});
        else if (f.blocks.empty())
          f.head.push_back(i);
        else
          f.blocks.back().insts.push_back(i);
      }
      if (j == m_.insts.size()) return false;
      f.last = j;
      k = j;
      if (f.blocks.empty()) continue;  // a declaration (the zex imports)
      for (const Block& b : f.blocks)
        if (b.insts.empty() || !is_terminator(b.insts.back().opcode)) return false;
      f.entry = entries_.count(f.id) != 0;
      fn_index_[f.id] = fns_.size();
      fns_.push_back(std::move(f));
    }
    for (Function& f : fns_) {
      for (size_t b = 0; b < f.blocks.size(); ++b) {
        Loc loc;
        for (size_t k = 0; k < f.blocks[b].insts.size(); ++k) {
          const Instruction& i = f.blocks[b].insts[k];
          for (const Instruction& a : i.annotations) {
            if (a.opcode == spv::OpLine) {
              loc.file = a.word(1);
              loc.line = a.word(2);
            } else if (a.opcode == spv::OpNoLine) {
              loc.file = loc.line = 0;
            } else if (is_debug(a, OpenCLDebugInfo100DebugScope)) {
              loc.scope = a.word(5);
              loc.inlined = a.size() > 6 ? a.word(6) : 0;
            } else if (is_debug(a, OpenCLDebugInfo100DebugNoScope)) {
              loc.scope = loc.inlined = 0;
            }
          }
          if (i.opcode != spv::OpFunctionCall) continue;
          const uint32_t callee = i.word(3);
          if (entries_.count(callee)) return false;  // a kernel called as a function
          if (fn_index_.count(callee) || throw_entry_.count(callee)) f.calls.push_back({b, k, callee, loc});
        }
      }
      // llvm-spirv-15 writes each kernel as a function and an entry point that only calls it.
      if (f.entry && f.blocks.size() == 1 && f.calls.size() == 1 && fn_index_.count(f.calls[0].callee)) {
        size_t real = 0;
        for (const Instruction& i : f.blocks[0].insts) real += i.opcode != spv::OpLine && i.opcode != spv::OpNoLine;
        f.wrapper = real == 2;
      }
    }
    // The function a wrapper calls is the kernel for every reader of the module: llvm-spirv's reverse
    // translation (and so zex-cpu's and Intel's front ends) gives it the kernel's calling convention,
    // which requires a void return. It keeps its type and ends the work-item by returning, as a kernel
    // does; a module that calls it from anywhere else is left alone.
    std::map<uint32_t, size_t> calls_to;
    for (const Function& f : fns_)
      for (const Call& c : f.calls) ++calls_to[c.callee];
    for (Function& f : fns_)
      if (f.wrapper) {
        Function& body = fns_[fn_index_.at(f.calls[0].callee)];
        if (calls_to[body.id] != 1 || body.entry) return false;
        body.kernel_body = true;
      }
    return true;
  }

  // zex_throw, zex_throw_site, and the three-call protocol's last call: the throw is complete.
  bool completes_throw(uint32_t callee) const {
    auto e = throw_entry_.find(callee);
    return e != throw_entry_.end() &&
           (e->second == "zex_throw" || e->second == "zex_throw_site" || e->second == "zex_signal_exception");
  }
  bool has_throw_call(const Function& f) const {
    for (const Call& c : f.calls)
      if (throw_entry_.count(c.callee)) return true;
    return false;
  }

  // may_throw over the call graph; false on recursion.
  bool mark_may_throw() {
    std::vector<int> state(fns_.size(), 0);  // 0 new, 1 on the stack, 2 done
    std::function<bool(size_t)> visit = [&](size_t k) {
      if (state[k] == 1) return false;
      if (state[k] == 2) return true;
      state[k] = 1;
      Function& f = fns_[k];
      bool t = has_throw_call(f);
      for (const Call& c : f.calls) {
        auto g = fn_index_.find(c.callee);
        if (g == fn_index_.end()) continue;
        if (!visit(g->second)) return false;
        t = t || fns_[g->second].may_throw;
      }
      f.may_throw = t && !f.entry && !f.kernel_body;
      f.throws = t;
      state[k] = 2;
      return true;
    };
    for (size_t k = 0; k < fns_.size(); ++k)
      if (!visit(k)) return false;
    return true;
  }

  // ---- strings and frames ----
  bool constant_u32(uint32_t id, uint32_t* v) const {
    const Instruction* c = def(id);
    if (!c || c->opcode != spv::OpConstant || c->size() != 4) return false;
    *v = c->word(3);
    return true;
  }
  // The bytes of a constant string whose address `id` is (up to its first NUL), if the pass can follow it.
  bool string_of(uint32_t id, std::string* out, int depth = 0) const {
    const Instruction* i = def(id);
    if (!i || depth > 8) return false;
    switch (i->opcode) {
      case spv::OpAccessChain: case spv::OpInBoundsAccessChain: case spv::OpPtrAccessChain:
      case spv::OpInBoundsPtrAccessChain:
        for (size_t k = 4; k < i->size(); ++k) {
          uint32_t v = 1;
          if (!constant_u32(i->word(k), &v)) {
            const Instruction* c = def(i->word(k));
            if (!c || !(c->opcode == spv::OpConstantNull || (c->opcode == spv::OpConstant && c->size() == 5 &&
                                                           c->word(3) == 0 && c->word(4) == 0)))
              return false;
            v = 0;
          }
          if (v != 0) return false;
        }
        return string_of(i->word(3), out, depth + 1);
      case spv::OpBitcast: case spv::OpPtrCastToGeneric: case spv::OpCopyObject:
        return string_of(i->word(3), out, depth + 1);
      case spv::OpSpecConstantOp:
        if (i->word(3) == spv::OpInBoundsPtrAccessChain || i->word(3) == spv::OpPtrAccessChain ||
            i->word(3) == spv::OpAccessChain || i->word(3) == spv::OpInBoundsAccessChain || i->word(3) == spv::OpBitcast ||
            i->word(3) == spv::OpPtrCastToGeneric)
          return string_of(i->word(4), out, depth + 1);
        return false;
      case spv::OpVariable:
        return i->size() >= 5 && bytes_of(i->word(4), out, depth + 1);
      default:
        return false;
    }
  }
  bool bytes_of(uint32_t id, std::string* out, int depth) const {
    const Instruction* c = def(id);
    if (!c || depth > 8) return false;
    if (c->opcode == spv::OpConstantNull) {
      out->clear();
      return true;
    }
    if (c->opcode != spv::OpConstantComposite) return false;
    const Instruction* first = c->size() > 3 ? def(c->word(3)) : nullptr;
    if (first && first->opcode == spv::OpConstantComposite && c->size() == 4) return bytes_of(c->word(3), out, depth + 1);
    std::string s;
    for (size_t k = 3; k < c->size(); ++k) {
      const Instruction* b = def(c->word(k));
      uint32_t v = 0;
      if (b && b->opcode == spv::OpConstantNull) v = 0;
      else if (!constant_u32(c->word(k), &v)) return false;
      if ((v & 0xff) == 0) break;
      s += static_cast<char>(v & 0xff);
    }
    *out = std::move(s);
    return true;
  }

  std::string function_name(uint32_t fn) const {
    auto n = names_.find(fn);
    return n == names_.end() ? "<function %" + std::to_string(fn) + ">" : n->second;
  }
  // The DebugFunction a scope belongs to (0: none).
  uint32_t debug_function(uint32_t scope) const {
    for (int d = 0; d < 64 && scope; ++d) {
      const Instruction* s = def(scope);
      if (!s) return 0;
      if (is_debug(*s, OpenCLDebugInfo100DebugFunction)) return scope;
      if (is_debug(*s, OpenCLDebugInfo100DebugLexicalBlock)) scope = s->word(8);
      else if (is_debug(*s, OpenCLDebugInfo100DebugLexicalBlockDiscriminator)) scope = s->word(7);
      else return 0;
    }
    return 0;
  }
  std::string scope_function_name(uint32_t scope, uint32_t fallback_fn) const {
    const Instruction* f = def(debug_function(scope));
    if (f) {
      auto s = strings_.find(f->word(5));
      if (s != strings_.end()) return s->second;
    }
    return function_name(fallback_fn);
  }
  std::string scope_file(uint32_t scope) const {
    const Instruction* s = def(scope);
    if (!s || !(is_debug(*s, OpenCLDebugInfo100DebugFunction) || is_debug(*s, OpenCLDebugInfo100DebugLexicalBlock) ||
                is_debug(*s, OpenCLDebugInfo100DebugLexicalBlockDiscriminator)))
      return {};
    const Instruction* src = def(is_debug(*s, OpenCLDebugInfo100DebugFunction) ? s->word(7) : s->word(5));
    if (!src || !is_debug(*src, OpenCLDebugInfo100DebugSource)) return {};
    auto f = strings_.find(src->word(5));
    return f == strings_.end() ? std::string() : f->second;
  }
  // The frames of the functions `inlined` (a DebugInlinedAt) says a location was inlined into.
  void inlined_frames(uint32_t inlined, uint32_t fn, std::vector<Frame>& out) const {
    for (int d = 0; d < 256 && inlined; ++d) {
      const Instruction* ia = def(inlined);
      if (!ia || !is_debug(*ia, OpenCLDebugInfo100DebugInlinedAt) || ia->size() < 7) return;
      Frame f;
      f.function = scope_function_name(ia->word(6), fn);
      f.file = scope_file(ia->word(6));
      f.line = ia->word(5);
      if (f.line == 0) f.file.clear();
      out.push_back(std::move(f));
      inlined = ia->size() > 7 ? ia->word(7) : 0;
    }
  }
  // The frames of a call at `loc` in function `fn`, innermost first.
  std::vector<Frame> call_frames(const Loc& loc, uint32_t fn) const {
    std::vector<Frame> out;
    Frame f;
    f.function = loc.scope ? scope_function_name(loc.scope, fn) : function_name(fn);
    if (loc.line) {
      auto s = strings_.find(loc.file);
      f.file = s != strings_.end() ? s->second : scope_file(loc.scope);
      f.line = loc.line;
    }
    out.push_back(std::move(f));
    inlined_frames(loc.inlined, fn, out);
    return out;
  }

  // A zex_throw whose strings and line are constants: its name, reason and own frames. `value(w)` is
  // the id the site passes as word w of the call (the call's own, or what a phi or select chooses).
  template <class Value>
  bool identify_one(const Function& f, const Call& c, Value value, detail::ThrowSite* site) const {
    Frame own;
    if (!string_of(value(5), &site->name) || !string_of(value(6), &site->reason) ||
        !constant_u32(value(7), &site->value_count) || !constant_u32(value(8), &site->value_kind) ||
        !string_of(value(11), &own.function) || !string_of(value(12), &own.file) || !constant_u32(value(13), &own.line))
      return false;
    site->value_count = std::min<uint32_t>(site->value_count, ZEX_MAX_VALUES);
    site->frames = {own};
    inlined_frames(c.loc.inlined, f.id, site->frames);
    // Without debug information, a throw the front end inlined into another function says only its
    // own name: the function that holds it now is a frame too (the ones in between are gone).
    if (!c.loc.scope && !f.wrapper && function_name(f.id) != own.function && names_.count(f.id))
      site->frames.push_back(Frame{function_name(f.id), {}, 0});
    return true;
  }
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
  bool identify(const Function& f, const Call& c, Sites* out) const {
    auto e = throw_entry_.find(c.callee);
    if (e == throw_entry_.end() || e->second != "zex_throw") return false;
    const Block& b = f.blocks[c.block];
    const Instruction& i = b.insts[c.index];
    if (i.size() != 14) return false;  // zex, name, reason, count, kind, a, b, function, file, line
    auto phi = [&](uint32_t id) -> const Instruction* {
      for (const Instruction& p : b.insts)
        if (p.opcode != spv::OpPhi) break;
        else if (p.result_id == id) return &p;
      return nullptr;
    };
    for (size_t w : {5, 6, 7, 8, 11, 12, 13}) {
      const Instruction* d = def(i.word(w));
      if (const Instruction* p = phi(i.word(w))) {
        if (out->cond) return false;
        if (out->preds.empty())
          for (size_t k = 4; k < p->size(); k += 2) out->preds.push_back(p->word(k));
      } else if (d && d->opcode == spv::OpSelect && d->size() == 6) {
        if (!out->preds.empty() || (out->cond && out->cond != d->word(3))) return false;
        out->cond = d->word(3);
      }
    }
    const size_t choices = out->cond ? 2 : std::max<size_t>(out->preds.size(), 1);
    for (size_t k = 0; k < choices; ++k) {
      bool ok = true;
      auto value = [&](size_t w) -> uint32_t {
        const uint32_t v = i.word(w);
        if (const Instruction* p = phi(v)) {
          for (size_t x = 4; x < p->size(); x += 2)
            if (p->word(x) == out->preds[k]) return p->word(x - 1);
          ok = false;
          return 0;
        }
        const Instruction* d = def(v);
        if (out->cond && d && d->opcode == spv::OpSelect && d->size() == 6) return d->word(k == 0 ? 4 : 5);
        return v;
      };
      detail::ThrowSite site;
      if (!identify_one(f, c, value, &site) || !ok) return false;
      auto same = std::find_if(out->sites.begin(), out->sites.end(), [&](const detail::ThrowSite& x) {
        return x.name == site.name && x.reason == site.reason && x.value_count == site.value_count &&
               x.value_kind == site.value_kind && x.frames[0].function == site.frames[0].function &&
               x.frames[0].file == site.frames[0].file && x.frames[0].line == site.frames[0].line;
      });
      out->site_of.push_back(static_cast<size_t>(same - out->sites.begin()));
      if (same == out->sites.end()) out->sites.push_back(std::move(site));
    }
    return true;
  }

  // ---- numbering ----
  struct Item {
    size_t call;      // index in f.calls
    uint64_t offset;  // of the item's ids within the function's
  };
  std::map<std::pair<uint32_t, size_t>, Sites> site_info_;  // (function, call) -> its identified sites
  std::map<uint32_t, std::vector<Item>> items_;                 // function -> its numbered items

  void number(detail::SiteTable* out) {
    // paths(f), bottom-up (the call graph is a DAG: mark_may_throw checked).
    std::vector<int> done(fns_.size(), 0);
    bool overflow = false;
    std::function<uint64_t(size_t)> paths = [&](size_t k) -> uint64_t {
      Function& f = fns_[k];
      if (done[k]) return f.paths;
      done[k] = 1;
      uint64_t n = 0;
      std::vector<Item>& items = items_[f.id];
      for (size_t c = 0; c < f.calls.size(); ++c) {
        const Call& call = f.calls[c];
        uint64_t add = 0;
        Sites s;
        if (identify(f, call, &s)) {
          add = s.sites.size();
          site_info_[{f.id, c}] = std::move(s);
        } else if (fn_index_.count(call.callee)) {
          add = paths(fn_index_.at(call.callee));
        }
        if (!add) continue;
        items.push_back({c, n});
        n += add;
        if (n > kMaxPaths) overflow = true;
      }
      return f.paths = std::min<uint64_t>(n, kMaxPaths + 1);
    };
    uint64_t total = 0;
    for (size_t k = 0; k < fns_.size(); ++k) {
      paths(k);
      if (fns_[k].entry) total += fns_[k].paths;
    }
    if (overflow || total > kMaxPaths) {
      site_info_.clear();
      items_.clear();
      return;
    }
    // reach(f): paths from kernels to f, top-down in a topological order.
    std::vector<size_t> order;
    std::vector<int> seen(fns_.size(), 0);
    std::function<void(size_t)> post = [&](size_t k) {
      if (seen[k]) return;
      seen[k] = 1;
      for (const Call& c : fns_[k].calls)
        if (fn_index_.count(c.callee)) post(fn_index_.at(c.callee));
      order.push_back(k);
    };
    for (size_t k = 0; k < fns_.size(); ++k) post(k);
    std::reverse(order.begin(), order.end());  // callers first
    for (Function& f : fns_) f.reach = f.entry ? 1 : 0;
    for (size_t k : order)
      for (const Call& c : fns_[k].calls)
        if (fn_index_.count(c.callee)) {
          Function& g = fns_[fn_index_.at(c.callee)];
          g.reach = std::min<uint64_t>(g.reach + fns_[k].reach, 2);
        }
    for (Function& f : fns_) f.hidden = f.reach > 1 && f.paths > 0 && !f.entry;

    // Every path from every kernel, in order: ids from 1.
    out->assign(total, detail::ThrowSite{});
    uint64_t next = 1;
    std::function<void(size_t, uint64_t, const std::vector<Frame>&)> walk = [&](size_t k, uint64_t base,
                                                                                const std::vector<Frame>& chain) {
      Function& f = fns_[k];
      if (f.reach == 1) f.base = base;
      for (const Item& it : items_[f.id]) {
        const Call& c = f.calls[it.call];
        auto s = site_info_.find({f.id, it.call});
        if (s != site_info_.end()) {
          for (size_t t = 0; t < s->second.sites.size(); ++t) {
            detail::ThrowSite site = s->second.sites[t];
            site.frames.insert(site.frames.end(), chain.begin(), chain.end());
            site.depth = static_cast<uint32_t>(site.frames.size());
            if (site.frames.size() > ZEX_MAX_FRAMES) site.frames.resize(ZEX_MAX_FRAMES);
            (*out)[base + it.offset + t - 1] = std::move(site);
          }
          continue;
        }
        std::vector<Frame> inner;
        if (!f.wrapper) inner = call_frames(c.loc, f.id);
        // Longer chains than the report shows are cut on the host side, after the depth is counted.
        inner.insert(inner.end(), chain.begin(), chain.end());
        walk(fn_index_.at(c.callee), base + it.offset, inner);
      }
    };
    for (size_t k = 0; k < fns_.size(); ++k)
      if (fns_[k].entry && fns_[k].paths) {
        walk(k, next, {});
        next += fns_[k].paths;
      }
    numbered_ = true;
  }

  // ---- new module-level ids ----
  Insts globals_;  // new types and constants, inserted before the first function
  std::map<std::vector<uint32_t>, uint32_t> found_;  // see found()
  bool indexed_ = false;
  uint32_t fresh() { return next_++; }
  // find_type and find_constant look up found_, an index of the types and constants before the first
  // function built at the first call, to which the new ones are added: a module of thousands of kernels
  // asks thousands of times (a constant per site id), and the answer is the first such instruction in
  // the module, else the one made.
  uint32_t find_type(uint16_t opcode, const std::vector<uint32_t>& operands) {
    std::vector<uint32_t> key{0, opcode};
    key.insert(key.end(), operands.begin(), operands.end());
    if (const uint32_t id = found(key)) return id;
    Instruction t;
    t.opcode = opcode;
    t.result_id = fresh();
    t.words = {0, t.result_id};
    t.words.insert(t.words.end(), operands.begin(), operands.end());
    t.operands.push_back({SPV_OPERAND_TYPE_RESULT_ID, 1, 1});
    for (size_t k = 2; k < t.words.size(); ++k)
      t.operands.push_back({opcode == spv::OpTypeInt ? static_cast<uint32_t>(SPV_OPERAND_TYPE_LITERAL_INTEGER)
                                                   : static_cast<uint32_t>(SPV_OPERAND_TYPE_ID),
                            static_cast<uint16_t>(k), 1});
    t.fix_word_count();
    globals_.push_back(t);
    return found_[key] = t.result_id;
  }
  uint32_t bool_type() { return find_type(spv::OpTypeBool, {}); }
  uint32_t uint_type() { return find_type(spv::OpTypeInt, {32, 0}); }
  uint32_t find_constant(uint16_t opcode, uint32_t type, const std::vector<uint32_t>& literals, bool ids) {
    std::vector<uint32_t> key{1, opcode, type};
    key.insert(key.end(), literals.begin(), literals.end());
    if (const uint32_t id = found(key)) return id;
    Instruction c = make_instruction(opcode, type, fresh(), ids ? literals : std::vector<uint32_t>{});
    if (!ids)
      for (uint32_t w : literals) add_operand(c, w, SPV_OPERAND_TYPE_TYPED_LITERAL_NUMBER);
    globals_.push_back(c);
    return found_[key] = c.result_id;
  }
  // The id of a type (0, opcode, operands) or constant (1, opcode, type, operands), 0 if none.
  uint32_t found(const std::vector<uint32_t>& key) {
    if (!indexed_) {
      indexed_ = true;
      for (const Instruction& i : m_.insts) {
        if (i.opcode == spv::OpFunction) break;
        if (!i.result_id) continue;
        std::vector<uint32_t> k{i.type_id ? 1u : 0u, i.opcode};
        if (i.type_id) k.push_back(i.type_id);
        k.insert(k.end(), i.words.begin() + (i.type_id ? 3 : 2), i.words.end());
        found_.emplace(std::move(k), i.result_id);
      }
    }
    auto it = found_.find(key);
    return it == found_.end() ? 0 : it->second;
  }
  uint32_t bool_constant(bool v) { return find_constant(v ? spv::OpConstantTrue : spv::OpConstantFalse, bool_type(), {}, true); }
  uint32_t uint_constant(uint32_t v) { return find_constant(spv::OpConstant, uint_type(), {v}, false); }

  // What a may-throw function returns instead of `ret`: bool, or {ret, bool}.
  struct Flagged {
    uint32_t type = 0;       // the new return type
    uint32_t thrown = 0;     // the constant a throw exit returns
    uint32_t not_thrown = 0; // void functions: the constant a normal return returns
    uint32_t null_value = 0; // {ret, bool}: the null {ret, false} both kinds of return insert into
    bool wrapped = false;    // {ret, bool}
  };
  std::map<uint32_t, Flagged> flagged_;  // original return type -> its flagged form
  const Flagged& flagged(uint32_t ret) {
    auto f = flagged_.find(ret);
    if (f != flagged_.end()) return f->second;
    Flagged r;
    const Instruction* t = def(ret);
    if (t && t->opcode == spv::OpTypeVoid) {
      r.type = bool_type();
      r.thrown = bool_constant(true);
      r.not_thrown = bool_constant(false);
    } else {
      r.wrapped = true;
      r.type = find_type(spv::OpTypeStruct, {ret, bool_type()});
      const uint32_t null = 0;
      // Built where it is returned, by OpCompositeInsert into the null {ret, false}: llvm-spirv-15's
      // reverse translation (zex-cpu's front end) takes OpCompositeConstruct of a struct and
      // OpConstantComposite with a bool member for constants and crashes on them.
      (void)null;
      r.null_value = find_constant(spv::OpConstantNull, r.type, {}, true);
      r.thrown = 0;
    }
    return flagged_[ret] = r;
  }

  // ---- the rewrite ----
  void rewrite() {
    // New function types for the functions that may throw (and the hidden base parameter).
    std::map<uint32_t, uint32_t> ret_of;  // function -> original return type
    for (Function& f : fns_) ret_of[f.id] = m_.insts[f.first].type_id;
    for (Function& f : fns_) {
      if (!f.may_throw) continue;
      const Instruction& fi = m_.insts[f.first];
      const Instruction* ft = def(fi.word(4));
      size_t params = 0;
      for (const Instruction& p : f.head) params += p.opcode == spv::OpFunctionParameter;
      if (!ft || ft->opcode != spv::OpTypeFunction || ft->size() != 3 + params || ft->word(2) != fi.type_id)
        throw std::invalid_argument("number_throw_paths: function %" + std::to_string(f.id) + " does not match its type");
      std::vector<uint32_t> ops(ft->words.begin() + 2, ft->words.end());
      ops[0] = flagged(fi.type_id).type;
      if (f.hidden) ops.push_back(uint_type());
      new_fn_type_[f.id] = find_type(spv::OpTypeFunction, ops);
      if (f.hidden) {
        f.base_param = fresh();
        Instruction p = make_instruction(spv::OpFunctionParameter, uint_type(), f.base_param, {});
        f.head.push_back(p);
      }
    }
    if (numbered_) declare_throw_site();
    for (Function& f : fns_)
      if (f.may_throw || f.throws) rewrite_function(f, ret_of);

    // A struct returned by `sret` pointer (clang's way for every struct return on SPIR) leaves a void
    // function whose pointer parameter says `FuncParamAttr Sret`; returning the flag, it no longer
    // returns void, and LLVM (llvm-spirv's reverse translation: zex-cpu's, Intel's front end) refuses
    // an sret parameter on a non-void function ("Invalid struct return type!"). The pointer stays an
    // ordinary one: nothing reads the attribute but the calling convention it no longer has.
    std::set<uint32_t> sret_params;
    for (const Function& f : fns_)
      if (f.may_throw)
        for (const Instruction& p : f.head)
          if (p.opcode == spv::OpFunctionParameter) sret_params.insert(p.result_id);
    auto is_sret = [&](const Instruction& d) {
      return d.opcode == spv::OpDecorate && d.size() == 4 && d.word(2) == spv::DecorationFuncParamAttr &&
             d.word(3) == spv::FunctionParameterAttributeSret && sret_params.count(d.word(1));
    };

    // Write back: function headers, bodies, new globals before the first function.
    Insts out;
    out.reserve(m_.insts.size() + globals_.size() + throw_site_decl_.size() + 64);
    size_t fi = 0;
    bool placed = false;
    for (size_t k = 0; k < m_.insts.size(); ++k) {
      Instruction i = m_.insts[k];
      if (is_sret(i)) continue;
      if (i.opcode == spv::OpFunction && !placed) {
        out.insert(out.end(), globals_.begin(), globals_.end());
        placed = true;
      }
      if (i.opcode == spv::OpFunction && throw_site_decl_.size() && i.result_id == throw_decl_after_) {
        // zex_throw_site's declaration goes right after zex_throw's (declarations precede definitions).
        out.push_back(i);
        size_t j = k + 1;
        for (; j < m_.insts.size() && m_.insts[j].opcode != spv::OpFunctionEnd; ++j) out.push_back(m_.insts[j]);
        out.push_back(m_.insts[j]);
        out.insert(out.end(), throw_site_decl_.begin(), throw_site_decl_.end());
        k = j;
        continue;
      }
      if (fi < fns_.size() && k == fns_[fi].first) {
        Function& f = fns_[fi++];
        auto nt = new_fn_type_.find(f.id);
        if (nt != new_fn_type_.end()) {
          i.words[1] = i.type_id = flagged(i.type_id).type;
          i.words[4] = nt->second;
        }
        out.push_back(std::move(i));
        // The functions were copied out of the module and are written once: moved, not copied.
        out.insert(out.end(), std::make_move_iterator(f.head.begin()), std::make_move_iterator(f.head.end()));
        for (Block& b : f.blocks) {
          out.push_back(std::move(b.label));
          out.insert(out.end(), std::make_move_iterator(b.insts.begin()), std::make_move_iterator(b.insts.end()));
        }
        out.push_back(m_.insts[f.last]);
        k = f.last;
        continue;
      }
      out.push_back(std::move(i));
    }
    if (!throw_site_name_.empty()) {
      // OpName and the Import linkage of zex_throw_site, next to zex_throw's.
      Insts named;
      named.reserve(out.size() + 1);
      for (Instruction& i : out) {
        const bool linkage = i.opcode == spv::OpDecorate && i.word(1) == throw_decl_after_ && i.size() >= 5 && i.words[2] == spv::DecorationLinkageAttributes;
        Instruction d = linkage ? i : Instruction{};
        named.push_back(std::move(i));
        if (linkage) {
          d.words.resize(3);
          d.operands.clear();
          d.operands.push_back({SPV_OPERAND_TYPE_ID, 1, 1});
          d.operands.push_back({SPV_OPERAND_TYPE_DECORATION, 2, 1});
          const std::string s = throw_site_name_;
          const size_t at = d.words.size();
          for (size_t k = 0; k <= s.size(); k += 4) {
            uint32_t w = 0;
            for (size_t b = 0; b < 4 && k + b < s.size(); ++b) w |= static_cast<uint32_t>(static_cast<unsigned char>(s[k + b])) << (8 * b);
            d.words.push_back(w);
          }
          d.operands.push_back({SPV_OPERAND_TYPE_LITERAL_STRING, static_cast<uint16_t>(at),
                                static_cast<uint16_t>(d.words.size() - at)});
          d.words.push_back(spv::LinkageTypeImport);
          d.operands.push_back({SPV_OPERAND_TYPE_LINKAGE_TYPE, static_cast<uint16_t>(d.words.size() - 1), 1});
          d.words[1] = throw_site_fn_;
          d.fix_word_count();
          d.annotations.clear();
          named.push_back(d);
        }
      }
      out = std::move(named);
    }
    if (!decorations_.empty()) {
      // After the last decoration (or the last debug name, or before the first type if neither).
      size_t at = 0;
      for (size_t k = 0; k < out.size(); ++k) {
        const uint16_t o = out[k].opcode;
        if (o == spv::OpDecorate || o == spv::OpMemberDecorate || o == spv::OpDecorateId || o == spv::OpDecorateString ||
            o == spv::OpName || o == spv::OpEntryPoint || o == spv::OpExecutionMode || o == spv::OpExecutionModeId ||
            o == spv::OpDecorationGroup || o == spv::OpGroupDecorate || o == spv::OpGroupMemberDecorate || o == spv::OpString || o == spv::OpSource ||
            o == spv::OpExtInstImport || o == spv::OpMemoryModel || o == spv::OpCapability || o == spv::OpExtension ||
            o == spv::OpMemberName || o == spv::OpModuleProcessed)
          at = k + 1;
        if (o == spv::OpFunction) break;
      }
      out.insert(out.begin() + static_cast<std::ptrdiff_t>(at), decorations_.begin(), decorations_.end());
    }
    m_.insts = std::move(out);
  }

  uint32_t throw_decl_after_ = 0, throw_site_fn_ = 0;
  std::string throw_site_name_;
  Insts throw_site_decl_;
  std::map<uint32_t, uint32_t> new_fn_type_;

  void declare_throw_site() {
    uint32_t zt = 0;
    for (auto& [id, name] : throw_entry_)
      if (name == "zex_throw_site") throw_site_fn_ = id;
      else if (name == "zex_throw") zt = id;
    if (throw_site_fn_ || !zt) return;  // the module declares it already (a compiler calling it)
    const Instruction* zf = def(zt);
    if (!zf) return;
    std::vector<uint32_t> ptypes;
    for (size_t k = def_.at(zt) + 1; k < m_.insts.size() && m_.insts[k].opcode == spv::OpFunctionParameter; ++k)
      ptypes.push_back(m_.insts[k].type_id);
    if (ptypes.size() != 10) return;
    // zex_throw_site(zex, site, a, b): the state as zex_throw takes it, uint, ulong, ulong.
    const uint32_t ft = find_type(spv::OpTypeFunction, {zf->type_id, ptypes[0], ptypes[3], ptypes[5], ptypes[6]});
    throw_site_fn_ = fresh();
    throw_decl_after_ = zt;
    throw_site_name_ = "zex_throw_site";
    Instruction fn = m_.insts[def_.at(zt)];
    fn.annotations.clear();
    fn.words[2] = fn.result_id = throw_site_fn_;
    fn.words[4] = ft;
    throw_site_decl_.push_back(fn);
    for (uint32_t t : {ptypes[0], ptypes[3], ptypes[5], ptypes[6]})
      throw_site_decl_.push_back(make_instruction(spv::OpFunctionParameter, t, fresh(), {}));
    throw_site_decl_.push_back(make_instruction(spv::OpFunctionEnd, 0, 0, {}));
  }

  // The flag check and the zex_throw_site calls, in one function.
  void rewrite_function(Function& f, const std::map<uint32_t, uint32_t>& ret_of) {
    const bool helper = f.may_throw;
    const uint32_t ret = m_.insts[f.first].type_id;
    const Flagged* fl = helper ? &flagged(ret) : nullptr;

    // Which blocks throw: they call a throw entry point, or every path into them comes from one that
    // does (the three-call protocol's blocks after the claim).
    std::map<uint32_t, size_t> at;
    for (size_t b = 0; b < f.blocks.size(); ++b) at[f.blocks[b].id()] = b;
    std::map<uint32_t, std::vector<uint32_t>> preds;
    for (const Block& b : f.blocks)
      for (uint32_t t : branch_targets(b.insts.back())) preds[t].push_back(b.id());
    std::set<uint32_t> throwing;
    for (const Call& c : f.calls)
      if (throw_entry_.count(c.callee)) throwing.insert(f.blocks[c.block].id());
    for (bool changed = true; changed;) {
      changed = false;
      for (const Block& b : f.blocks) {
        if (throwing.count(b.id()) || b.id() == f.blocks[0].id()) continue;
        const auto& p = preds[b.id()];
        if (p.empty()) continue;
        bool all = true;
        for (uint32_t x : p) all = all && throwing.count(x);
        if (all) {
          throwing.insert(b.id());
          changed = true;
        }
      }
    }
    uint32_t thrown_block = 0;
    auto thrown_exit = [&]() {
      if (!thrown_block) thrown_block = fresh();
      return thrown_block;
    };
    auto pure_return = [&](uint32_t label) {
      auto k = at.find(label);
      if (k == at.end()) return false;
      for (const Instruction& i : f.blocks[k->second].insts)
        if (i.opcode != spv::OpPhi && i.opcode != spv::OpReturn) return false;
      return true;
    };
    auto drop_phi_edge = [&](uint32_t block, uint32_t pred) {
      auto k = at.find(block);
      if (k == at.end()) return;
      for (Instruction& i : f.blocks[k->second].insts) {
        if (i.opcode != spv::OpPhi) break;
        std::vector<uint32_t> keep;
        for (size_t w = 3; w + 1 < i.size(); w += 2)
          if (i.words[w + 1] != pred) keep.insert(keep.end(), {i.words[w], i.words[w + 1]});
        Instruction n = make_instruction(spv::OpPhi, i.type_id, i.result_id, keep);
        n.annotations = std::move(i.annotations);
        i = std::move(n);
      }
    };
    for (Block& b : f.blocks) {
      Instruction& t = b.insts.back();
      if (throwing.count(b.id())) {
        if (helper && (t.opcode == spv::OpReturn || t.opcode == spv::OpReturnValue)) {
          Instruction r = make_instruction(spv::OpReturnValue, 0, 0, {thrown_value(*fl, b.insts)});
          r.annotations = b.insts.back().annotations;
          b.insts.back() = std::move(r);
          continue;
        }
        for (uint32_t s : branch_targets(t)) {
          if (throwing.count(s)) continue;
          if (!helper && pure_return(s)) continue;
          retarget(t, s, thrown_exit());
          drop_phi_edge(s, b.id());
        }
      } else if (helper && t.opcode == spv::OpReturn) {
        Instruction r = make_instruction(spv::OpReturnValue, 0, 0, {fl->not_thrown});
        r.annotations = t.annotations;
        t = std::move(r);
      } else if (helper && t.opcode == spv::OpReturnValue) {
        const uint32_t s = fresh();
        Instruction c = make_instruction(spv::OpCompositeInsert, fl->type, s, {t.word(1), fl->null_value});
        add_operand(c, 0, SPV_OPERAND_TYPE_LITERAL_INTEGER);
        b.insts.insert(b.insts.end() - 1, std::move(c));
        Instruction r = make_instruction(spv::OpReturnValue, 0, 0, {s});
        r.annotations = b.insts.back().annotations;
        b.insts.back() = std::move(r);
      }
    }

    // zex_throw -> zex_throw_site with the path's id; calls to functions that may throw get their
    // base and the flag check. Calls are visited last to first, so that positions stay valid.
    const std::vector<Item>& items = items_[f.id];
    std::map<size_t, uint64_t> offset_of;  // call index -> offset
    for (const Item& it : items) offset_of[it.call] = it.offset;
    auto base_plus = [&](uint64_t offset, Insts& before) -> uint32_t {
      if (!f.hidden) return site_id(static_cast<uint32_t>(f.base + offset), before);
      if (offset == 0) return f.base_param;
      const uint32_t s = fresh();
      before.push_back(make_instruction(spv::OpIAdd, uint_type(), s, {uint_constant(static_cast<uint32_t>(offset)), f.base_param}));
      return s;
    };
    // `rest` (the instructions that followed a call in `block`) becomes a block of its own, right
    // after it (blocks keep dominance order); its successors' OpPhis now name it.
    auto place_rest = [&](size_t block, Block&& rest) {
      const uint32_t from = f.blocks[block].id();
      for (uint32_t s : branch_targets(rest.insts.back())) {
        auto k = std::find_if(f.blocks.begin(), f.blocks.end(), [&](const Block& x) { return x.id() == s; });
        if (k == f.blocks.end()) continue;
        for (Instruction& p : k->insts) {
          if (p.opcode != spv::OpPhi) break;
          for (size_t w = 4; w < p.size(); w += 2)
            if (p.words[w] == from) p.words[w] = rest.id();
        }
      }
      f.blocks.insert(f.blocks.begin() + static_cast<std::ptrdiff_t>(block) + 1, std::move(rest));
    };
    std::map<uint32_t, Insts> new_phis;  // block -> OpPhis to add at its top
    for (size_t c = f.calls.size(); c-- > 0;) {
      const Call& call = f.calls[c];
      // The call that completes a throw ends the work-item, also where its block goes on: clang -O2
      // threads a second check of the same condition into the first's cold block (zex_throw, the code
      // between the checks, zex_throw again). What follows moves to a block nothing reaches.
      if (completes_throw(call.callee) && call.index + 2 < f.blocks[call.block].insts.size()) {
        Block& b = f.blocks[call.block];
        Block rest{make_instruction(spv::OpLabel, 0, fresh(), {}), {}};
        rest.insts.assign(b.insts.begin() + static_cast<std::ptrdiff_t>(call.index) + 1, b.insts.end());
        b.insts.erase(b.insts.begin() + static_cast<std::ptrdiff_t>(call.index) + 1, b.insts.end());
        b.insts.push_back(make_instruction(spv::OpBranch, 0, 0, {thrown_exit()}));
        place_rest(call.block, std::move(rest));
      }
      Block& b = f.blocks[call.block];
      Instruction& i = b.insts[call.index];
      auto sites = site_info_.find({f.id, c});
      if (sites != site_info_.end() && throw_site_fn_ && (f.reach == 1 || f.hidden)) {
        Insts before;
        const Sites& si = sites->second;
        uint32_t id;
        if (si.site_of.size() < 2) {
          id = base_plus(offset_of.at(c), before);
        } else {
          // The id of each choice's site (the constant the varying operand of the add takes), chosen
          // as the call's strings and line were: an OpPhi at the top of the block, or an OpSelect.
          auto offset = [&](size_t k) {
            const uint64_t o = offset_of.at(c) + si.site_of[k];
            return uint_constant(static_cast<uint32_t>(f.hidden ? o : f.base + o));
          };
          const uint32_t chosen = fresh();
          if (si.cond) {
            before.push_back(make_instruction(spv::OpSelect, uint_type(), chosen, {si.cond, offset(0), offset(1)}));
          } else {
            std::vector<uint32_t> ops;
            for (size_t k = 0; k < si.preds.size(); ++k) ops.insert(ops.end(), {offset(k), si.preds[k]});
            new_phis[b.id()].push_back(make_instruction(spv::OpPhi, uint_type(), chosen, ops));
          }
          id = fresh();
          before.push_back(make_instruction(spv::OpIAdd, uint_type(), id, {chosen, f.hidden ? f.base_param : site_base()}));
        }
        Instruction n = make_instruction(spv::OpFunctionCall, i.type_id, i.result_id,
                                         {throw_site_fn_, i.word(4), id, i.word(9), i.word(10)});
        n.annotations = std::move(i.annotations);
        i = std::move(n);
        b.insts.insert(b.insts.begin() + static_cast<std::ptrdiff_t>(call.index), before.begin(), before.end());
        continue;
      }
      auto g = fn_index_.find(call.callee);
      if (g == fn_index_.end()) continue;
      Function& callee = fns_[g->second];
      if (!callee.may_throw) continue;
      if (i.type_id != ret_of.at(callee.id))
        throw std::invalid_argument("number_throw_paths: call %" + std::to_string(i.result_id) + " has the wrong type");
      const Flagged& cf = flagged(ret_of.at(callee.id));
      Insts before, after;
      if (callee.hidden) {
        auto o = offset_of.find(c);
        const uint32_t base = o != offset_of.end() && (f.hidden || f.reach == 1) ? base_plus(o->second, before) : uint_constant(0);
        add_operand(i, base, SPV_OPERAND_TYPE_ID);
      }
      uint32_t flag;
      if (cf.wrapped) {
        const uint32_t value = i.result_id, whole = fresh();
        i.words[2] = i.result_id = whole;
        i.words[1] = i.type_id = cf.type;
        after.push_back(make_instruction(spv::OpCompositeExtract, ret_of.at(callee.id), value, {whole}));
        add_operand(after.back(), 0, SPV_OPERAND_TYPE_LITERAL_INTEGER);
        flag = fresh();
        after.push_back(make_instruction(spv::OpCompositeExtract, bool_type(), flag, {whole}));
        add_operand(after.back(), 1, SPV_OPERAND_TYPE_LITERAL_INTEGER);
      } else {
        i.words[1] = i.type_id = cf.type;
        flag = i.result_id;
      }
      if (throwing.count(b.id())) {
        // A call made on the way out of a throw: the work-item leaves anyway.
        b.insts.insert(b.insts.begin() + static_cast<std::ptrdiff_t>(call.index) + 1, after.begin(), after.end());
        b.insts.insert(b.insts.begin() + static_cast<std::ptrdiff_t>(call.index), before.begin(), before.end());
        continue;
      }
      // Split after the call: [.. call, extracts, branch flag ? thrown : rest], [rest].
      Block rest{make_instruction(spv::OpLabel, 0, fresh(), {}), {}};
      rest.insts.assign(b.insts.begin() + static_cast<std::ptrdiff_t>(call.index) + 1, b.insts.end());
      b.insts.erase(b.insts.begin() + static_cast<std::ptrdiff_t>(call.index) + 1, b.insts.end());
      b.insts.insert(b.insts.end(), after.begin(), after.end());
      Instruction br = make_instruction(spv::OpBranchConditional, 0, 0, {flag, thrown_exit(), rest.id()});
      add_operand(br, 1, SPV_OPERAND_TYPE_LITERAL_INTEGER);     // branch weights: the throw is cold
      add_operand(br, 1000, SPV_OPERAND_TYPE_LITERAL_INTEGER);
      b.insts.push_back(br);
      b.insts.insert(b.insts.begin() + static_cast<std::ptrdiff_t>(call.index), before.begin(), before.end());
      // The rest keeps the call's scope and line (they end with the block).
      if (!rest.insts.empty() && call.loc.scope && debug_set_) {
        bool own = false;
        for (const Instruction& a : rest.insts[0].annotations) own = own || a.opcode == spv::OpExtInst;
        if (!own) {
          Instruction s = make_instruction(spv::OpExtInst, 0, fresh(), {});
          s.words = {0, void_type(), s.result_id, debug_set_, OpenCLDebugInfo100DebugScope, call.loc.scope};
          if (call.loc.inlined) s.words.push_back(call.loc.inlined);
          s.type_id = void_type();
          s.operands = {{SPV_OPERAND_TYPE_TYPE_ID, 1, 1}, {SPV_OPERAND_TYPE_RESULT_ID, 2, 1}, {SPV_OPERAND_TYPE_ID, 3, 1},
                        {SPV_OPERAND_TYPE_EXTENSION_INSTRUCTION_NUMBER, 4, 1}, {SPV_OPERAND_TYPE_ID, 5, 1}};
          if (call.loc.inlined) s.operands.push_back({SPV_OPERAND_TYPE_ID, 6, 1});
          s.fix_word_count();
          s.debug = true;
          rest.insts[0].annotations.insert(rest.insts[0].annotations.begin(), s);
        }
      }
      place_rest(call.block, std::move(rest));
      // Later calls in the same block are visited before this one (reverse order) and earlier ones
      // keep their positions; the blocks after call.block moved by one, so the indices of calls in
      // them are stale, but those calls were visited already.
    }
    // The OpPhis that choose a merged call's site open its block (inserted last: positions stay valid).
    for (auto& [label, phis] : new_phis)
      for (Block& b : f.blocks)
        if (b.id() == label) b.insts.insert(b.insts.begin(), phis.begin(), phis.end());
    if (thrown_block) {
      Block t{make_instruction(spv::OpLabel, 0, thrown_block, {}), {}};
      if (helper) {
        Insts body;
        const uint32_t v = thrown_value(*fl, body);
        t.insts = std::move(body);
        t.insts.push_back(make_instruction(spv::OpReturnValue, 0, 0, {v}));
      } else {
        t.insts.push_back(make_instruction(spv::OpReturn, 0, 0, {}));
      }
      f.blocks.push_back(std::move(t));
    }
  }

  uint32_t void_type() { return find_type(spv::OpTypeVoid, {}); }

  // The process-unique form of path id k: `OpIAdd %uint %k %site_base` before the call, %site_base the
  // spec constant ZEX_SPEC_ID_SITE_BASE (default 0), which zex::Module sets so that ids are unique in
  // the process (detail::register_site_table); specialized, the add folds to a constant. Not an
  // OpSpecConstantOp: Intel's compiler (IGC 1.0.12504) aborts on one. The varying operand first, so
  // that the merge pass passes it through an OpPhi.
  uint32_t site_base_ = 0;
  uint32_t site_id(uint32_t k, Insts& before) {
    const uint32_t id = fresh();
    before.push_back(make_instruction(spv::OpIAdd, uint_type(), id, {uint_constant(k), site_base()}));
    return id;
  }
  uint32_t site_base() {
    if (!site_base_) {
      site_base_ = fresh();
      Instruction b = make_instruction(spv::OpSpecConstant, uint_type(), site_base_, {});
      add_operand(b, 0, SPV_OPERAND_TYPE_TYPED_LITERAL_NUMBER);
      globals_.push_back(b);
      Instruction d = make_instruction(spv::OpDecorate, 0, 0, {site_base_});
      add_operand(d, spv::DecorationSpecId, SPV_OPERAND_TYPE_DECORATION);
      add_operand(d, ZEX_SPEC_ID_SITE_BASE, SPV_OPERAND_TYPE_LITERAL_INTEGER);
      decorations_.push_back(d);
    }
    return site_base_;
  }
  Insts decorations_;  // new decorations, placed after the module's last one
  // The value a throw exit returns, built before the last instruction of `insts` (its terminator) if
  // there is one, else appended.
  uint32_t thrown_value(const Flagged& fl, Insts& insts) {
    if (!fl.wrapped) return fl.thrown;
    const uint32_t v = fresh();
    Instruction c = make_instruction(spv::OpCompositeInsert, fl.type, v, {bool_constant(true), fl.null_value});
    add_operand(c, 1, SPV_OPERAND_TYPE_LITERAL_INTEGER);
    insts.insert(insts.empty() ? insts.end() : insts.end() - 1, std::move(c));
    return v;
  }

  Module& m_;
  uint32_t next_;
  std::map<uint32_t, size_t> def_;
  std::map<uint32_t, std::string> strings_;
  std::multimap<uint32_t, std::string> names_;
  std::map<uint32_t, std::string> renamed_;
  std::set<uint32_t> entries_;
  uint32_t debug_set_ = 0;
  std::map<uint32_t, std::string> throw_entry_;
  std::vector<Function> fns_;
  std::map<uint32_t, size_t> fn_index_;
  bool numbered_ = false;
};

}  // namespace

bool number_throw_paths(Module& m, detail::SiteTable* out) {
  if (out) out->clear();
  // A kernel that another function calls: the calls go to a copy the pass can flag (kernel_calls.cpp),
  // kept only if the pass changes the module.
  Module cloned;
  std::map<uint32_t, std::string> names;
  if (!clone_called_kernels(m, &cloned, &names)) return Pass(m).run(out);
  if (!Pass(cloned, names).run(out)) return false;
  m = std::move(cloned);
  return true;
}

}  // namespace passes
}  // namespace zex
