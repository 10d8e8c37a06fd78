// A SPIR-V module as tests/device_test.cpp reads it: instructions, definitions by id, decorations,
// functions, and the few questions the device-library checks ask (exports, types, constant strings).
// Parsed by zex's pass layer (src/spirv/ir.hpp), so the tests and the library read SPIR-V one way.
#pragma once

#include "spirv/ir.hpp"

#include <gtest/gtest.h>
#include <spirv-tools/libspirv.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace device_test {

// llvm-spirv-15 writes SPIR-V 1.4.
constexpr spv_target_env kEnv = SPV_ENV_UNIVERSAL_1_4;

// The few SPIR-V enumerants these checks need (SPIR-V 1.4 specification, section 3).
namespace op {
constexpr uint16_t Name = 5, EntryPoint = 15, TypeVoid = 19, TypeInt = 21, TypeArray = 28,
                   TypeStruct = 30, TypePointer = 32, TypeFunction = 33, Constant = 43,
                   ConstantComposite = 44, SpecConstant = 50, Function = 54, FunctionParameter = 55,
                   FunctionEnd = 56, FunctionCall = 57, Variable = 59, Load = 61, Store = 62,
                   InBoundsPtrAccessChain = 70, PtrAccessChain = 67, Decorate = 71,
                   ConvertPtrToU = 117, MemoryBarrier = 225, AtomicLoad = 227,
                   AtomicCompareExchange = 230, Label = 248, Branch = 249, BranchConditional = 250;
}  // namespace op
namespace decoration {
constexpr uint32_t SpecId = 1, Volatile = 21, Constant = 22, FuncParamAttr = 38, LinkageAttributes = 41;
}
constexpr uint32_t kLinkageExport = 0, kLinkageImport = 1;
constexpr uint32_t kParamAttrByVal = 2;
constexpr uint32_t kStorageUniformConstant = 0, kStorageCrossWorkgroup = 5, kStorageFunction = 7;
constexpr uint32_t kScopeDevice = 1;
constexpr uint32_t kMemoryOperandVolatile = 1;

std::vector<uint32_t> readSpirv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "cannot open " << path;
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes.size() % 4, 0u) << path << " is not a whole number of SPIR-V words";
  std::vector<uint32_t> words(bytes.size() / 4);
  std::copy(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(words.size() * 4),
            reinterpret_cast<char*>(words.data()));
  return words;
}

struct Inst {
  uint16_t opcode = 0;
  uint32_t type = 0;    // result type id, 0 if none
  uint32_t result = 0;  // result id, 0 if none
  std::vector<uint32_t> words;
  uint32_t word(size_t i) const { return i < words.size() ? words[i] : 0; }
};

std::string literalString(const std::vector<uint32_t>& words, size_t first) {
  std::string s;
  for (size_t w = first; w < words.size(); ++w)
    for (int b = 0; b < 4; ++b) {
      char c = static_cast<char>((words[w] >> (8 * b)) & 0xFF);
      if (c == '\0')
        return s;
      s += c;
    }
  return s;
}

struct Function {
  Inst def;
  std::vector<Inst> params;
  std::vector<Inst> body;
  size_t count(uint16_t opcode) const {
    return static_cast<size_t>(
        std::count_if(body.begin(), body.end(), [&](const Inst& i) { return i.opcode == opcode; }));
  }
};

// A parsed module: every instruction, definitions by result id, decorations, functions.
class Module {
 public:
  // Parsed with zex's own pass-layer parser (src/spirv/ir.hpp), flattened into what the checks read.
  explicit Module(const std::vector<uint32_t>& words) {
    zex::passes::Module m;
    try {
      m = zex::passes::parse(words);
    } catch (const std::invalid_argument& e) {
      ADD_FAILURE() << e.what();
      return;
    }
    for (const auto& pi : m.insts) add(pi);
  }

  std::vector<Inst> insts;
  std::map<uint32_t, Inst> defs;
  std::map<uint32_t, Function> functions;

  std::vector<Inst> decorations(uint32_t target, uint32_t kind) const {
    std::vector<Inst> out;
    for (const Inst& i : insts)
      if (i.opcode == op::Decorate && i.word(1) == target && i.word(2) == kind)
        out.push_back(i);
    return out;
  }
  // The id carrying LinkageAttributes "name" with the given linkage type, if any.
  std::optional<uint32_t> linked(const std::string& name, uint32_t linkage) const {
    for (const Inst& i : insts)
      if (i.opcode == op::Decorate && i.word(2) == decoration::LinkageAttributes &&
          literalString(i.words, 3) == name && i.words.back() == linkage)
        return i.word(1);
    return std::nullopt;
  }
  const Function* exported(const std::string& name) const {
    auto id = linked(name, kLinkageExport);
    if (!id)
      return nullptr;
    auto it = functions.find(*id);
    return it == functions.end() ? nullptr : &it->second;
  }
  const Inst& def(uint32_t id) const {
    static const Inst none;
    auto it = defs.find(id);
    return it == defs.end() ? none : it->second;
  }
  bool isInt(uint32_t type, uint32_t width) const {
    const Inst& t = def(type);
    return t.opcode == op::TypeInt && t.word(2) == width && t.word(3) == 0;
  }
  bool isPointer(uint32_t type, uint32_t storage) const {
    const Inst& t = def(type);
    return t.opcode == op::TypePointer && t.word(2) == storage;
  }
  uint32_t pointee(uint32_t type) const { return def(type).word(3); }
  // zex_state_t as SPIR-V sees it: a struct of three 64-bit integers.
  bool isStateStruct(uint32_t type) const {
    const Inst& t = def(type);
    return t.opcode == op::TypeStruct && t.words.size() == 5 && isInt(t.word(2), 64) &&
           isInt(t.word(3), 64) && isInt(t.word(4), 64);
  }
  std::optional<uint64_t> constant(uint32_t id) const {
    const Inst& c = def(id);
    if (c.opcode != op::Constant && c.opcode != op::SpecConstant)
      return std::nullopt;
    uint64_t v = c.word(3);
    if (c.words.size() > 4)
      v |= static_cast<uint64_t>(c.word(4)) << 32;
    return v;
  }
  // The C string a __constant char* value points to: an access chain with zero offsets into a
  // UniformConstant variable initialized with an array of i8 constants.
  std::optional<std::string> constantString(uint32_t pointer) const {
    const Inst* p = &def(pointer);
    while (p->opcode == op::InBoundsPtrAccessChain || p->opcode == op::PtrAccessChain) {
      for (size_t i = 4; i < p->words.size(); ++i)
        if (constant(p->word(i)).value_or(1) != 0)
          return std::nullopt;
      p = &def(p->word(3));
    }
    if (p->opcode != op::Variable || p->word(3) != kStorageUniformConstant || p->words.size() < 5)
      return std::nullopt;
    const Inst& init = def(p->word(4));
    if (init.opcode != op::ConstantComposite)
      return std::nullopt;
    std::string s;
    for (size_t i = 3; i < init.words.size(); ++i) {
      auto c = constant(init.word(i));
      if (!c)
        return std::nullopt;
      if (*c == 0)
        return s;
      s += static_cast<char>(*c);
    }
    return std::nullopt;
  }

 private:
  Function* current_ = nullptr;

  void add(const zex::passes::Instruction& pi) {
    Inst i;
    i.opcode = pi.opcode;
    i.type = pi.type_id;
    i.result = pi.result_id;
    i.words = pi.words;
    insts.push_back(i);
    if (i.result != 0) defs[i.result] = i;
    if (i.opcode == op::Function) {
      current_ = &functions[i.result];
      current_->def = i;
    } else if (i.opcode == op::FunctionEnd) {
      current_ = nullptr;
    } else if (current_ != nullptr) {
      if (i.opcode == op::FunctionParameter)
        current_->params.push_back(i);
      else
        current_->body.push_back(i);
    }
  }
};

}  // namespace device_test
