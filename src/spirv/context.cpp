// IRContext (context.hpp): the analyses, each built by one walk over the module on first use.
#include "spirv/context.hpp"

#include <utility>

namespace zex {
namespace passes {

struct IRContext::Analyses {
  bool defs_built = false;
  std::unordered_map<uint32_t, size_t> defs;
  bool decorations_built = false;
  std::unordered_map<uint32_t, std::vector<size_t>> decorations;
  bool names_built = false;
  std::unordered_map<uint32_t, std::vector<std::string>> names;
  bool functions_built = false;
  std::vector<FunctionRange> functions;
  bool linkage_built = false;
  std::map<uint32_t, std::string> imports, exports;
  bool entries_built = false;
  std::unordered_map<uint32_t, bool> entries;
};

IRContext::IRContext() = default;
IRContext::IRContext(Module m) : m_(std::move(m)) {}
IRContext::~IRContext() = default;
IRContext::IRContext(IRContext&&) noexcept = default;
IRContext& IRContext::operator=(IRContext&&) noexcept = default;

Module IRContext::release() {
  a_.reset();
  Module m = std::move(m_);
  m_ = Module{};
  return m;
}

void IRContext::invalidate() { a_.reset(); }

Status IRContext::record(Status s) {
  if (s == Status::Changed) invalidate();
  return s;
}

IRContext::Analyses& IRContext::analyses() {
  if (!a_) a_ = std::make_unique<Analyses>();
  return *a_;
}

size_t IRContext::def_index(uint32_t id) {
  Analyses& a = analyses();
  if (!a.defs_built) {
    a.defs_built = true;
    a.defs.reserve(m_.insts.size());
    for (size_t k = 0; k < m_.insts.size(); ++k)
      if (m_.insts[k].result_id) a.defs[m_.insts[k].result_id] = k;  // a later definition wins
  }
  auto d = a.defs.find(id);
  return d == a.defs.end() ? npos : d->second;
}

const Instruction* IRContext::def(uint32_t id) {
  const size_t k = def_index(id);
  return k == npos ? nullptr : &m_.insts[k];
}

const std::vector<size_t>& IRContext::decorations(uint32_t id) {
  Analyses& a = analyses();
  if (!a.decorations_built) {
    a.decorations_built = true;
    for (size_t k = 0; k < m_.insts.size(); ++k) {
      const uint16_t o = m_.insts[k].opcode;
      if (o == spv::OpFunction) break;  // annotations precede every function
      if (o == spv::OpDecorate || o == spv::OpDecorateId || o == spv::OpDecorateString || o == spv::OpMemberDecorate)
        a.decorations[m_.insts[k].word(1)].push_back(k);
    }
  }
  static const std::vector<size_t> none;
  auto d = a.decorations.find(id);
  return d == a.decorations.end() ? none : d->second;
}

const std::vector<std::string>& IRContext::names(uint32_t id) {
  Analyses& a = analyses();
  if (!a.names_built) {
    a.names_built = true;
    for (const Instruction& i : m_.insts) {
      if (i.opcode == spv::OpFunction) break;  // debug names precede every function
      if (i.opcode == spv::OpName) a.names[i.word(1)].push_back(i.string_at(2));
    }
  }
  static const std::vector<std::string> none;
  auto n = a.names.find(id);
  return n == a.names.end() ? none : n->second;
}

const std::vector<IRContext::FunctionRange>& IRContext::functions() {
  Analyses& a = analyses();
  if (!a.functions_built) {
    a.functions_built = true;
    for (size_t k = 0; k < m_.insts.size(); ++k) {
      if (m_.insts[k].opcode != spv::OpFunction) continue;
      size_t j = k + 1;
      bool defined = false;
      for (; j < m_.insts.size() && m_.insts[j].opcode != spv::OpFunctionEnd; ++j)
        defined = defined || m_.insts[j].opcode == spv::OpLabel;
      if (j == m_.insts.size()) break;
      a.functions.push_back({m_.insts[k].result_id, k, j, defined});
      k = j;
    }
  }
  return a.functions;
}

const std::map<uint32_t, std::string>& IRContext::imports() {
  Analyses& a = analyses();
  if (!a.linkage_built) {
    a.linkage_built = true;
    // OpDecorate %id LinkageAttributes "name" Import|Export; a later one for the same id wins.
    for (const Instruction& i : m_.insts) {
      if (i.opcode != spv::OpDecorate || i.size() < 5 || i.words[2] != spv::DecorationLinkageAttributes) continue;
      if (i.words.back() == spv::LinkageTypeImport) a.imports[i.words[1]] = i.string_at(3);
      else if (i.words.back() == spv::LinkageTypeExport) a.exports[i.words[1]] = i.string_at(3);
    }
  }
  return a.imports;
}

const std::map<uint32_t, std::string>& IRContext::exports() {
  imports();
  return a_->exports;
}

bool IRContext::is_entry_point(uint32_t function) {
  Analyses& a = analyses();
  if (!a.entries_built) {
    a.entries_built = true;
    for (const Instruction& i : m_.insts) {
      if (i.opcode == spv::OpFunction) break;
      if (i.opcode == spv::OpEntryPoint) a.entries[i.word(2)] = true;
    }
  }
  return a.entries.count(function) != 0;
}

std::map<uint32_t, std::string> imported_functions(const Module& m) {
  std::map<uint32_t, std::string> out;
  for (const Instruction& i : m.insts)
    if (i.opcode == spv::OpDecorate && i.size() >= 5 && i.words[2] == spv::DecorationLinkageAttributes &&
        i.words.back() == spv::LinkageTypeImport)
      out[i.words[1]] = i.string_at(3);
  return out;
}

namespace {
bool bytes_at(IRContext& ctx, uint32_t id, std::string* out, int depth);
bool string_at(IRContext& ctx, uint32_t id, std::string* out, int depth);
}  // namespace

bool constant_u32(IRContext& ctx, uint32_t id, uint32_t* v) {
  const Instruction* c = ctx.def(id);
  if (!c || c->opcode != spv::OpConstant || c->size() != 4) return false;
  *v = c->word(3);
  return true;
}
namespace {
bool string_at(IRContext& ctx, uint32_t id, std::string* out, int depth) {
  const Instruction* i = ctx.def(id);
  if (!i || depth > 8) return false;
  switch (i->opcode) {
    case spv::OpAccessChain: case spv::OpInBoundsAccessChain: case spv::OpPtrAccessChain:
    case spv::OpInBoundsPtrAccessChain:
      for (size_t k = 4; k < i->size(); ++k) {
        uint32_t v = 1;
        if (!constant_u32(ctx, i->word(k), &v)) {
          const Instruction* c = ctx.def(i->word(k));
          if (!c || !(c->opcode == spv::OpConstantNull || (c->opcode == spv::OpConstant && c->size() == 5 &&
                                                         c->word(3) == 0 && c->word(4) == 0)))
            return false;
          v = 0;
        }
        if (v != 0) return false;
      }
      return string_at(ctx, i->word(3), out, depth + 1);
    case spv::OpBitcast: case spv::OpPtrCastToGeneric: case spv::OpCopyObject:
      return string_at(ctx, i->word(3), out, depth + 1);
    case spv::OpSpecConstantOp:
      if (i->word(3) == spv::OpInBoundsPtrAccessChain || i->word(3) == spv::OpPtrAccessChain ||
          i->word(3) == spv::OpAccessChain || i->word(3) == spv::OpInBoundsAccessChain || i->word(3) == spv::OpBitcast ||
          i->word(3) == spv::OpPtrCastToGeneric)
        return string_at(ctx, i->word(4), out, depth + 1);
      return false;
    case spv::OpVariable:
      return i->size() >= 5 && bytes_at(ctx, i->word(4), out, depth + 1);
    default:
      return false;
  }
}
bool bytes_at(IRContext& ctx, uint32_t id, std::string* out, int depth) {
  const Instruction* c = ctx.def(id);
  if (!c || depth > 8) return false;
  if (c->opcode == spv::OpConstantNull) {
    out->clear();
    return true;
  }
  if (c->opcode != spv::OpConstantComposite) return false;
  const Instruction* first = c->size() > 3 ? ctx.def(c->word(3)) : nullptr;
  if (first && first->opcode == spv::OpConstantComposite && c->size() == 4) return bytes_at(ctx, c->word(3), out, depth + 1);
  std::string s;
  for (size_t k = 3; k < c->size(); ++k) {
    const Instruction* b = ctx.def(c->word(k));
    uint32_t v = 0;
    if (b && b->opcode == spv::OpConstantNull) v = 0;
    else if (!constant_u32(ctx, c->word(k), &v)) return false;
    if ((v & 0xff) == 0) break;
    s += static_cast<char>(v & 0xff);
  }
  *out = std::move(s);
  return true;
}

}  // namespace

bool constant_string(IRContext& ctx, uint32_t id, std::string* out) { return string_at(ctx, id, out, 0); }

}  // namespace passes
}  // namespace zex
