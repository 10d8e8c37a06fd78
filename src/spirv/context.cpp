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

}  // namespace passes
}  // namespace zex
