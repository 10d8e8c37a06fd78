// Helpers of the pass-layer tests (tests/passes/): reading the test modules, counting calls to a zex
// function, the values an OpPhi receives.
#pragma once

#include "spirv/spirv.hpp"

#include "spirv/passes/passes.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace passes_test {

using zex::passes::Instruction;
using zex::passes::Module;

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

/// A test module of tests/passes/ (kernels/<name>.spv in the build tree).
inline std::vector<uint32_t> kernel(const std::string& name) {
  const auto b = read_bytes(std::string(ZEX_PASSES_KERNELS) + "/" + name + ".spv");
  return zex::detail::spirv_words(b.data(), b.size());
}

/// The ids of the functions whose linkage name (import or export) is `name`.
inline std::vector<uint32_t> functions_named(const Module& m, const std::string& name) {
  std::vector<uint32_t> ids;
  for (const Instruction& i : m.insts)
    if (i.opcode == spv::OpDecorate && i.size() >= 5 && i.words[2] == spv::DecorationLinkageAttributes && i.string_at(3) == name)
      ids.push_back(i.words[1]);
  return ids;
}

/// Every OpFunctionCall of the function with linkage name `name`.
inline std::vector<Instruction> calls_to(const Module& m, const std::string& name) {
  const auto ids = functions_named(m, name);
  std::vector<Instruction> calls;
  for (const Instruction& i : m.insts)
    if (i.opcode == spv::OpFunctionCall && std::find(ids.begin(), ids.end(), i.word(3)) != ids.end()) calls.push_back(i);
  return calls;
}

inline size_t count_calls(const std::vector<uint32_t>& words, const std::string& name) {
  return calls_to(zex::passes::parse(words), name).size();
}

/// Throw sites: calls to any report entry point (zex_throw_site: a site numbered by the throw-path pass) (ZEX_THROW calls zex_report_exception,
/// ZEX_CHECK_BOUNDS and ZEX_THROW_VALUES zex_report_exception_values, ABI version 2).
inline size_t count_throws(const std::vector<uint32_t>& words) {
  return count_calls(words, "zex_report_exception") + count_calls(words, "zex_report_exception_values") +
         count_calls(words, "zex_throw") + count_calls(words, "zex_throw_site");
}

/// Line numbers of the ZEXT_LINE_<name> markers of a test kernel's source: name -> line.
inline std::map<std::string, uint32_t> marker_lines(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::map<std::string, uint32_t> out;
  std::string line;
  for (uint32_t n = 1; std::getline(f, line); ++n) {
    const auto at = line.find("ZEXT_LINE_");
    if (at == std::string::npos) continue;
    const auto end = line.find(' ', at);
    out[line.substr(at + 10, end == std::string::npos ? std::string::npos : end - at - 10)] = n;
  }
  return out;
}

/// id -> its defining instruction.
inline std::map<uint32_t, Instruction> definitions(const Module& m) {
  std::map<uint32_t, Instruction> d;
  for (const Instruction& i : m.insts)
    if (i.result_id) d[i.result_id] = i;
  return d;
}

/// The literal value of an OpConstant (32-bit), or throws.
inline uint32_t constant_value(const std::map<uint32_t, Instruction>& defs, uint32_t id) {
  auto it = defs.find(id);
  if (it == defs.end() || it->second.opcode != 43 /* OpConstant */ || it->second.size() != 4)
    throw std::runtime_error("not a 32-bit OpConstant: %" + std::to_string(id));
  return it->second.words[3];
}

/// The call's argument tuples, one per site: a call that takes an OpPhi argument stands for as many
/// sites as the OpPhi has incoming values (the merge builds every OpPhi of a region over the same
/// predecessors, in the same order).
inline std::vector<std::vector<uint32_t>> site_arguments(const std::map<uint32_t, Instruction>& defs,
                                                         const Instruction& call) {
  size_t n = 1;
  for (size_t w = 4; w < call.size(); ++w) {
    auto d = defs.find(call.words[w]);
    if (d != defs.end() && d->second.opcode == spv::OpPhi) n = (d->second.size() - 3) / 2;
  }
  std::vector<std::vector<uint32_t>> out(n);
  for (size_t k = 0; k < n; ++k)
    for (size_t w = 4; w < call.size(); ++w) {
      auto d = defs.find(call.words[w]);
      const bool phi = d != defs.end() && d->second.opcode == spv::OpPhi;
      out[k].push_back(phi ? d->second.words[3 + 2 * k] : call.words[w]);
    }
  return out;
}

}  // namespace passes_test
