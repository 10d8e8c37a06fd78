// The SPIR-V stream, checked before the translator sees it (docs/cpu-driver-compiler.md, step 1).
// libLLVMSPIRVLib assumes a well-formed stream: it asserts, crashes or exits on a truncated one. The
// translation runs in a child process for that reason, but a clear message in the build log beats
// "the translator crashed", so SPIRV-Tools' parser (which knows every operand's type) reads the module
// first; on top of what it checks come the few facts LLVM needs that neither the parser nor the
// translator checks. The same walk yields the byte size of each specialization constant (the width of
// its OpSpecConstant literal, which the parser decodes), so that constants can be read with their own
// size and made part of the translation cache key without running the translator in this process.
#include "compiler/parts.hpp"

#include <spirv-tools/libspirv.h>

#include <algorithm>
#include <cstring>
#include <set>

namespace zexcpu {
namespace {

// Opcodes and enumerants (SPIR-V 1.6 specification, section 3).
enum : uint16_t {
  kOpEntryPoint = 15,
  kOpSpecConstantTrue = 48,
  kOpSpecConstantFalse = 49,
  kOpSpecConstant = 50,
  kOpFunction = 54,
  kOpFunctionEnd = 56,
  kOpDecorate = 71,
  kOpMemberDecorate = 72,
};
constexpr uint32_t kDecorationSpecId = 1;
constexpr uint32_t kDecorationAlignment = 44;
constexpr uint32_t kMemoryAccessAligned = 0x2;

std::string hex32(uint32_t v) {
  char buf[16];
  snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

struct Walk {
  SpirvFacts* facts;
  std::string error;
  size_t word = 5;  // the current instruction's first word, for messages
  bool in_function = false;
  std::vector<uint32_t> entry_functions;
  std::set<uint32_t> defined_functions;
  std::map<uint32_t, uint32_t> spec_ids;    // result id -> SpecId
  std::map<uint32_t, uint32_t> spec_bytes;  // result id -> bytes
};

bool bad_align(uint32_t a) { return a == 0 || (a & (a - 1)) != 0; }

spv_result_t on_header(void* user, spv_endianness_t, uint32_t, uint32_t version, uint32_t, uint32_t bound,
                       uint32_t) {
  auto* w = static_cast<Walk*>(user);
  if ((version & 0xff0000ffu) != 0 || version > 0x00010600u || version < 0x00010000u) {
    w->error = "unsupported version word " + hex32(version);
    return SPV_ERROR_INVALID_BINARY;
  }
  if (bound == 0) {
    w->error = "id bound is 0";
    return SPV_ERROR_INVALID_BINARY;
  }
  w->facts->version = version;
  return SPV_SUCCESS;
}

// What LLVM needs and the parser does not check: alignments that are powers of two (LLVM asserts or
// miscompiles otherwise; the validator lets them through), and whole functions.
spv_result_t on_instruction(void* user, const spv_parsed_instruction_t* inst) {
  auto* w = static_cast<Walk*>(user);
  const uint32_t* words = inst->words;
  auto operand = [&](uint16_t i) { return words[inst->operands[i].offset]; };
  const std::string at = " at word " + std::to_string(w->word);
  switch (inst->opcode) {
    case kOpDecorate:
      if (inst->num_operands >= 3 && operand(1) == kDecorationAlignment && bad_align(operand(2))) {
        w->error = "Alignment decoration " + std::to_string(operand(2)) + at + " is not a power of two";
        return SPV_ERROR_INVALID_BINARY;
      }
      if (inst->num_operands >= 3 && operand(1) == kDecorationSpecId) w->spec_ids[operand(0)] = operand(2);
      break;
    case kOpMemberDecorate:
      if (inst->num_operands >= 4 && operand(2) == kDecorationAlignment && bad_align(operand(3))) {
        w->error = "Alignment member decoration " + std::to_string(operand(3)) + at + " is not a power of two";
        return SPV_ERROR_INVALID_BINARY;
      }
      break;
    case kOpSpecConstantTrue:
    case kOpSpecConstantFalse:
      w->spec_bytes[inst->result_id] = 1;  // a bool constant is set with one byte
      break;
    case kOpSpecConstant:
      if (inst->num_operands >= 3) w->spec_bytes[inst->result_id] = inst->operands[2].number_bit_width / 8;
      break;
    case kOpFunction:
      // A stream cut at an instruction boundary parses; what it lacks is the end of a function or the
      // function an entry point names.
      if (w->in_function) {
        w->error = "OpFunction" + at + " inside another function (missing OpFunctionEnd)";
        return SPV_ERROR_INVALID_BINARY;
      }
      w->in_function = true;
      w->defined_functions.insert(inst->result_id);
      break;
    case kOpFunctionEnd:
      if (!w->in_function) {
        w->error = "OpFunctionEnd" + at + " outside a function";
        return SPV_ERROR_INVALID_BINARY;
      }
      w->in_function = false;
      break;
    case kOpEntryPoint:
      if (inst->num_operands >= 2) w->entry_functions.push_back(operand(1));
      break;
    default:
      break;
  }
  for (uint16_t i = 0; i < inst->num_operands; ++i) {
    const spv_parsed_operand_t& op = inst->operands[i];
    if (op.type != SPV_OPERAND_TYPE_MEMORY_ACCESS && op.type != SPV_OPERAND_TYPE_OPTIONAL_MEMORY_ACCESS) continue;
    if (!(words[op.offset] & kMemoryAccessAligned)) continue;
    if (i + 1 >= inst->num_operands || bad_align(operand(static_cast<uint16_t>(i + 1)))) {
      w->error = "Aligned memory operand" + at + " is missing or not a power of two";
      return SPV_ERROR_INVALID_BINARY;
    }
  }
  w->word += inst->num_words;
  return SPV_SUCCESS;
}

}  // namespace

bool check_spirv(const uint8_t* input, size_t size, SpirvFacts* facts, std::string* err) {
  std::vector<uint32_t> words(size / 4);
  memcpy(words.data(), input, words.size() * 4);
  Walk w{facts, {}, 5, false, {}, {}, {}, {}};
  spv_context ctx = spvContextCreate(SPV_ENV_UNIVERSAL_1_6);
  spv_diagnostic diag = nullptr;
  spv_result_t r = spvBinaryParse(ctx, &w, words.data(), words.size(), on_header, on_instruction, &diag);
  if (r != SPV_SUCCESS) {
    if (!w.error.empty()) *err = w.error;
    else if (diag && diag->error)
      *err = std::string(diag->error) + " (at word " + std::to_string(diag->position.index) + ")";
    else *err = "SPIRV-Tools could not parse the module";
  }
  spvDiagnosticDestroy(diag);
  spvContextDestroy(ctx);
  if (r != SPV_SUCCESS) return false;
  if (w.in_function) {
    *err = "the last function has no OpFunctionEnd (truncated?)";
    return false;
  }
  for (uint32_t f : w.entry_functions)
    if (!w.defined_functions.count(f)) {
      *err = "entry point function %" + std::to_string(f) + " is not defined in the module (truncated?)";
      return false;
    }
  facts->spec_sizes.clear();
  for (auto& [result, id] : w.spec_ids) {
    auto b = w.spec_bytes.find(result);
    if (b != w.spec_bytes.end() && b->second >= 1 && b->second <= 8) facts->spec_sizes[id] = b->second;
  }
  return true;
}

}  // namespace zexcpu
