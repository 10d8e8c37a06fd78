// wrap_zex_strings: the strings a module passes to zex's ABI become struct-wrapped constants.
//
// Why: IGC 1.0.12504 (Debian 12) puts every constant whose initializer is an array of i8 into the
// zebin section .data.const.string, and NEO 22.43 patches kernels with a *host* pointer to it, which
// zeMemGetAddressRange does not know: the host could not read a report's strings. A constant of type
// { [N x i8] } with the same bytes goes to .data.const, a USM allocation the host finds. Newer IGC
// keeps .data.const.string for strings a printf uses, so a rewritten string is never shared with one.
//
// What: every module-scope UniformConstant OpVariable of an 8-bit-int array with an OpConstantComposite
// initializer whose address reaches an argument of a call to an imported zex_* function, through
// access chains, casts, OpCopyObject, OpPhi, OpSelect and OpSpecConstantOp access chains/bitcasts,
// gets a new variable { [N x i8] } named __zex_str_<n>. The uses that lead to zex calls are re-pointed
// at member 0 (an extra access-chain index, or an OpBitcast where the use is no access chain); a
// derived value that also feeds something else (printf, a load, user code) is cloned for the zex side.
// The old variable stays if anything else uses it (or it is exported), else it goes and its debug
// information names the new one. Pointers the pass cannot follow back to a variable are left alone.
#include "spirv/passes/passes.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

namespace zex {
namespace passes {

namespace {

const std::string kPrefix = "__zex_str_";

bool is_access_chain(uint32_t o) {
  return o == spv::OpAccessChain || o == spv::OpInBoundsAccessChain || o == spv::OpPtrAccessChain || o == spv::OpInBoundsPtrAccessChain;
}
bool is_ptr_chain(uint32_t o) { return o == spv::OpPtrAccessChain || o == spv::OpInBoundsPtrAccessChain; }

// Instructions whose result is the address they are given, moved or cast (the pointer operands).
bool derives(const Instruction& i) {
  switch (i.opcode) {
    case spv::OpAccessChain: case spv::OpInBoundsAccessChain: case spv::OpPtrAccessChain: case spv::OpInBoundsPtrAccessChain:
    case spv::OpCopyObject: case spv::OpPtrCastToGeneric: case spv::OpGenericCastToPtr: case spv::OpGenericCastToPtrExplicit:
    case spv::OpBitcast: case spv::OpPhi: case spv::OpSelect: return true;
    case spv::OpSpecConstantOp: return is_access_chain(i.word(3)) || i.word(3) == spv::OpBitcast;
    default: return false;
  }
}

// Instructions that say something about an id without using its value.
bool is_metadata(const Instruction& i) {
  return i.debug || i.opcode == spv::OpName || i.opcode == spv::OpMemberName || i.opcode == spv::OpDecorate ||
         i.opcode == spv::OpMemberDecorate || i.opcode == spv::OpDecorateId || i.opcode == spv::OpDecorateString ||
         i.opcode == spv::OpEntryPoint;
}

// Inserts the <id> `id` as a new operand at word position `at` (access-chain index lists).
void insert_id(Instruction& i, size_t at, uint32_t id) {
  i.words.insert(i.words.begin() + static_cast<std::ptrdiff_t>(at), id);
  for (Operand& o : i.operands)
    if (o.offset >= at) ++o.offset;
  auto pos = std::find_if(i.operands.begin(), i.operands.end(), [&](const Operand& o) { return o.offset > at; });
  i.operands.insert(pos, {SPV_OPERAND_TYPE_ID, static_cast<uint16_t>(at), 1});
  i.fix_word_count();
}

constexpr size_t kNone = static_cast<size_t>(-1);

// What one round knows about the module as the round found it (Module::insts indices), built in one
// pass, and the edits of the strings it wraps, applied in one rebuild at its end.
struct Round {
  std::vector<size_t> def;                 // id -> index of its definition, kNone
  std::vector<std::vector<size_t>> users;  // id -> its users, metadata aside
  std::unordered_map<uint32_t, std::vector<size_t>> decorations;  // OpDecorate target -> indices
  std::set<uint32_t> exported;             // LinkageAttributes ... Export
  std::map<uint32_t, std::pair<uint32_t, size_t>> struct_of;  // [N x i8] -> first undecorated { it }
  std::map<uint32_t, std::pair<uint32_t, size_t>> pointer_to;  // struct -> first UniformConstant pointer
  uint32_t uint = 0, index0 = 0;           // OpTypeInt 32 0 and its OpConstant 0
  size_t uint_at = 0, index0_at = 0;
  size_t name_at = 0;
  std::set<uint32_t> claimed;              // derived values of the strings wrapped in this round
  // The edits: instructions to place before/after an index, variables that go, variables kept whose
  // entry points list the new one too (in wrap order), and the ids metadata names instead.
  std::map<size_t, std::vector<Instruction>> before, after;
  std::set<uint32_t> removed;
  std::map<uint32_t, std::pair<size_t, uint32_t>> kept;  // old variable -> (wrap order, new variable)
  std::map<uint32_t, uint32_t> to_new;

  const std::vector<size_t>& users_of(uint32_t id) const {
    static const std::vector<size_t> none;
    return id < users.size() ? users[id] : none;
  }
  size_t def_of(uint32_t id) const { return id < def.size() ? def[id] : kNone; }
};

class Wrapper {
 public:
  explicit Wrapper(IRContext& ctx) : m_(ctx.module()) {
    for (auto& [id, name] : ctx.imports())
      if (name.rfind("zex_", 0) == 0) zex_.insert(id);
    for (const Instruction& i : m_.insts)
      if (i.opcode == spv::OpName && i.size() >= 3) {
        const std::string n = i.string_at(2);
        if (n.rfind(kPrefix, 0) == 0) next_name_ = std::max(next_name_, std::stoul("0" + n.substr(kPrefix.size()).substr(0, 9)) + 1);
      }
  }

  bool run() {
    if (zex_.empty()) return false;
    bool changed = false;
    // One string at a time, in module order, each on the module the previous ones left: a value that
    // two strings reach (an OpPhi) is cloned or re-pointed once per string, on top of what the first
    // one did. Done in rounds, one pass over the module each: a round takes the strings in order as
    // long as none of them has a derived value a string before it in the round touched (their edits
    // are then independent, so doing them together is doing them one after the other); the first
    // that has one starts the next round, on the module the round left. A module of thousands of
    // kernels is one round, not one pass per string.
    const std::vector<uint32_t> pending = candidates();
    for (size_t next = 0; next < pending.size();) {
      Round r = index();
      bool any = false;
      for (; next < pending.size(); ++next) {
        const int done = wrap(r, pending[next]);
        if (done < 0) break;
        any = any || done > 0;
      }
      if (any) apply(r);
      changed = changed || any;
    }
    return changed;
  }

 private:
  const Instruction* def(const Round& r, uint32_t id) const {
    const size_t k = r.def_of(id);
    return k == kNone ? nullptr : &m_.insts[k];
  }

  Round index() const {
    Round r;
    const uint32_t bound = m_.header[3];
    r.def.assign(bound, kNone);
    r.users.resize(bound);
    std::set<uint32_t> decorated;
    for (size_t k = 0; k < m_.insts.size(); ++k) {
      const Instruction& i = m_.insts[k];
      if (i.result_id && i.result_id < bound) r.def[i.result_id] = k;
      if (!is_metadata(i))
        for (uint32_t id : i.used_ids())
          if (id < bound) r.users[id].push_back(k);
      if (i.opcode == spv::OpDecorate || i.opcode == spv::OpMemberDecorate) decorated.insert(i.word(1));
      if (i.opcode == spv::OpDecorate) r.decorations[i.word(1)].push_back(k);
      if (i.opcode == spv::OpDecorate && i.size() >= 5 && i.words[2] == spv::DecorationLinkageAttributes && i.words.back() == spv::LinkageTypeExport)
        r.exported.insert(i.words[1]);
    }
    // The member index and the wrapper types strings reuse (member0, wrapper_types), and where the
    // names go: the layout of section 2.4 before the first function.
    size_t at[3] = {0, 0, 0};
    bool seen[3] = {false, false, false};
    for (size_t k = 0; k < m_.insts.size() && m_.insts[k].opcode != spv::OpFunction; ++k) {
      const Instruction& i = m_.insts[k];
      if (i.opcode == spv::OpTypeInt && i.size() == 4 && i.words[2] == 32 && i.words[3] == 0) r.uint = i.result_id, r.uint_at = k;
      if (!r.index0 && r.uint && i.opcode == spv::OpConstant && i.type_id == r.uint && i.size() == 4 && i.words[3] == 0)
        r.index0 = i.result_id, r.index0_at = k;
      if (i.opcode == spv::OpTypeStruct && i.size() == 3 && !decorated.count(i.result_id)) r.struct_of.emplace(i.words[2], std::make_pair(i.result_id, k));
      if (i.opcode == spv::OpTypePointer && i.size() == 4 && i.words[2] == spv::StorageClassUniformConstant) r.pointer_to.emplace(i.words[3], std::make_pair(i.result_id, k));
      // OpName after the last OpName/OpMemberName, else after the source and string instructions,
      // else after the entry points and execution modes.
      const uint16_t o = i.opcode;
      const int g = o == spv::OpName || o == spv::OpMemberName ? 0 : (o >= 2 && o <= 4) || o == 7 ? 1
                    : o == spv::OpEntryPoint || o == spv::OpExecutionMode || o == spv::OpExecutionModeId ? 2 : -1;
      if (g >= 0) at[g] = k, seen[g] = true;
    }
    r.name_at = seen[0] ? at[0] : seen[1] ? at[1] : at[2];
    return r;
  }

  // String-shaped variables: module scope, UniformConstant, an array of 8-bit ints initialised by an
  // OpConstantComposite of OpConstant/OpConstantNull.
  std::vector<uint32_t> candidates() const {
    const Round r = index();
    std::vector<uint32_t> out;
    for (const Instruction& v : m_.insts) {
      if (v.opcode == spv::OpFunction) break;
      if (v.opcode != spv::OpVariable || v.size() != 5 || v.word(3) != spv::StorageClassUniformConstant) continue;
      const Instruction* ptr = def(r, v.type_id);
      const Instruction* arr = ptr && ptr->opcode == spv::OpTypePointer ? def(r, ptr->word(3)) : nullptr;
      const Instruction* elem = arr && arr->opcode == spv::OpTypeArray ? def(r, arr->word(2)) : nullptr;
      const Instruction* init = def(r, v.word(4));
      if (!elem || elem->opcode != spv::OpTypeInt || elem->word(2) != 8 || !init || init->opcode != spv::OpConstantComposite ||
          init->type_id != arr->result_id)
        continue;
      bool constant = true;
      for (size_t k = 3; k < init->size(); ++k) {
        const Instruction* c = def(r, init->words[k]);
        constant = constant && c && (c->opcode == spv::OpConstant || c->opcode == spv::OpConstantNull);
      }
      if (constant) out.push_back(v.result_id);
    }
    return out;
  }

  uint32_t fresh() { return m_.header[3]++; }

  // An OpTypeInt 32 0 and its OpConstant 0 (a struct member index must be a 32-bit constant): the
  // module's, or new ones appended to `globals`. `at` becomes at least the index of those it reuses;
  // `made` says whether the constant is new (it then sits where the string's globals go).
  uint32_t member0(const Round& r, std::vector<Instruction>& globals, size_t& at, bool& made) {
    made = !r.index0;
    if (r.index0) {
      at = std::max(at, r.index0_at);
      return r.index0;
    }
    uint32_t uint = r.uint;
    if (uint) {
      at = std::max(at, r.uint_at);
    } else {
      Instruction t = make_instruction(spv::OpTypeInt, 0, fresh(), {});
      add_operand(t, 32, SPV_OPERAND_TYPE_LITERAL_INTEGER);
      add_operand(t, 0, SPV_OPERAND_TYPE_LITERAL_INTEGER);
      uint = t.result_id;
      globals.push_back(t);
    }
    Instruction c = make_instruction(spv::OpConstant, uint, fresh(), {});
    add_operand(c, 0, SPV_OPERAND_TYPE_TYPED_LITERAL_NUMBER);
    globals.push_back(c);
    return c.result_id;
  }

  // The struct { arr } and its UniformConstant pointer: the module's own (undecorated) ones if it has
  // them, so that strings of one length keep one type and the throw-site merge can still take an
  // OpPhi over them; else new ones appended to `globals`. `at` and `made` as in member0.
  std::pair<uint32_t, uint32_t> wrapper_types(const Round& r, uint32_t arr, std::vector<Instruction>& globals,
                                              size_t& at, bool& made) {
    uint32_t st = 0;
    auto s = r.struct_of.find(arr);
    if (s != r.struct_of.end()) {
      st = s->second.first;
      at = std::max(at, s->second.second);
      auto p = r.pointer_to.find(st);
      if (p != r.pointer_to.end()) {
        at = std::max(at, p->second.second);
        made = false;
        return {st, p->second.first};
      }
    }
    made = true;
    if (!st) {
      st = fresh();
      globals.push_back(make_instruction(spv::OpTypeStruct, 0, st, {arr}));
    }
    Instruction p = make_instruction(spv::OpTypePointer, 0, fresh(), {});
    add_operand(p, spv::StorageClassUniformConstant, SPV_OPERAND_TYPE_STORAGE_CLASS);
    add_operand(p, st, SPV_OPERAND_TYPE_ID);
    globals.push_back(p);
    return {st, p.result_id};
  }

  // Wraps v into r's edits: 1 if it did, 0 if v reaches no zex call, -1 if a string wrapped before it in
  // this round touched one of its derived values (v then starts the next round).
  int wrap(Round& r, uint32_t v) {
    // The values derived from v.
    std::set<uint32_t> nodes{v};
    std::vector<uint32_t> work{v};
    while (!work.empty()) {
      const uint32_t x = work.back();
      work.pop_back();
      for (size_t k : r.users_of(x))
        if (derives(m_.insts[k]) && nodes.insert(m_.insts[k].result_id).second) work.push_back(m_.insts[k].result_id);
    }
    for (uint32_t x : nodes)
      if (x != v && r.claimed.count(x)) return -1;
    // What each value reaches: kZex (an argument of a zex call), kOther (anything else). A fixpoint,
    // as OpPhi may form cycles.
    constexpr int kZex = 1, kOther = 2;
    std::map<uint32_t, int> reach;
    auto sink = [&](const Instruction& u) {
      return u.opcode == spv::OpFunctionCall && zex_.count(u.word(3)) ? kZex : kOther;
    };
    for (bool again = true; again;) {
      again = false;
      for (uint32_t x : nodes) {
        // A derived value nobody uses (left behind by another pass, e.g. the throw-path numbering's
        // replaced zex_throw) keeps the old variable: re-pointing it without the member index would
        // be invalid, and the old variable is what it points at.
        int re = x != v && r.users_of(x).empty() ? kOther : 0;
        for (size_t k : r.users_of(x)) {
          const Instruction& u = m_.insts[k];
          re |= derives(u) && nodes.count(u.result_id) ? reach[u.result_id] : sink(u);
        }
        if (re != reach[x]) reach[x] = re, again = true;
      }
    }
    if (!(reach[v] & kZex)) return 0;
    for (uint32_t x : nodes)
      if (x != v) r.claimed.insert(x);

    const size_t v_at = r.def_of(v);
    const Instruction& var = m_.insts[v_at];
    const uint32_t old_type = var.type_id, arr = def(r, old_type)->word(3), init = var.word(4);
    // The new globals go after v and the member index they use, before any use of theirs.
    std::vector<Instruction> globals;
    size_t globals_at = v_at;
    bool new_index0 = false, new_types = false;
    const uint32_t index0 = member0(r, globals, globals_at, new_index0);
    auto [st, pst] = wrapper_types(r, arr, globals, globals_at, new_types);
    // Later strings of this round reuse what this one made, placed after it.
    if (new_index0) r.index0 = index0, r.index0_at = globals_at;
    if (new_types) r.struct_of[arr] = {st, globals_at}, r.pointer_to[st] = {pst, globals_at};
    const uint32_t winit = fresh(), nv = fresh();
    globals.push_back(make_instruction(spv::OpConstantComposite, st, winit, {init}));
    Instruction nvar = make_instruction(spv::OpVariable, pst, nv, {});
    add_operand(nvar, spv::StorageClassUniformConstant, SPV_OPERAND_TYPE_STORAGE_CLASS);
    add_operand(nvar, winit, SPV_OPERAND_TYPE_ID);
    globals.push_back(nvar);
    std::vector<Instruction>& placed = r.after[globals_at];
    placed.insert(placed.end(), globals.begin(), globals.end());

    // The zex side's version of each derived value: itself, or a clone when it also feeds others.
    std::map<uint32_t, uint32_t> zex_version;
    for (uint32_t x : nodes)
      if (x != v && (reach[x] & kZex)) zex_version[x] = reach[x] & kOther ? fresh() : x;
    // Points `i` (at index k, or its clone placed after k) at the zex versions of its operands.
    auto repoint = [&](Instruction& i, size_t k) {
      for (size_t o = 0; o < i.operands.size(); ++o) {
        const Operand op_ = i.operands[o];
        if (!is_id_use(op_.type) || op_.type == SPV_OPERAND_TYPE_TYPE_ID) continue;
        const uint32_t y = i.words[op_.offset];
        auto z = zex_version.find(y);
        if (z != zex_version.end()) {
          i.words[op_.offset] = z->second;
          continue;
        }
        if (y != v) continue;
        const bool spec = i.opcode == spv::OpSpecConstantOp;
        const uint32_t inner = spec ? i.word(3) : i.opcode;
        const size_t base = spec ? 4 : 3;
        if (is_access_chain(inner) && op_.offset == base) {
          // The struct's member 0 comes after the element index (Ptr forms) or first.
          i.words[op_.offset] = nv;
          insert_id(i, base + (is_ptr_chain(inner) ? 2 : 1), index0);
          o = static_cast<size_t>(-1);  // offsets moved: scan again (v no longer appears)
          continue;
        }
        if (inner == spv::OpBitcast) {
          i.words[op_.offset] = nv;
          continue;
        }
        // Any other use gets the old pointer type back through an OpBitcast of the new variable,
        // placed where the value is needed: before i, or for an OpPhi at the end of the predecessor.
        const uint32_t t = fresh();
        Instruction cast = make_instruction(spv::OpBitcast, old_type, t, {nv});
        for (const Instruction& a : i.annotations)
          if (is_line_or_scope(a)) cast.annotations.push_back(a);
        size_t at = k;
        if (i.opcode == spv::OpPhi) at = end_of_block(i.word(op_.offset + 1), k);
        r.before[at].push_back(cast);
        i.words[op_.offset] = t;
      }
    };
    std::set<size_t> zex_calls;
    for (uint32_t x : nodes)
      for (size_t k : r.users_of(x))
        if (sink(m_.insts[k]) == kZex) zex_calls.insert(k);
    for (size_t k : zex_calls) repoint(m_.insts[k], k);
    for (auto& [x, z] : zex_version) {
      const size_t k = r.def_of(x);
      if (z == x) {
        repoint(m_.insts[k], k);
      } else {
        Instruction c = m_.insts[k];
        c.words[c.operands[1].offset] = z;  // every derived instruction has a type then a result
        c.result_id = z;
        repoint(c, k);
        r.after[k].push_back(c);
      }
    }
    // Users of cloned values that reach zex only were re-pointed above as in-place values.

    const bool keep_old = (reach[v] & kOther) || r.exported.count(v);
    auto d = r.decorations.find(v);
    if (d != r.decorations.end())
      for (size_t k : d->second)
        if (m_.insts[k].word(2) != spv::DecorationLinkageAttributes) {
          Instruction c = m_.insts[k];
          c.words[1] = nv;
          r.after[k].push_back(c);
        }
    r.after[r.name_at].push_back(make_name(nv, kPrefix + std::to_string(next_name_++)));
    if (keep_old) {
      r.kept[v] = {r.kept.size(), nv};
    } else {  // only metadata still names v: entry-point interfaces and debug information
      r.removed.insert(v);
      r.to_new[v] = nv;
    }
    return 1;
  }

  // The round's edits, in one pass over the module.
  void apply(Round& r) {
    std::vector<Instruction> out;
    out.reserve(m_.insts.size() + 16 * (r.kept.size() + r.removed.size()));
    for (size_t k = 0; k < m_.insts.size(); ++k) {
      auto b = r.before.find(k);
      if (b != r.before.end())
        for (Instruction& i : b->second) out.push_back(std::move(i));
      Instruction& i = m_.insts[k];
      const bool about_removed = (i.opcode == spv::OpName || i.opcode == spv::OpDecorate || i.opcode == spv::OpDecorateId ||
                                  i.opcode == spv::OpDecorateString) && r.removed.count(i.word(1));
      if (i.opcode == spv::OpEntryPoint && !r.kept.empty()) {
        // A kept variable's entry points list its new one too, in the order the strings were wrapped.
        std::vector<std::pair<size_t, uint32_t>> add;
        for (uint32_t id : i.used_ids()) {
          auto kv = r.kept.find(id);
          if (kv != r.kept.end()) add.push_back(kv->second);
        }
        std::sort(add.begin(), add.end());
        add.erase(std::unique(add.begin(), add.end()), add.end());
        for (const auto& [order, nv] : add) add_operand(i, nv, SPV_OPERAND_TYPE_ID);
      }
      if (!r.removed.count(i.result_id) && !about_removed) out.push_back(std::move(i));
      auto a = r.after.find(k);
      if (a != r.after.end())
        for (Instruction& x : a->second) out.push_back(std::move(x));
    }
    if (!r.to_new.empty())
      for (Instruction& i : out) i.replace_ids(r.to_new);
    m_.insts = std::move(out);
  }

  // Where an instruction goes at the end of block `label` of the function around index k: before its
  // terminator and the merge instruction that may precede it.
  size_t end_of_block(uint32_t label, size_t k) const {
    size_t f = k;
    while (f > 0 && m_.insts[f].opcode != spv::OpFunction) --f;
    for (size_t j = f; j < m_.insts.size() && m_.insts[j].opcode != spv::OpFunctionEnd; ++j) {
      if (m_.insts[j].opcode != spv::OpLabel || m_.insts[j].result_id != label) continue;
      size_t t = j + 1;
      while (t < m_.insts.size() && m_.insts[t].opcode != spv::OpLabel && m_.insts[t].opcode != spv::OpFunctionEnd) ++t;
      --t;  // the terminator
      if (t > j + 1 && (m_.insts[t - 1].opcode == spv::OpSelectionMerge || m_.insts[t - 1].opcode == spv::OpLoopMerge)) --t;
      return t;
    }
    return k;
  }

  Module& m_;
  std::set<uint32_t> zex_;
  unsigned long next_name_ = 0;
};

}  // namespace

Status wrap_zex_strings(IRContext& ctx) { return changed_if(Wrapper(ctx).run()); }

std::vector<ZexString> zex_strings(const Module& m) {
  std::map<uint32_t, const Instruction*> d;
  for (const Instruction& i : m.insts)
    if (i.result_id) d[i.result_id] = &i;
  auto get = [&](uint32_t id) -> const Instruction* {
    auto it = d.find(id);
    return it == d.end() ? nullptr : it->second;
  };
  std::vector<ZexString> out;
  for (const Instruction& n : m.insts) {
    if (n.opcode != spv::OpName || n.size() < 3 || n.string_at(2).rfind(kPrefix, 0) != 0) continue;
    const Instruction* v = get(n.words[1]);
    const Instruction* w = v && v->opcode == spv::OpVariable && v->size() == 5 ? get(v->words[4]) : nullptr;
    const Instruction* a = w && w->opcode == spv::OpConstantComposite && w->size() == 4 ? get(w->words[3]) : nullptr;
    if (!a || a->opcode != spv::OpConstantComposite) continue;
    ZexString s{n.string_at(2), {}};
    bool ok = true;
    for (size_t k = 3; k < a->size(); ++k) {
      const Instruction* c = get(a->words[k]);
      ok = ok && c && (c->opcode == spv::OpConstantNull || (c->opcode == spv::OpConstant && c->size() >= 4));
      if (ok) s.bytes.push_back(static_cast<char>(c->opcode == spv::OpConstant ? c->words[3] & 0xFFu : 0));
    }
    if (ok) out.push_back(std::move(s));
  }
  return out;
}

}  // namespace passes
}  // namespace zex
