// link_device_library: zex's device library linked into a user module, on the parsed module.
//
// SPIRV-Tools' linker parses both modules again, builds its def-use analyses, compares every
// decoration with every other, removes duplicates, compacts the ids, and on a module of 4,000 kernels
// takes a third of zex::Module's time (docs/benchmarks.md, "Module creation time"). What zex links is
// narrower: one user module and one library that zex builds itself (device/), whose only imports are
// built-in variables and whose exports are the zex_* functions and zex_abi_version. So this pass does
// exactly that, in one walk over each module:
//
// - the library's ids move above the user module's (the user's ids, which its names, line tables and
//   zex's site table refer to, stay as they are);
// - each user import of a library export (`LinkageAttributes "zex_throw" Import`) is replaced by the
//   export: its declaration, the declaration's parameters, names and decorations go, its uses call the
//   library's function. The library's types that the export's signature is built from are matched to
//   the user's import's, structurally, so that every call still passes exactly the parameter types;
//   the library's other types that equal a user type (same opcode and operands) become that type
//   (SPIR-V forbids two equal non-aggregate types); its constants and variables are appended;
// - imported built-in variables lose their Import (nothing exports them: the driver provides them),
//   as SPIRV-Tools' linker does, and stay two variables until merge_duplicate_builtins;
// - capabilities, extensions and extended-instruction sets are merged by value, the user's memory
//   model, entry points and header (its generator included) are kept; the library's exports stay
//   exported (zex links a library: docs/abi.md on zex_abi_version).
//
// Any other shape (an import the library does not export, a library import other than a built-in,
// a signature whose types do not match, a decorated type to merge) throws std::invalid_argument and
// leaves the module as it was: zex then links with SPIRV-Tools' linker, which reports or handles it.
#include "spirv/passes/passes.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace zex {
namespace passes {

namespace {


bool is_type(uint16_t o) {
  return (o >= spv::OpTypeVoid && o <= spv::OpTypeForwardPointer) || o == spv::OpTypePipeStorage || o == spv::OpTypeNamedBarrier;
}
bool is_annotation_section(uint16_t o) {
  return o == spv::OpDecorate || o == spv::OpMemberDecorate || o == spv::OpDecorationGroup || o == spv::OpGroupDecorate ||
         o == spv::OpGroupMemberDecorate || o == spv::OpDecorateId || o == spv::OpDecorateString ||
         o == spv::OpMemberDecorateString;
}
bool is_debug_section(uint16_t o) {
  return o == spv::OpSourceContinued || o == spv::OpSource || o == spv::OpSourceExtension || o == spv::OpString;
}

// The logical layout of a module (SPIR-V 2.4), each section's instructions in order.
struct Sections {
  std::vector<Instruction*> capabilities, extensions, imports, memory_model, entry_points, modes, debug, names,
      processed, annotations, globals, functions;
};

// The sections point into `m`: nothing is copied, and nothing of `m` changes until the output is built.
Sections split(Module& m) {
  Sections s;
  bool in_functions = false;
  for (Instruction& i : m.insts) {
    if (i.opcode == spv::OpFunction) in_functions = true;
    std::vector<Instruction*>* to = &s.globals;
    if (in_functions)
      to = &s.functions;
    else if (i.opcode == spv::OpCapability)
      to = &s.capabilities;
    else if (i.opcode == spv::OpExtension)
      to = &s.extensions;
    else if (i.opcode == spv::OpExtInstImport)
      to = &s.imports;
    else if (i.opcode == spv::OpMemoryModel)
      to = &s.memory_model;
    else if (i.opcode == spv::OpEntryPoint)
      to = &s.entry_points;
    else if (i.opcode == spv::OpExecutionMode || i.opcode == spv::OpExecutionModeId)
      to = &s.modes;
    else if (i.opcode == spv::OpName || i.opcode == spv::OpMemberName)
      to = &s.names;
    else if (i.opcode == spv::OpModuleProcessed)
      to = &s.processed;
    else if (is_debug_section(i.opcode))
      to = &s.debug;
    else if (is_annotation_section(i.opcode))
      to = &s.annotations;
    to->push_back(&i);
  }
  if (!m.trailing.empty()) throw std::invalid_argument("link_device_library: line instructions after the last instruction");
  return s;
}

// Every <id> of `i` (its result and type included, and those of its attached lines) plus `delta`.
void shift(Instruction& i, uint32_t delta) {
  for (const Operand& o : i.operands)
    if (is_id_use(o.type) || o.type == SPV_OPERAND_TYPE_RESULT_ID || o.type == SPV_OPERAND_TYPE_TYPE_ID)
      i.words[o.offset] += delta;
  if (i.result_id) i.result_id += delta;
  if (i.type_id) i.type_id += delta;
  for (Instruction& a : i.annotations) shift(a, delta);
}

// The key two equal types share: opcode and every operand word but the result.
std::vector<uint32_t> type_key(const Instruction& t) {
  std::vector<uint32_t> k{t.words[0]};
  for (const Operand& o : t.operands)
    if (o.type != SPV_OPERAND_TYPE_RESULT_ID) k.insert(k.end(), t.words.begin() + o.offset, t.words.begin() + o.offset + o.count);
  return k;
}

struct Linkage {
  std::string name;
  uint32_t type = 0;  // spv::LinkageTypeImport, export 0, LinkOnceODR 2
};
// `OpDecorate %id LinkageAttributes "name" Type` by target.
std::map<uint32_t, Linkage> linkages(const std::vector<Instruction*>& annotations) {
  std::map<uint32_t, Linkage> out;
  for (const Instruction* p : annotations) {
    const Instruction& d = *p;
    if (d.opcode == spv::OpDecorate && d.size() >= 5 && d.words[2] == spv::DecorationLinkageAttributes)
      out[d.words[1]] = Linkage{d.string_at(3), d.words.back()};
  }
  return out;
}

std::set<uint32_t> builtins(const std::vector<Instruction*>& annotations) {
  std::set<uint32_t> out;
  for (const Instruction* d : annotations)
    if (d->opcode == spv::OpDecorate && d->size() >= 4 && d->words[2] == spv::DecorationBuiltIn) out.insert(d->words[1]);
  return out;
}

bool is_import_of(const Instruction& d, const std::set<uint32_t>& ids) {
  return d.opcode == spv::OpDecorate && d.size() >= 5 && d.words[2] == spv::DecorationLinkageAttributes && d.words.back() == spv::LinkageTypeImport &&
         ids.count(d.words[1]);
}

}  // namespace

Status link_device_library(IRContext& ctx, const Module& library) {
  Module& user = ctx.module();
  if (user.header[3] == 0 || library.header[3] == 0) throw std::invalid_argument("link_device_library: a module without an id bound");
  Module lib = library;  // small: the library is copied, the user module is not
  Sections u = split(user);
  Sections l = split(lib);
  const uint32_t delta = user.header[3] - 1;
  auto shift_all = [&](std::vector<Instruction*>& v) {
    for (Instruction* i : v) shift(*i, delta);
  };
  for (auto* v : {&l.imports, &l.entry_points, &l.modes, &l.debug, &l.names, &l.processed, &l.annotations, &l.globals,
                  &l.functions})
    shift_all(*v);

  // ---- what resolves what ----
  const std::map<uint32_t, Linkage> ul = linkages(u.annotations), ll = linkages(l.annotations);
  const std::set<uint32_t> ub = builtins(u.annotations), lb = builtins(l.annotations);
  std::map<std::string, uint32_t> exports;
  for (const auto& [id, k] : ll)
    if (k.type != spv::LinkageTypeImport) exports[k.name] = id;
  for (const auto& [id, k] : ul)
    if (k.type != spv::LinkageTypeImport && exports.count(k.name))
      throw std::invalid_argument("link_device_library: the module exports '" + k.name + "', as the library does");
  std::map<uint32_t, uint32_t> resolved;  // user import -> library export
  std::set<uint32_t> dropped_imports;     // ids whose Import decoration goes (built-ins: the driver's)
  for (const auto& [id, k] : ul) {
    if (k.type != spv::LinkageTypeImport) continue;
    auto e = exports.find(k.name);
    if (e != exports.end())
      resolved[id] = e->second;
    else if (ub.count(id))
      dropped_imports.insert(id);
    else
      throw std::invalid_argument("link_device_library: '" + k.name + "' is imported and not in the device library");
  }
  for (const auto& [id, k] : ll) {
    if (k.type != spv::LinkageTypeImport) continue;
    if (!lb.count(id)) throw std::invalid_argument("link_device_library: the library imports '" + k.name + "'");
    dropped_imports.insert(id);
  }

  // ---- the library's types that become the user's ----
  std::map<uint32_t, const Instruction*> udef, ldef;
  for (const Instruction* i : u.globals)
    if (i->result_id) udef[i->result_id] = i;
  for (const Instruction* i : u.functions)
    if (i->opcode == spv::OpFunction || i->opcode == spv::OpFunctionParameter) udef[i->result_id] = i;
  for (const Instruction* i : l.globals)
    if (i->result_id) ldef[i->result_id] = i;
  for (const Instruction* i : l.functions)
    if (i->opcode == spv::OpFunction || i->opcode == spv::OpFunctionParameter) ldef[i->result_id] = i;
  std::set<uint32_t> decorated;  // types with decorations of their own (matched only if both are bare)
  for (const std::vector<Instruction*>* v : {&u.annotations, &l.annotations})
    for (const Instruction* p : *v) {
      const Instruction& d = *p;
      if (d.opcode == spv::OpDecorationGroup || d.size() < 2) continue;
      if (d.opcode == spv::OpGroupDecorate || d.opcode == spv::OpGroupMemberDecorate) {
        for (const Operand& o : d.operands)
          if (is_id_use(o.type)) decorated.insert(d.words[o.offset]);
      } else {
        decorated.insert(d.words[1]);
      }
    }
  std::map<uint32_t, uint32_t> to_user;  // library type -> user type
  // Matches library type `a` with user type `b`, through their operands: false if the shapes differ.
  std::function<bool(uint32_t, uint32_t)> match = [&](uint32_t a, uint32_t b) -> bool {
    auto known = to_user.find(a);
    if (known != to_user.end()) return known->second == b;
    auto da = ldef.find(a), db = udef.find(b);
    if (da == ldef.end() || db == udef.end()) return false;
    const Instruction& x = *da->second;
    const Instruction& y = *db->second;
    if (!is_type(x.opcode)) {
      // A constant operand (an array's length): equal values.
      return x.opcode == y.opcode && x.size() == y.size() && x.size() >= 3 && match(x.type_id, y.type_id) &&
             std::equal(x.words.begin() + 3, x.words.end(), y.words.begin() + 3) && (to_user[a] = b, true);
    }
    if (x.opcode != y.opcode || x.size() != y.size() || x.operands.size() != y.operands.size()) return false;
    if (decorated.count(a) || decorated.count(b)) return false;
    to_user[a] = b;  // before the operands: a pointer may lead back to its struct
    for (size_t k = 0; k < x.operands.size(); ++k) {
      const Operand& o = x.operands[k];
      if (o.type == SPV_OPERAND_TYPE_RESULT_ID) continue;
      if (is_id_use(o.type) || o.type == SPV_OPERAND_TYPE_TYPE_ID) {
        if (!match(x.words[o.offset], y.words[o.offset])) {
          to_user.erase(a);
          return false;
        }
      } else if (!std::equal(x.words.begin() + o.offset, x.words.begin() + o.offset + o.count, y.words.begin() + o.offset)) {
        to_user.erase(a);
        return false;
      }
    }
    return true;
  };
  for (const auto& [imp, exp] : resolved) {
    auto di = udef.find(imp);
    auto de = ldef.find(exp);
    if (di == udef.end() || de == ldef.end() || di->second->opcode != de->second->opcode)
      throw std::invalid_argument("link_device_library: an import and its export are not the same kind of object");
    const Instruction& i = *di->second;
    const Instruction& e = *de->second;
    // A function's type is word 4, a variable's its result type.
    const bool ok = i.opcode == spv::OpFunction ? match(e.word(4), i.word(4)) : match(e.type_id, i.type_id);
    if (!ok) throw std::invalid_argument("link_device_library: the import of '" + ul.at(imp).name + "' does not match the library's type");
  }
  // The library's remaining types: the user's equal type where there is one.
  std::map<std::vector<uint32_t>, uint32_t> user_types;
  for (const Instruction* t : u.globals)
    if (is_type(t->opcode) && t->opcode != spv::OpTypeStruct && t->opcode != spv::OpTypeOpaque && !decorated.count(t->result_id))
      user_types.emplace(type_key(*t), t->result_id);
  std::map<uint32_t, uint32_t> rename;  // library id -> user id, resolved import -> export
  std::set<uint32_t> merged;            // library types that are gone
  for (Instruction* tp : l.globals) {
    Instruction& t = *tp;
    if (!is_type(t.opcode)) continue;
    t.replace_ids(rename);
    auto seeded = to_user.find(t.result_id);
    if (seeded != to_user.end()) {
      rename[t.result_id] = seeded->second;
      merged.insert(t.result_id);
      continue;
    }
    if (t.opcode == spv::OpTypeStruct || t.opcode == spv::OpTypeOpaque) continue;
    auto same = user_types.find(type_key(t));
    if (same == user_types.end()) continue;
    if (decorated.count(t.result_id)) throw std::invalid_argument("link_device_library: a decorated library type equals a user type");
    rename[t.result_id] = same->second;
    merged.insert(t.result_id);
  }
  // Extended-instruction sets by name.
  std::map<std::string, uint32_t> user_sets;
  for (const Instruction* i : u.imports) user_sets[i->string_at(2)] = i->result_id;
  std::vector<Instruction*> new_sets;
  for (Instruction* i : l.imports) {
    auto same = user_sets.find(i->string_at(2));
    if (same != user_sets.end())
      rename[i->result_id] = same->second;
    else
      new_sets.push_back(i);
  }
  for (const auto& [imp, exp] : resolved) rename[imp] = exp;

  // ---- the module ----
  std::set<uint32_t> gone(merged);  // ids whose names and decorations go
  std::set<uint32_t> import_ids;
  for (const auto& r : resolved) import_ids.insert(r.first);
  std::vector<Instruction*> user_functions;
  for (size_t k = 0; k < u.functions.size(); ++k) {
    Instruction* i = u.functions[k];
    if (i->opcode == spv::OpFunction && import_ids.count(i->result_id)) {
      for (; k < u.functions.size() && u.functions[k]->opcode != spv::OpFunctionEnd; ++k) {
        if (u.functions[k]->opcode == spv::OpLabel)
          throw std::invalid_argument("link_device_library: an imported function with a body");
        if (u.functions[k]->result_id) gone.insert(u.functions[k]->result_id);
      }
      continue;
    }
    user_functions.push_back(i);
  }
  for (const auto& r : resolved)
    if (udef.at(r.first)->opcode != spv::OpFunction) gone.insert(r.first);  // an imported variable
  for (const std::vector<Instruction*>* v : {&u.annotations, &l.annotations})
    for (const Instruction* d : *v)
      if (d->opcode == spv::OpGroupDecorate || d->opcode == spv::OpGroupMemberDecorate)
        for (const Operand& o : d->operands)
          if (is_id_use(o.type) && gone.count(d->words[o.offset]))
            throw std::invalid_argument("link_device_library: a decoration group names an import");

  // ---- the output: from here on nothing declines ----
  std::vector<Instruction> out;
  out.reserve(user.insts.size() + lib.insts.size());
  auto keep = [&](std::vector<Instruction*>& v, bool library_side) {
    for (Instruction* i : v) {
      if (library_side && i->result_id && merged.count(i->result_id)) continue;
      if (!rename.empty()) i->replace_ids(rename);
      out.push_back(std::move(*i));
    }
  };
  std::set<std::vector<uint32_t>> seen;
  auto keep_unique = [&](std::vector<Instruction*>& v) {
    for (Instruction* i : v)
      if (seen.insert(i->words).second) out.push_back(std::move(*i));
  };
  auto keep_if = [&](std::vector<Instruction*>& v, bool library_side, auto wanted) {
    std::vector<Instruction*> kept;
    for (Instruction* i : v)
      if (wanted(*i)) kept.push_back(i);
    keep(kept, library_side);
  };
  auto named_kept = [&](const Instruction& n) { return n.size() >= 2 && !gone.count(n.words[1]); };
  auto decoration_kept = [&](const Instruction& d) {
    if (d.opcode == spv::OpDecorate || d.opcode == spv::OpMemberDecorate || d.opcode == spv::OpDecorateId ||
        d.opcode == spv::OpDecorateString || d.opcode == spv::OpMemberDecorateString)
      return d.size() >= 2 && !gone.count(d.words[1]) && !is_import_of(d, dropped_imports);
    return true;
  };
  keep_unique(u.capabilities);
  keep_unique(l.capabilities);
  keep_unique(u.extensions);
  keep_unique(l.extensions);
  keep(u.imports, false);
  keep(new_sets, true);
  keep(u.memory_model, false);
  keep(u.entry_points, false);
  keep(l.entry_points, true);
  keep(u.modes, false);
  keep(l.modes, true);
  keep(u.debug, false);
  keep(l.debug, true);
  keep_if(u.names, false, named_kept);
  keep_if(l.names, true, named_kept);
  keep_unique(u.processed);
  keep_unique(l.processed);
  keep_if(u.annotations, false, decoration_kept);
  keep_if(l.annotations, true, decoration_kept);
  keep_if(u.globals, false, [&](const Instruction& g) { return !(g.result_id && gone.count(g.result_id)); });
  keep(l.globals, true);
  keep(user_functions, false);
  keep(l.functions, true);
  user.insts = std::move(out);
  user.header[3] = user.header[3] + lib.header[3] - 1;
  return Status::Changed;
}

}  // namespace passes
}  // namespace zex
