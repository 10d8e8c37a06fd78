// The device library (device/zex_device.cl -> zex_device.spv) and <zex/device.h>, checked on the
// SPIR-V itself with SPIRV-Tools: what docs/abi.md promises a compiler writer (exports, signatures,
// SpecId, the claim, no private memory), that a user module links with it, and that specializing the
// debug level removes the string and frame code.
#include "spirv_module.hpp"

#include <gtest/gtest.h>
#include <zex/abi.h>

#include <spirv-tools/libspirv.h>
#include <spirv-tools/libspirv.hpp>
#include <spirv-tools/linker.hpp>
#include <spirv-tools/optimizer.hpp>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#ifndef ZEX_TEST_DEVICE_SPV
#error "ZEX_TEST_DEVICE_SPV must name zex_device.spv"
#endif
#ifndef ZEX_TEST_USER_SPV
#error "ZEX_TEST_USER_SPV must name the compiled tests/kernels/device/user_kernels.cl"
#endif
#ifndef ZEX_TEST_DEVICE_SPV_1_3
#error "ZEX_TEST_DEVICE_SPV_1_3 must name zex_device-1.3.spv"
#endif
#ifndef ZEX_TEST_COMPILER_STYLE_ASM
#error "ZEX_TEST_COMPILER_STYLE_ASM must name tests/kernels/device/compiler_style.spvasm"
#endif
#ifndef ZEX_TEST_USER_SOURCE
#error "ZEX_TEST_USER_SOURCE must name tests/kernels/device/user_kernels.cl"
#endif

namespace {

using namespace device_test;  // NOLINT: the test file and its helpers are one unit

std::string validate(const std::vector<uint32_t>& words, spv_target_env env = kEnv) {
  spvtools::SpirvTools tools(env);
  std::string messages;
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t& pos,
                               const char* m) { messages += std::string(m) + " (word " +
                                                            std::to_string(pos.index) + ")\n"; });
  return tools.Validate(words) ? std::string() : "invalid: " + messages;
}

struct LinkResult {
  bool ok = false;
  std::vector<uint32_t> words;
  std::string messages;
};

LinkResult link(const std::vector<std::vector<uint32_t>>& modules, spv_target_env env = kEnv) {
  LinkResult r;
  spvtools::Context ctx(env);
  ctx.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t&,
                             const char* m) { r.messages += std::string(m) + "\n"; });
  r.ok = spvtools::Link(ctx, modules, &r.words) == SPV_SUCCESS;
  return r;
}

// What a driver does with the module before code generation: fix the debug level, then fold and drop
// the dead code. The passes are the ones spirv-opt offers for a Kernel module.
std::vector<uint32_t> specialize(const std::vector<uint32_t>& words, int level) {
  spvtools::Optimizer opt(kEnv);
  std::string messages;
  opt.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t&,
                             const char* m) { messages += std::string(m) + "\n"; });
  opt.RegisterPass(spvtools::CreateSetSpecConstantDefaultValuePass(
         std::unordered_map<uint32_t, std::string>{{ZEX_SPEC_ID_DEBUG_LEVEL, std::to_string(level)}}))
      .RegisterPass(spvtools::CreateFreezeSpecConstantValuePass())
      .RegisterPass(spvtools::CreateCCPPass())
      .RegisterPass(spvtools::CreateDeadBranchElimPass())
      .RegisterPass(spvtools::CreateAggressiveDCEPass());
  std::vector<uint32_t> out;
  EXPECT_TRUE(opt.Run(words.data(), words.size(), &out)) << messages;
  return out;
}

const std::vector<uint32_t>& library() {
  static const std::vector<uint32_t> words = readSpirv(ZEX_TEST_DEVICE_SPV);
  return words;
}
const std::vector<uint32_t>& userModule() {
  static const std::vector<uint32_t> words = readSpirv(ZEX_TEST_USER_SPV);
  return words;
}

// The line of tests/kernels/device/user_kernels.cl that holds `marker`.
uint32_t sourceLine(const std::string& marker) {
  std::ifstream in(ZEX_TEST_USER_SOURCE);
  std::string line;
  for (uint32_t n = 1; std::getline(in, line); ++n)
    if (line.find(marker) != std::string::npos)
      return n;
  ADD_FAILURE() << marker << " not found in " << ZEX_TEST_USER_SOURCE;
  return 0;
}

const char* const kEntryPoints[] = {"zex_report_exception", "zex_report_exception_values", "zex_report_frame",
                                    "zex_signal_exception", "zex_throw", "zex_throw_site"};

// ---------------------------------------------------------------------------------------------------

TEST(DeviceLibrary, IsValidSpirv) {
  ASSERT_FALSE(library().empty());
  EXPECT_EQ(library()[0], 0x07230203u) << "SPIR-V magic number";
  EXPECT_EQ(validate(library()), "");
}

TEST(DeviceLibrary, ExportsTheThreeEntryPoints) {
  Module m(library());
  for (const char* name : kEntryPoints)
    EXPECT_NE(m.exported(name), nullptr) << name << " is not a function with Export linkage";
  // A library, not a program: nothing for a driver to launch.
  for (const Inst& i : m.insts)
    EXPECT_NE(i.opcode, op::EntryPoint) << "the library must not declare kernels";
}

// The signatures docs/abi.md gives to compiler writers, as llvm-spirv emits them: the state is a
// pointer to a Function-storage struct {u64, u64, u64} decorated FuncParamAttr ByVal, strings are
// pointers to UniformConstant i8.
TEST(DeviceLibrary, EntryPointSignaturesAreTheDocumentedOnes) {
  Module m(library());
  auto checkState = [&](const Function& f, const char* name) {
    ASSERT_FALSE(f.params.empty()) << name;
    uint32_t t = f.params[0].type;
    EXPECT_TRUE(m.isPointer(t, kStorageFunction)) << name << ": state must be a Function pointer";
    EXPECT_TRUE(m.isStateStruct(m.pointee(t))) << name << ": state must point to {u64,u64,u64}";
    bool byval = false;
    for (const Inst& d : m.decorations(f.params[0].result, decoration::FuncParamAttr))
      byval |= d.word(3) == kParamAttrByVal;
    EXPECT_TRUE(byval) << name << ": state parameter must be FuncParamAttr ByVal";
  };
  auto isString = [&](uint32_t type) {
    return m.isPointer(type, kStorageUniformConstant) && m.isInt(m.pointee(type), 8);
  };

  const Function* report = m.exported("zex_report_exception");
  ASSERT_NE(report, nullptr);
  EXPECT_TRUE(m.isInt(report->def.type, 32)) << "zex_report_exception returns a 32-bit int";
  ASSERT_EQ(report->params.size(), 3u);
  checkState(*report, "zex_report_exception");
  EXPECT_TRUE(isString(report->params[1].type)) << "name";
  EXPECT_TRUE(isString(report->params[2].type)) << "reason";

  const Function* frame = m.exported("zex_report_frame");
  ASSERT_NE(frame, nullptr);
  EXPECT_EQ(m.def(frame->def.type).opcode, op::TypeVoid);
  ASSERT_EQ(frame->params.size(), 5u);
  checkState(*frame, "zex_report_frame");
  EXPECT_TRUE(m.isInt(frame->params[1].type, 32)) << "index";
  EXPECT_TRUE(isString(frame->params[2].type)) << "function";
  EXPECT_TRUE(isString(frame->params[3].type)) << "file";
  EXPECT_TRUE(m.isInt(frame->params[4].type, 32)) << "line";

  const Function* signal = m.exported("zex_signal_exception");
  ASSERT_NE(signal, nullptr);
  EXPECT_EQ(m.def(signal->def.type).opcode, op::TypeVoid);
  ASSERT_EQ(signal->params.size(), 1u);
  checkState(*signal, "zex_signal_exception");
}

// The cold path publishes the report as the protocol requires: its last store is the status
// (ZEX_STATUS_THROWN), with a memory barrier before it.
void expect_status_stored_last(const Module& m, const Function& f) {
  const Inst* last_store = nullptr;
  bool fence_before = false, fence_seen = false;
  for (const Inst& i : f.body) {
    if (i.opcode == op::MemoryBarrier) fence_seen = true;
    if (i.opcode == op::Store) {
      last_store = &i;
      fence_before = fence_seen;
    }
  }
  ASSERT_NE(last_store, nullptr);
  EXPECT_TRUE(fence_before) << "no memory barrier before the last store";
  EXPECT_EQ(m.constant(last_store->word(2)), std::optional<uint64_t>(ZEX_STATUS_THROWN));
}

// The fused entry point (issue 15): zex_throw(state, name, reason, count, kind, a, b, function, file,
// line); one claim (no atomic load of the claim word after its own CAS), the status last after a fence.
TEST(DeviceLibrary, FusedThrowClaimsOnceAndStoresTheStatusLast) {
  Module m(library());
  const Function* fused = m.exported("zex_throw");
  ASSERT_NE(fused, nullptr);
  EXPECT_EQ(m.def(fused->def.type).opcode, op::TypeVoid);
  ASSERT_EQ(fused->params.size(), 10u);
  EXPECT_TRUE(m.isStateStruct(m.pointee(fused->params[0].type)));
  for (size_t p : {1u, 2u, 7u, 8u})
    EXPECT_TRUE(m.isPointer(fused->params[p].type, kStorageUniformConstant)) << "string parameter " << p;
  for (size_t p : {3u, 4u, 9u})
    EXPECT_TRUE(m.isInt(fused->params[p].type, 32)) << "parameter " << p;
  for (size_t p : {5u, 6u})
    EXPECT_TRUE(m.isInt(fused->params[p].type, 64)) << "value parameter " << p;
  EXPECT_EQ(fused->count(op::AtomicCompareExchange), 1u);
  EXPECT_EQ(fused->count(op::AtomicLoad), 0u) << "the claimant must not re-load its claim";
  expect_status_stored_last(m, *fused);
}

// The throw-site entry point (ABI version 3): zex_throw_site(state, site, a, b). No
// strings; one claim with a constant claim value (the claimant knows it owns the report from its own
// CAS), the status last after a fence.
TEST(DeviceLibrary, ThrowSiteClaimsOnceWithAConstantAndStoresTheStatusLast) {
  Module m(library());
  const Function* site = m.exported("zex_throw_site");
  ASSERT_NE(site, nullptr);
  EXPECT_EQ(m.def(site->def.type).opcode, op::TypeVoid);
  ASSERT_EQ(site->params.size(), 4u);
  EXPECT_TRUE(m.isStateStruct(m.pointee(site->params[0].type)));
  EXPECT_TRUE(m.isInt(site->params[1].type, 32)) << "the site";
  for (size_t p : {2u, 3u})
    EXPECT_TRUE(m.isInt(site->params[p].type, 64)) << "value parameter " << p;
  EXPECT_EQ(site->count(op::AtomicCompareExchange), 1u);
  EXPECT_EQ(site->count(op::AtomicLoad), 0u) << "the claimant must not re-load its claim";
  for (const Inst& i : site->body)
    if (i.opcode == op::AtomicCompareExchange) {
      // OpAtomicCompareExchange: type, result, pointer, scope, equal, unequal, value, comparator.
      EXPECT_EQ(m.constant(i.word(7)), std::optional<uint64_t>(0xFFFFFFFFu)) << "a constant claim value";
      EXPECT_EQ(m.constant(i.word(8)), std::optional<uint64_t>(0u));
    }
  expect_status_stored_last(m, *site);
}

TEST(DeviceLibrary, ExportsTheAbiVersionConstant) {
  Module m(library());
  auto id = m.linked("zex_abi_version", kLinkageExport);
  ASSERT_TRUE(id) << "zex_abi_version must have Export linkage";
  const Inst& var = m.def(*id);
  ASSERT_EQ(var.opcode, op::Variable);
  EXPECT_EQ(var.word(3), kStorageUniformConstant) << "a __constant variable";
  EXPECT_TRUE(m.isInt(m.pointee(var.type), 32));
  ASSERT_GE(var.words.size(), 5u) << "it needs an initializer";
  EXPECT_EQ(m.constant(var.word(4)), std::optional<uint64_t>(ZEX_ABI_VERSION));
  EXPECT_FALSE(m.decorations(*id, decoration::Constant).empty());
}

TEST(DeviceLibrary, DebugLevelIsTheSpecConstantWithDefaultOne) {
  Module m(library());
  size_t specs = 0;
  for (const Inst& i : m.insts) {
    if (i.opcode != op::SpecConstant)
      continue;
    ++specs;
    auto ids = m.decorations(i.result, decoration::SpecId);
    ASSERT_EQ(ids.size(), 1u);
    EXPECT_EQ(ids[0].word(3), static_cast<uint32_t>(ZEX_SPEC_ID_DEBUG_LEVEL));
    EXPECT_TRUE(m.isInt(i.type, 32));
    EXPECT_EQ(i.word(3), 1u) << "default debug level";
  }
  EXPECT_GE(specs, 1u) << "no OpSpecConstant: the level would be fixed at build time";
}

TEST(DeviceLibrary, ClaimIsOneRelaxedDeviceScopeCompareExchangeOnAGlobalWord) {
  Module m(library());
  const Function* report = m.exported("zex_report_exception");
  ASSERT_NE(report, nullptr);
  ASSERT_EQ(report->count(op::AtomicCompareExchange), 1u);
  for (const Inst& i : report->body) {
    if (i.opcode != op::AtomicCompareExchange)
      continue;
    EXPECT_TRUE(m.isInt(i.type, 32));
    EXPECT_TRUE(m.isPointer(m.def(i.word(3)).type, kStorageCrossWorkgroup)) << "claim word is __global";
    EXPECT_EQ(m.constant(i.word(4)), std::optional<uint64_t>(kScopeDevice)) << "device scope";
    EXPECT_EQ(m.constant(i.word(8)), std::optional<uint64_t>(0)) << "compares with 0 (free)";
  }
  // Losers never spin: no branch in the library goes back to an earlier block, so nothing retries.
  for (const auto& [id, f] : m.functions) {
    std::set<uint32_t> seen;
    for (const Inst& i : f.body) {
      if (i.opcode == op::Label)
        seen.insert(i.result);
      if (i.opcode == op::Branch) {
        EXPECT_FALSE(seen.count(i.word(1))) << "back edge (loop) in the library";
      }
      if (i.opcode == op::BranchConditional) {
        EXPECT_FALSE(seen.count(i.word(2)) || seen.count(i.word(3))) << "back edge (loop) in the library";
      }
    }
  }
}

TEST(DeviceLibrary, UsesNoPrivateMemory) {
  Module m(library());
  for (const auto& [id, f] : m.functions)
    for (const Inst& i : f.body)
      EXPECT_FALSE(i.opcode == op::Variable && i.word(3) == kStorageFunction)
          << "a Function-storage variable in the library is private memory in every kernel";
}

TEST(DeviceLibrary, StatusIsTheLastStoreAfterAFence) {
  Module m(library());
  const Function* signal = m.exported("zex_signal_exception");
  ASSERT_NE(signal, nullptr);
  ASSERT_EQ(signal->count(op::Store), 1u) << "signal writes only the status";
  auto store = std::find_if(signal->body.begin(), signal->body.end(),
                            [](const Inst& i) { return i.opcode == op::Store; });
  auto fence = std::find_if(signal->body.begin(), store,
                            [](const Inst& i) { return i.opcode == op::MemoryBarrier; });
  EXPECT_NE(fence, store) << "no memory barrier before the status store";
  EXPECT_EQ(m.constant(store->word(2)), std::optional<uint64_t>(ZEX_STATUS_THROWN));
}

// ---------------------------------------------------------------------------------------------------
// Specialization: level 0 has no string or frame code, level 1 strings only, level 2 everything.

struct LevelShape {
  size_t reportStores, reportStringsRecorded, frameStores, frameStringsRecorded, abiVersionLoads;
};

LevelShape shapeAt(int level) {
  std::vector<uint32_t> specialized = specialize(library(), level);
  EXPECT_EQ(validate(specialized), "") << "level " << level;
  Module m(specialized);
  for (const Inst& i : m.insts)
    EXPECT_NE(i.opcode, op::SpecConstant) << "level " << level << " left a spec constant";
  const Function* report = m.exported("zex_report_exception");
  const Function* frame = m.exported("zex_report_frame");
  EXPECT_TRUE(report && frame);
  if (!report || !frame)
    return {};
  auto recorded = [](const Function& f, std::set<uint32_t> params) {
    size_t n = 0;
    for (const Inst& i : f.body)
      if (i.opcode == op::ConvertPtrToU && params.count(i.word(3)))
        ++n;
    return n;
  };
  auto abiVersion = m.linked("zex_abi_version", kLinkageExport);
  size_t loads = 0;
  for (const Inst& i : report->body)
    if (i.opcode == op::Load && abiVersion && i.word(3) == *abiVersion) {
      ++loads;
      EXPECT_EQ(i.word(4) & kMemoryOperandVolatile, kMemoryOperandVolatile)
          << "the zex_abi_version load must be volatile or IGC folds it";
    }
  return {report->count(op::Store),
          recorded(*report, {report->params[1].result, report->params[2].result}),
          frame->count(op::Store), recorded(*frame, {frame->params[2].result, frame->params[3].result}),
          loads};
}

TEST(DeviceLibrarySpecialized, Level0HasNoStringOrFrameCode) {
  LevelShape s = shapeAt(0);
  EXPECT_EQ(s.reportStringsRecorded, 0u) << "name/reason still recorded at level 0";
  EXPECT_EQ(s.reportStores, 3u) << "level 0 writes debug_level, launch_id, abi_version";
  EXPECT_EQ(s.frameStores, 0u) << "report_frame still writes at level 0";
  EXPECT_EQ(s.frameStringsRecorded, 0u);
  EXPECT_EQ(s.abiVersionLoads, 0u);
}

TEST(DeviceLibrarySpecialized, Level1RecordsNameAndReasonButNoFrames) {
  LevelShape s = shapeAt(1);
  EXPECT_EQ(s.reportStringsRecorded, 2u);
  EXPECT_EQ(s.reportStores, 7u) << "+ name, reason, value_count, value_kind (a throw without values stores no value)";
  EXPECT_EQ(s.frameStores, 0u);
  EXPECT_EQ(s.abiVersionLoads, 1u) << "level >= 1 must use the exported constant";
}

TEST(DeviceLibrarySpecialized, Level2RecordsIdsAndFrames) {
  LevelShape s = shapeAt(2);
  EXPECT_EQ(s.reportStringsRecorded, 2u);
  EXPECT_EQ(s.reportStores, 7u + 9u) << "+ global, group and local id";
  EXPECT_EQ(s.frameStringsRecorded, 2u) << "function and file";
  EXPECT_EQ(s.frameStores, 4u) << "function, file, line, frame_count";
}

TEST(DeviceLibrarySpecialized, UnspecializedModuleKeepsEverything) {
  // Without specialization the default (1) applies at run time, but no code may be missing: a driver
  // that ignores spec constants still gets a working library.
  Module m(library());
  const Function* frame = m.exported("zex_report_frame");
  ASSERT_NE(frame, nullptr);
  EXPECT_EQ(frame->count(op::Store), 4u);
}

// ---------------------------------------------------------------------------------------------------
// A user module written against <zex/device.h>.

TEST(UserKernel, ImportsTheEntryPointsAndDefinesNone) {
  Module m(userModule());
  // The macros make the one fused call zex_throw (issue 15).
  for (const char* name : {"zex_throw"}) {
    auto id = m.linked(name, kLinkageImport);
    ASSERT_TRUE(id) << name << " must be an Import in the user module";
    const Function& f = m.functions.at(*id);
    EXPECT_TRUE(f.body.empty()) << name << " has a body in the user module";
  }
}

TEST(UserKernel, DoesNotLinkWithoutTheLibrary) {
  LinkResult r = link({userModule()});
  EXPECT_FALSE(r.ok) << "the imports resolved without zex_device.spv";
  EXPECT_NE(r.messages.find("zex_"), std::string::npos) << r.messages;
}

TEST(UserKernel, LinksWithTheLibraryAndValidatesAtEveryLevel) {
  LinkResult r = link({userModule(), library()});
  ASSERT_TRUE(r.ok) << r.messages;
  EXPECT_EQ(validate(r.words), "");
  Module m(r.words);
  std::set<std::string> kernels;
  for (const Inst& i : m.insts)
    if (i.opcode == op::EntryPoint)
      kernels.insert(literalString(i.words, 3));
  EXPECT_EQ(kernels, (std::set<std::string>{"vadd", "safe_sqrt"}));
  for (const char* name : kEntryPoints)
    EXPECT_FALSE(m.linked(name, kLinkageImport)) << name << " left unresolved";
  for (int level = 0; level <= 2; ++level)
    EXPECT_EQ(validate(specialize(r.words, level)), "") << "level " << level;
}

// ZEX_CHECK_BOUNDS / ZEX_THROW pass the strings by address: every string argument is a __constant
// variable of the user's module (this also proves __func__ and __FILE__ are __constant in clang-15's
// OpenCL C), and the frame carries the kernel's name, file and the throwing line.
TEST(UserKernel, ThrowMacrosPassConstantStringsAndTheThrowingLine) {
  Module m(userModule());
  auto throwId = m.linked("zex_throw", kLinkageImport);  // every macro (issue 15)
  ASSERT_TRUE(throwId);

  struct Expect {
    std::string kernel, name, reason, marker;
    bool values;
  };
  const Expect expected[] = {{"vadd", "BoundsError", "Out-of-bounds array access", "marker:bounds", true},
                             {"safe_sqrt", "DomainError", "sqrt of a negative number", "marker:throw", true}};
  std::map<std::string, const Function*> byName;
  for (const Inst& i : m.insts)
    if (i.opcode == op::Name && m.functions.count(i.word(1)) && !m.functions.at(i.word(1)).body.empty())
      byName[literalString(i.words, 2)] = &m.functions.at(i.word(1));

  for (const Expect& e : expected) {
    SCOPED_TRACE(e.kernel);
    ASSERT_TRUE(byName.count(e.kernel));
    const Function& f = *byName[e.kernel];
    std::vector<uint32_t> order;
    for (const Inst& i : f.body) {
      if (i.opcode != op::FunctionCall)
        continue;
      uint32_t callee = i.word(3);
      order.push_back(callee);
      if (callee == *throwId) {
        // zex_throw(state, name, reason, count, kind, a, b, function, file, line): words 4..13.
        ASSERT_EQ(i.words.size(), 14u);
        EXPECT_EQ(m.constantString(i.word(5)), std::optional<std::string>(e.name));
        EXPECT_EQ(m.constantString(i.word(6)), std::optional<std::string>(e.reason));
        EXPECT_EQ(m.constantString(i.word(11)), std::optional<std::string>(e.kernel)) << "__func__";
        auto file = m.constantString(i.word(12));
        ASSERT_TRUE(file);
        EXPECT_NE(file->find("user_kernels.cl"), std::string::npos) << *file;
        EXPECT_EQ(m.constant(i.word(13)), std::optional<uint64_t>(sourceLine(e.marker))) << "__LINE__";
      }
    }
    EXPECT_EQ(order, (std::vector<uint32_t>{*throwId})) << "the cold path is one zex_throw call";
  }
}

// ---------------------------------------------------------------------------------------------------
// A module from another compiler (tests/kernels/device/compiler_style.spvasm, shown in docs/abi.md), at every
// SPIR-V version: spirv-link only links modules of the same version, so a user module is paired with
// zex_device-1.3.spv (1.0-1.3) or zex_device.spv (1.4-1.6) whose version word is set to the user's.

std::string readText(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

spv_target_env universalEnv(int minor) {
  const spv_target_env envs[] = {SPV_ENV_UNIVERSAL_1_0, SPV_ENV_UNIVERSAL_1_1, SPV_ENV_UNIVERSAL_1_2,
                                 SPV_ENV_UNIVERSAL_1_3, SPV_ENV_UNIVERSAL_1_4, SPV_ENV_UNIVERSAL_1_5,
                                 SPV_ENV_UNIVERSAL_1_6};
  return envs[minor];
}

std::vector<uint32_t> compilerStyleModule(int minor) {
  std::string text = readText(ZEX_TEST_COMPILER_STYLE_ASM);
  EXPECT_FALSE(text.empty());
  if (minor < 4) {
    // Before 1.4 an entry point lists only its Input/Output variables.
    const std::string full = "%gid %name %reason %func %file";
    auto at = text.find(full);
    EXPECT_NE(at, std::string::npos);
    if (at != std::string::npos)
      text.replace(at, full.size(), "%gid");
  }
  spvtools::SpirvTools tools(universalEnv(minor));
  std::string messages;
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t& pos,
                               const char* m) { messages += std::to_string(pos.line) + ": " + m + "\n"; });
  std::vector<uint32_t> words;
  EXPECT_TRUE(tools.Assemble(text, &words)) << messages;
  return words;
}

TEST(CompilerStyleModule, IsValidAndImportsTheEntryPoints) {
  std::vector<uint32_t> user = compilerStyleModule(4);
  ASSERT_FALSE(user.empty());
  EXPECT_EQ(validate(user), "");
  Module m(user);
  // A compiler that records no values needs only the three version-1 entry points.
  for (const char* name : {"zex_report_exception", "zex_report_frame", "zex_signal_exception"})
    EXPECT_TRUE(m.linked(name, kLinkageImport)) << name;
}

TEST(CompilerStyleModule, LinksAndValidatesAtEverySpirvVersionWithTheMatchingLibrary) {
  const std::vector<uint32_t> lib13 = readSpirv(ZEX_TEST_DEVICE_SPV_1_3);
  ASSERT_GT(lib13.size(), 5u);
  // llvm-spirv declares the lowest version the module needs, at most the 1.3 it was allowed.
  EXPECT_GE(lib13[1], 0x00010000u);
  EXPECT_LE(lib13[1], 0x00010300u) << "zex_device-1.3.spv must declare SPIR-V 1.3 or lower";
  EXPECT_EQ(library()[1], 0x00010400u) << "zex_device.spv must declare SPIR-V 1.4";
  for (int minor = 0; minor <= 6; ++minor) {
    SCOPED_TRACE("SPIR-V 1." + std::to_string(minor));
    std::vector<uint32_t> user = compilerStyleModule(minor);
    ASSERT_GT(user.size(), 5u);
    ASSERT_EQ(user[1], 0x00010000u | (static_cast<uint32_t>(minor) << 8));
    std::vector<uint32_t> lib = minor < 4 ? lib13 : library();
    lib[1] = user[1];
    EXPECT_EQ(validate(lib, universalEnv(minor)), "") << "the library with its version word set";
    LinkResult r = link({user, lib}, universalEnv(minor));
    ASSERT_TRUE(r.ok) << r.messages;
    EXPECT_EQ(validate(r.words, universalEnv(minor)), "");
    Module m(r.words);
    for (const char* name : kEntryPoints)
      EXPECT_FALSE(m.linked(name, kLinkageImport)) << name << " left unresolved";
  }
}

}  // namespace
