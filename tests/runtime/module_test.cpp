// zex::Module and zex::Kernel (include/zex/module.hpp): validation, linking, lazy per-level builds,
// kernel lookup, argument counts.
#include "zex_fixture.hpp"

#include "spirv/spirv.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using zex_test::env;

TEST(Module, ListsItsKernelsAndBuildsLazily) {
  auto& e = env();
  zex::Module mod(e.dev, zex_test::read_file(zex_test::kernel_spv()));
  const auto& names = mod.kernel_names();
  for (const char* k : {"vadd", "throw_at", "maybe_throw", "noop", "group_sum"})
    EXPECT_NE(std::find(names.begin(), names.end(), k), names.end()) << k;
  EXPECT_EQ(mod.kernel("vadd").name(), "vadd");
  // The linked module carries the device library.
  std::vector<uint32_t> user = zex::detail::spirv_words(zex_test::read_file(zex_test::kernel_spv()).data(),
                                                        zex_test::read_file(zex_test::kernel_spv()).size());
  EXPECT_GT(mod.spirv().size(), user.size());
  // Each level is its own driver module, built on demand.
  ze_module_handle_t m0 = mod.handle(0), m2 = mod.handle(2);
  EXPECT_NE(m0, nullptr);
  EXPECT_NE(m2, nullptr);
  EXPECT_NE(m0, m2);
  EXPECT_EQ(mod.handle(0), m0);  // cached
  EXPECT_THROW(mod.handle(3), std::invalid_argument);
}

// Built-in variables imported by both the user module and the device library end up once each in
// the linked module (the LLVM SPIR-V translator cannot read duplicates).
TEST(Module, LinkedModuleHasOneVariablePerBuiltIn) {
  const auto& w = env().mod.spirv();
  std::vector<uint32_t> builtins;
  for (size_t i = 5; i < w.size();) {
    const uint32_t n = w[i] >> 16, op = w[i] & 0xffff;
    ASSERT_GT(n, 0u);
    if (op == 71 && n == 4 && w[i + 2] == 11) builtins.push_back(w[i + 3]);  // OpDecorate .. BuiltIn b
    i += n;
  }
  EXPECT_FALSE(builtins.empty());
  std::sort(builtins.begin(), builtins.end());
  EXPECT_EQ(std::adjacent_find(builtins.begin(), builtins.end()), builtins.end()) << "a built-in is declared twice";
}

TEST(Module, Spirv10ModulesGetTheSpirv13Library) {
  auto& e = env();
  zex::Module mod(e.dev, zex_test::read_file(ZEX_TEST_KERNEL_SPV_1_0));
  EXPECT_EQ(zex::detail::spirv_words(zex_test::read_file(ZEX_TEST_KERNEL_SPV_1_0).data(), 8)[1], 0x00010000u);
  EXPECT_LE(mod.spirv()[1], 0x00010300u) << "linking must keep an old module at SPIR-V <= 1.3";
  zex::Kernel k10 = mod.kernel("throw_at");
  zex::Stream s(e.dev);
  zex_test::Usm<int> out(16);
  s.launch(k10, zex_test::cfg1d(1, 16, 2), out.get(), uint32_t(3), uint32_t(0));
  auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(ex.name(), "DomainError");
  EXPECT_EQ((*ex.global_id())[0], 3u);
  EXPECT_EQ(ex.frames().at(0).function, "throw_at");
}

TEST(Module, AcceptsWordsAndBytes) {
  auto& e = env();
  auto bytes = zex_test::read_file(zex_test::kernel_spv());
  std::vector<uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), bytes.size());
  zex::Module a(e.dev, words);
  std::vector<char> chars(bytes.begin(), bytes.end());
  zex::Module b(e.dev, chars);
  EXPECT_EQ(a.kernel_names(), b.kernel_names());
}

TEST(Module, BuildsEachLevelOnceUnderConcurrency) {
  auto& e = env();
  zex::Module mod(e.dev, zex_test::read_file(zex_test::kernel_spv()));
  std::vector<ze_module_handle_t> got(4);
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; ++i) ts.emplace_back([&, i] { got[i] = mod.handle(1); });
  for (auto& t : ts) t.join();
  for (auto h : got) EXPECT_EQ(h, got[0]);
}

TEST(Module, RejectsBytesThatAreNotSpirv) {
  auto& e = env();
  std::vector<uint8_t> text = {'_', '_', 'k', 'e', 'r', 'n', 'e', 'l', ' ', 'v', 'o', 'i'};
  try {
    zex::Module m(e.dev, text);
    FAIL();
  } catch (const std::invalid_argument& ex) {
    EXPECT_NE(std::string(ex.what()).find("not a SPIR-V binary"), std::string::npos) << ex.what();
  }
  std::vector<uint8_t> odd(13, 0);
  try {
    zex::Module m(e.dev, odd);
    FAIL();
  } catch (const std::invalid_argument& ex) {
    EXPECT_NE(std::string(ex.what()).find("not a multiple of 4"), std::string::npos) << ex.what();
  }
  EXPECT_THROW(zex::Module(e.dev, std::vector<uint8_t>{}), std::invalid_argument);
}

TEST(Module, InvalidSpirvGivesTheValidatorsDiagnostic) {
  auto& e = env();
  auto bytes = zex_test::read_file(zex_test::kernel_spv());
  std::vector<uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), bytes.size());
  // Truncate in the middle of the instruction stream: the header is fine, the body is not.
  words.resize(words.size() / 2);
  try {
    zex::Module m(e.dev, words);
    FAIL() << "a truncated module was accepted";
  } catch (const std::invalid_argument& ex) {
    std::string w = ex.what();
    EXPECT_NE(w.find("is invalid; SPIRV-Tools says:"), std::string::npos) << w;
    EXPECT_NE(w.find("error"), std::string::npos) << w;
  }
}

TEST(Module, UnknownKernelNamesTheKernelAndListsTheModules) {
  auto& e = env();
  try {
    e.mod.kernel("vad");
    FAIL();
  } catch (const std::invalid_argument& ex) {
    std::string w = ex.what();
    EXPECT_NE(w.find("no kernel named 'vad'"), std::string::npos) << w;
    EXPECT_NE(w.find("'vadd'"), std::string::npos) << w;
    EXPECT_NE(w.find("'noop'"), std::string::npos) << w;
  }
}

TEST(Module, WrongArgumentCountSaysWhichKernelExpectedHowMany) {
  auto& e = env();
  zex::Kernel vadd = e.mod.kernel("vadd");
  zex::Stream s(e.dev);
  zex_test::Usm<float> c(4);
  EXPECT_EQ(vadd.argument_count(1), 5u);
  try {
    s.launch(vadd, zex_test::cfg1d(1, 4), c.get(), c.get(), uint32_t(4));
    FAIL();
  } catch (const std::invalid_argument& ex) {
    EXPECT_STREQ(ex.what(),
                 "zex: kernel 'vadd' expects 4 argument(s) plus the trailing zex_state_t (5 parameters in "
                 "all), but the launch passed 3 argument(s)");
  }
  // Nothing was appended: the stream is still clean.
  EXPECT_NO_THROW(s.synchronize());
}

// A kernel that was not written for zex is named as such, not blamed on the caller's C++ types: the
// module's SPIR-V says whether the last parameter is a zex_state_t.
TEST(Module, AKernelWithoutATrailingStateIsNamedAtLaunch) {
  auto& e = env();
  zex::Stream s(e.dev);
  zex_test::Usm<int> out(1);
  for (const char* name : {"no_state", "state_not_last"}) {
    zex::Kernel k = e.mod.kernel(name);
    try {
      if (std::string(name) == "no_state")
        s.launch(k, zex_test::cfg1d(1, 1), out.get());
      else
        s.launch(k, zex_test::cfg1d(1, 1), uint32_t(4));
      FAIL() << name << " was launched";
    } catch (const std::invalid_argument& ex) {
      EXPECT_EQ(std::string(ex.what()).rfind("zex: kernel '" + std::string(name) +
                                                 "' does not take a zex_state_t as its last parameter (it has ",
                                             0),
                0u)
          << ex.what();
    }
  }
  // Nothing was appended: the stream is still clean, and zex kernels still launch.
  EXPECT_NO_THROW(s.synchronize());
  zex::Kernel noop = e.mod.kernel("noop");
  s.launch(noop, zex_test::cfg1d(1, 1));
  EXPECT_NO_THROW(s.synchronize());
}

TEST(Module, ScalarsAreConvertedToTheParametersWidthWhenTheyFit) {
  auto& e = env();
  zex::Kernel vadd = e.mod.kernel("vadd");
  zex::Stream s(e.dev);
  zex_test::Usm<float> a(8), b(8), c(8);
  for (int i = 0; i < 8; ++i) {
    a[i] = float(i);
    b[i] = 1.0f;
  }
  // n is a uint in the kernel; a size_t that fits is passed as one, as a C call would.
  const size_t n = 6;
  s.launch(vadd, zex_test::cfg1d(1, 6, 1), c.get(), a.get(), b.get(), n);
  EXPECT_NO_THROW(s.synchronize());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(c[i], float(i) + 1.0f);
  // One that does not fit is refused, naming the argument, the kernel, the value and both types.
  try {
    s.launch(vadd, zex_test::cfg1d(1, 4), c.get(), a.get(), b.get(), uint64_t(1) << 40);
    FAIL();
  } catch (const std::invalid_argument& ex) {
    EXPECT_STREQ(ex.what(),
                 "zex: argument 3 of kernel 'vadd' is a 64-bit unsigned integer whose value 1099511627776 does not "
                 "fit the kernel's parameter 3, a 32-bit integer (uint or int)");
  }
  // A struct of the wrong size is never converted.
  struct Big {
    uint64_t a, b;
  };
  EXPECT_THROW(s.launch(vadd, zex_test::cfg1d(1, 4), c.get(), a.get(), b.get(), Big{1, 2}), zex::ZeError);
}

// A scalar is checked against its parameter's type in the SPIR-V (issue "Reliability", item 4): before,
// a double for a uint arrived as the bits of a float, since the driver only sees sizes.
TEST(Module, ScalarsOfTheWrongTypeAreRefusedNamingBothTypes) {
  auto& e = env();
  zex::Kernel vadd = e.mod.kernel("vadd");
  zex::Stream s(e.dev);
  zex_test::Usm<float> a(8), b(8), c(8);
  const uint64_t next = s.next_launch_id();
  auto refused = [&](auto n) {
    try {
      s.launch(vadd, zex_test::cfg1d(1, 4), c.get(), a.get(), b.get(), n);
    } catch (const std::invalid_argument& ex) {
      return std::string(ex.what());
    }
    return std::string("(launched)");
  };
  EXPECT_EQ(refused(1.5),
            "zex: argument 3 of kernel 'vadd' is a double, but the kernel's parameter 3 is a 32-bit integer (uint "
            "or int): pass an integer");
  EXPECT_EQ(refused(1.5f),
            "zex: argument 3 of kernel 'vadd' is a float, but the kernel's parameter 3 is a 32-bit integer (uint "
            "or int): pass an integer");
  EXPECT_EQ(refused(-(int64_t(1) << 40)),
            "zex: argument 3 of kernel 'vadd' is a 64-bit signed integer whose value -1099511627776 does not fit "
            "the kernel's parameter 3, a 32-bit integer (uint or int)");
  // Nothing was appended: the stream stays usable, and the next launch is the next id.
  EXPECT_EQ(s.next_launch_id(), next);
  EXPECT_NO_THROW(s.synchronize());
  for (int i = 0; i < 8; ++i) {
    a[i] = float(i);
    b[i] = 2.0f;
  }
  s.launch(vadd, zex_test::cfg1d(1, 8), c.get(), a.get(), b.get(), 8u);
  EXPECT_NO_THROW(s.synchronize());
  for (int i = 0; i < 8; ++i) EXPECT_EQ(c[i], float(i) + 2.0f);
}

TEST(Module, ScalarsConvertWithinTheirClassWhenTheyFit) {
  auto& e = env();
  zex::Kernel k = e.mod.kernel("scalars");
  zex::Stream s(e.dev);
  zex_test::Usm<float> f(1);
  zex_test::Usm<uint64_t> u(3);
  // Exact types: the fast path.
  s.launch(k, zex_test::cfg1d(1, 1), f.get(), u.get(), 2.5f, 7u, uint64_t(1) << 40, uint8_t(200));
  s.synchronize();
  EXPECT_EQ(f[0], 2.5f);
  EXPECT_EQ(u[0], 7u);
  EXPECT_EQ(u[1], uint64_t(1) << 40);
  EXPECT_EQ(u[2], 200u);
  // Other widths whose values fit: a double for the float, an int64 for the uint, an int for the ulong
  // (widened) and for the uchar (narrowed).
  s.launch(k, zex_test::cfg1d(1, 1), f.get(), u.get(), 0.25, int64_t(4000000000), -1, 255);
  s.synchronize();
  EXPECT_EQ(f[0], 0.25f);
  EXPECT_EQ(u[0], 4000000000u);
  EXPECT_EQ(u[1], UINT64_MAX);  // -1 sign-extended, as a C call to a long parameter would
  EXPECT_EQ(u[2], 255u);
  // No silent int-to-float or float-to-int, and no narrowing that loses the value.
  auto refused = [&](auto fv, auto uv, auto cv) {
    try {
      s.launch(k, zex_test::cfg1d(1, 1), f.get(), u.get(), fv, uv, uint64_t(0), cv);
    } catch (const std::invalid_argument& ex) {
      return std::string(ex.what());
    }
    return std::string("(launched)");
  };
  EXPECT_EQ(refused(3u, 1u, uint8_t(0)),
            "zex: argument 2 of kernel 'scalars' is a 32-bit unsigned integer, but the kernel's parameter 2 is a "
            "32-bit float (float): pass a float or a double");
  EXPECT_EQ(refused(1.0f, 1.0, uint8_t(0)),
            "zex: argument 3 of kernel 'scalars' is a double, but the kernel's parameter 3 is a 32-bit integer "
            "(uint or int): pass an integer");
  EXPECT_EQ(refused(1.0f, 1u, 256),
            "zex: argument 5 of kernel 'scalars' is a 32-bit signed integer whose value 256 does not fit the "
            "kernel's parameter 5, an 8-bit integer (uchar or char)");
  // The stream stays usable after each refusal, and the last launch's values are untouched.
  EXPECT_NO_THROW(s.synchronize());
  EXPECT_EQ(u[0], 4000000000u);
  s.launch(k, zex_test::cfg1d(1, 1), f.get(), u.get(), 1.0f, 1u, uint64_t(2), uint8_t(3));
  EXPECT_NO_THROW(s.synchronize());
  EXPECT_EQ(u[1], 2u);
}

TEST(Module, ParameterKindsComeFromTheSpirv) {
  namespace pk = zex::detail::param_kind;
  auto kinds = zex::detail::spirv_kernel_param_kinds(env().mod.spirv());
  // The trailing zex_state_t is a by-value struct: a ByVal Function pointer from llvm-spirv.
  EXPECT_EQ(kinds["vadd"], (std::vector<uint8_t>{pk::kPointer, pk::kPointer, pk::kPointer, pk::kInt | 4, pk::kAggregate}));
  EXPECT_EQ(kinds["scalars"], (std::vector<uint8_t>{pk::kPointer, pk::kPointer, pk::kFloat | 4, pk::kInt | 4,
                                                    pk::kInt | 8, pk::kInt | 1, pk::kAggregate}));
}

TEST(Module, AFileNameInsteadOfSpirvIsExplained) {
  auto& e = env();
  try {
    zex::Module m(e.dev, std::string("kernels/vadd.spv"));
    FAIL();
  } catch (const std::invalid_argument& ex) {
    EXPECT_NE(std::string(ex.what()).find("looks like a file name"), std::string::npos) << ex.what();
  }
  auto bytes = zex_test::read_file(zex_test::kernel_spv());
  zex::Module ok(e.dev, std::string(bytes.begin(), bytes.end()));
  EXPECT_FALSE(ok.kernel_names().empty());
}

TEST(ModuleMoves, MoveConstructAssignSelfMoveAndDestroyMovedFrom) {
  auto& e = env();
  zex::Module a(e.dev, zex_test::read_file(zex_test::kernel_spv()));
  zex::Module b(std::move(a));
  EXPECT_THROW(a.kernel("noop"), std::logic_error);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(b.kernel("noop").name(), "noop");
  zex::Module c(e.dev, zex_test::read_file(zex_test::kernel_spv()));
  c = std::move(b);
  EXPECT_THROW(b.kernel_names(), std::logic_error);  // NOLINT(bugprone-use-after-move)
  zex_test::self_move(c);
  zex::Kernel k = c.kernel("noop");
  zex::Stream s(e.dev);
  s.launch(k, zex_test::cfg1d(1, 1));
  s.synchronize();
}

TEST(KernelMoves, MoveConstructAssignSelfMoveAndDestroyMovedFrom) {
  auto& e = env();
  zex::Kernel a = e.mod.kernel("noop");
  zex::Kernel b(std::move(a));
  EXPECT_THROW(a.name(), std::logic_error);  // NOLINT(bugprone-use-after-move)
  zex::Kernel c = e.mod.kernel("vadd");
  c = std::move(b);
  EXPECT_EQ(c.name(), "noop");
  zex_test::self_move(c);
  EXPECT_EQ(c.name(), "noop");
  zex::Stream s(e.dev);
  s.launch(c, zex_test::cfg1d(1, 1));
  s.synchronize();
  EXPECT_THROW(s.launch(b, zex_test::cfg1d(1, 1)), std::logic_error);  // NOLINT(bugprone-use-after-move)
}

TEST(Kernel, OutlivesItsModuleObject) {
  auto& e = env();
  zex::Kernel k = [&] {
    zex::Module m(e.dev, zex_test::read_file(zex_test::kernel_spv()));
    return m.kernel("noop");
  }();
  zex::Stream s(e.dev);
  s.launch(k, zex_test::cfg1d(2, 1));
  s.synchronize();
}

namespace {
// Number of OpFunctionCall instructions in `w` whose callee is named `callee` (OpName).
size_t calls_to(const std::vector<uint32_t>& w, const std::string& callee) {
  std::vector<uint32_t> ids;
  for (size_t i = 5; i < w.size() && (w[i] >> 16) > 0; i += w[i] >> 16)
    if ((w[i] & 0xffff) == 5 /* OpName */ && callee == reinterpret_cast<const char*>(&w[i + 2])) ids.push_back(w[i + 1]);
  size_t n = 0;
  for (size_t i = 5; i < w.size() && (w[i] >> 16) > 0; i += w[i] >> 16)
    if ((w[i] & 0xffff) == 57 /* OpFunctionCall */ && std::count(ids.begin(), ids.end(), w[i + 3])) ++n;
  return n;
}
}  // namespace

// zex::Module gives each kernel one shared throw block (Intel's compiler would otherwise inline the
// cold path once per site: docs/benchmarks-igc.md), and the report still names the site that threw.
TEST(Module, MergedThrowSitesStillReportTheFailingSite) {
  auto& e = env();
  const auto bytes = zex_test::read_file(zex_test::kernel_spv());
  const auto user = zex::detail::spirv_words(bytes.data(), bytes.size());
  // The macros call zex_throw (issue 15): that is where the sites are.
  const size_t before = calls_to(user, "zex_throw");
  ASSERT_GE(before, 2u);
  EXPECT_LT(calls_to(e.mod.spirv(), "zex_throw"), before);

  zex::Kernel k = e.mod.kernel("two_sites");
  zex::Stream s(e.dev);
  zex_test::Usm<int> out(64);
  zex::LaunchConfig cfg;
  cfg.groups = {1, 1, 1};
  cfg.group_size = {64, 1, 1};
  cfg.debug_level = 2;
  struct Case { uint32_t n, m; const char* name; const char* reason; const char* marker; };
  for (const Case& c : {Case{10, 64, "BoundsError", "first check", "two_sites_a"},
                        Case{64, 20, "DomainError", "second check", "two_sites_b"}}) {
    s.launch(k, cfg, out.get(), c.n, c.m);
    auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
    EXPECT_EQ(ex.name(), c.name);
    EXPECT_EQ(ex.reason(), c.reason);
    ASSERT_EQ(ex.frames().size(), 1u);
    EXPECT_EQ(ex.frames()[0].function, "two_sites");
    EXPECT_EQ(ex.frames()[0].line, zex_test::line_of(c.marker));
  }
  s.launch(k, cfg, out.get(), 64u, 64u);
  EXPECT_NO_THROW(s.synchronize());
}

// The fused entry point zex_throw (issue 15): one call records what the three calls of ZEX_THROW_VALUES
// record, at every level; losers count but write nothing.
TEST(Module, FusedThrowEntryPointReportsLikeTheThreeCalls) {
  auto& e = env();
  zex::Kernel k = e.mod.kernel("fused_throw");
  zex::Stream s(e.dev);
  zex_test::Usm<int> out(64);
  for (uint32_t level : {0u, 1u, 2u}) {
    zex::LaunchConfig cfg;
    cfg.groups = {1, 1, 1};
    cfg.group_size = {64, 1, 1};
    cfg.debug_level = level;
    s.launch(k, cfg, out.get(), 60u);
    auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
    SCOPED_TRACE(level);
    // zex numbers this zex_throw (issue 15): name, reason and frame come from the module's table at
    // every level, values and the count from level 1.
    EXPECT_EQ(ex.name(), "BoundsError");
    EXPECT_EQ(ex.reason(), "fused entry point");
    ASSERT_EQ(ex.frames().size(), 1u);
    EXPECT_EQ(ex.frames()[0].function, "fused_throw");
    EXPECT_EQ(ex.frames()[0].line, zex_test::line_of("fused_throw"));
    if (level == 0) {
      EXPECT_TRUE(ex.values().empty());
      continue;
    }
    ASSERT_EQ(ex.values().size(), 2u);
    EXPECT_GE(ex.values()[0], 60u);
    EXPECT_EQ(ex.values()[1], 60u);
    EXPECT_EQ(ex.thrower_count(), 4u);
    EXPECT_EQ(ex.global_id().has_value(), level == 2);
  }
  zex::LaunchConfig cfg;
  cfg.groups = {1, 1, 1};
  cfg.group_size = {64, 1, 1};
  s.launch(k, cfg, out.get(), 64u);
  EXPECT_NO_THROW(s.synchronize());
}

// zex_throw_site (ABI version 3) called directly, on zex-cpu: what lands at each level. No table
// numbers site 7 (the kernel calls the entry point itself), so the host says so instead of a name.
TEST(Module, ThrowSiteEntryPointWritesTheSiteValuesAndIdsByLevel) {
  auto& e = env();
  zex::Module mod(e.dev, zex_test::read_file(ZEX_TEST_SITE_KERNEL_SPV));
  zex::Kernel k = mod.kernel("throw_site_direct");
  zex::Stream s(e.dev);
  for (uint32_t level : {0u, 1u, 2u}) {
    SCOPED_TRACE(level);
    zex::LaunchConfig cfg;
    cfg.groups = {1, 1, 1};
    cfg.group_size = {64, 1, 1};
    cfg.debug_level = level;
    s.launch(k, cfg, 61u);
    auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
    EXPECT_EQ(ex.debug_level(), static_cast<int>(level));
    EXPECT_EQ(ex.abi_version(), ZEX_ABI_VERSION);
    EXPECT_EQ(ex.name(), "");
    EXPECT_TRUE(ex.frames().empty());
    const std::string what = ex.what();
    // The site is stored at every level (with the level in its top bits): level 0 says which site.
    EXPECT_EQ(ex.reason(), "unknown throw site 7 (the module numbered none)");
    if (level == 0) {
      EXPECT_TRUE(ex.values().empty());
      EXPECT_EQ(ex.thrower_count(), 1u);
      continue;
    }
    EXPECT_NE(what.find("An exception was thrown in kernel 'throw_site_direct'"), std::string::npos) << what;
    EXPECT_NE(what.find(": unknown throw site 7 (the module numbered none): values "), std::string::npos) << what;
    ASSERT_EQ(ex.values().size(), 2u);
    EXPECT_GE(ex.values()[0], 61u);
    EXPECT_EQ(ex.values()[1], 0xABCDu);
    EXPECT_EQ(ex.thrower_count(), 3u);
    if (level == 2) {
      ASSERT_TRUE(ex.global_id().has_value());
      EXPECT_EQ((*ex.global_id())[0], ex.values()[0]) << "the ids are the claimant's";
      // The device stores the global id only; the stream derives these from its group size (64).
      ASSERT_TRUE(ex.local_id().has_value());
      EXPECT_EQ((*ex.local_id())[0], ex.values()[0]);
      ASSERT_TRUE(ex.group_id().has_value());
      EXPECT_EQ((*ex.group_id())[0], 0u);
    } else {
      EXPECT_FALSE(ex.global_id().has_value());
    }
  }
  zex::LaunchConfig cfg;
  cfg.groups = {1, 1, 1};
  cfg.group_size = {64, 1, 1};
  s.launch(k, cfg, 64u);
  EXPECT_NO_THROW(s.synchronize());
}
