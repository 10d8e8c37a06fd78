// kernel_names: the module's kernels, from its OpEntryPoint Kernel instructions; and which of them take
// a zex_state_t as their last parameter; each kernel's parameter kinds, which a launch checks its
// scalar arguments against.
#include "spirv/passes/passes.hpp"

#include <zex/detail/param_kind.hpp>

#include <set>

namespace zex {
namespace passes {

std::vector<std::string> kernel_names(const Module& m) {
    std::vector<std::string> names;
  for (const Instruction& i : m.insts) {
    if (i.opcode == spv::OpFunction) break;  // entry points precede every function
    if (i.opcode == spv::OpEntryPoint && i.size() >= 4 && i.words[1] == spv::ExecutionModelKernel)
      names.push_back(i.string_at(3));
  }
  return names;
}

namespace {


bool is_state_type(const std::map<uint32_t, const Instruction*>& defs, uint32_t type) {
  return is_zex_state_type(
      [&](uint32_t id) -> const Instruction* {
        auto it = defs.find(id);
        return it == defs.end() ? nullptr : it->second;
      },
      type);
}

}  // namespace

std::vector<std::string> kernels_without_state(const Module& m) {
    std::map<uint32_t, const Instruction*> defs;
  std::map<uint32_t, std::string> entry;  // function id -> kernel name
  for (const Instruction& i : m.insts) {
    if (i.result_id) defs[i.result_id] = &i;
    if (i.opcode == spv::OpEntryPoint && i.size() >= 4 && i.words[1] == spv::ExecutionModelKernel)
      entry[i.words[2]] = i.string_at(3);
  }
  std::vector<std::string> out;
  for (size_t k = 0; k < m.insts.size(); ++k) {
    const Instruction& f = m.insts[k];
    if (f.opcode != spv::OpFunction || !entry.count(f.result_id)) continue;
    const Instruction* last = nullptr;
    for (size_t p = k + 1; p < m.insts.size() && m.insts[p].opcode == spv::OpFunctionParameter; ++p)
      last = &m.insts[p];
    if (!last || !is_state_type(defs, last->type_id)) out.push_back(entry[f.result_id]);
  }
  return out;
}

std::map<std::string, std::vector<uint8_t>> kernel_param_kinds(const Module& m) {
  namespace pk = detail::param_kind;
    std::map<uint32_t, const Instruction*> defs;
  std::map<uint32_t, std::string> entry;  // function id -> kernel name
  std::set<uint32_t> by_value;            // parameters decorated FuncParamAttr ByVal
  for (const Instruction& i : m.insts) {
    if (i.result_id) defs[i.result_id] = &i;
    if (i.opcode == spv::OpEntryPoint && i.size() >= 4 && i.words[1] == spv::ExecutionModelKernel)
      entry[i.words[2]] = i.string_at(3);
    if (i.opcode == spv::OpDecorate && i.word(2) == spv::DecorationFuncParamAttr && i.word(3) == spv::FunctionParameterAttributeByVal)
      by_value.insert(i.word(1));
  }
  auto kind = [&](const Instruction& param) -> uint8_t {
    auto it = defs.find(param.type_id);
    if (it == defs.end()) return pk::kOther;
    const Instruction& t = *it->second;
    const uint32_t bits = t.word(2);
    // Only the widths a C++ scalar can have; anything else (an i1, an arbitrary-precision int) is
    // left to the driver's size check.
    const bool sized = bits == 8 || bits == 16 || bits == 32 || bits == 64;
    if (t.opcode == spv::OpTypeInt && sized) return static_cast<uint8_t>(pk::kInt | (bits / 8));
    if (t.opcode == spv::OpTypeFloat && sized && bits != 8) return static_cast<uint8_t>(pk::kFloat | (bits / 8));
    if (t.opcode == spv::OpTypePointer)
      return t.word(2) == spv::StorageClassFunction && by_value.count(param.result_id) ? pk::kAggregate : pk::kPointer;
    if (t.opcode == spv::OpTypeStruct) return pk::kAggregate;
    return pk::kOther;
  };
  std::map<std::string, std::vector<uint8_t>> out;
  for (size_t k = 0; k < m.insts.size(); ++k) {
    const Instruction& f = m.insts[k];
    if (f.opcode != spv::OpFunction || !entry.count(f.result_id)) continue;
    std::vector<uint8_t>& kinds = out[entry[f.result_id]];
    for (size_t p = k + 1; p < m.insts.size() && m.insts[p].opcode == spv::OpFunctionParameter; ++p)
      kinds.push_back(kind(m.insts[p]));
  }
  return out;
}

}  // namespace passes
}  // namespace zex
