// A kernel's own assert() becomes a KernelException (issue 27 item 5): kernels that import
// __assert_fail (AdaptiveCpp, <assert.h>) or __devicelib_assert_fail (DPC++) and contain no zex code
// (tests/kernels/asserts/asserts.cl, three builds), loaded by zex::Module on zex-cpu through the loader.
// Without zex such a module does not build (the import is resolved by nothing); with zex each failed
// assert is reported with the expression, the frame the call names and the work-item, and the stream
// stays usable.
#include "shared_usm.hpp"
#include "zex_fixture.hpp"

#include <zex/zex.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

using zex_test::expect_kernel_exception;
using zex_test::read_file;

struct Env {
  zex::Context ctx;
  zex::Device dev;
  Env() : ctx(), dev(ctx.device(0)) {}
};
Env& env() {
  static Env* e = new Env();  // never destroyed: see zex_fixture.hpp
  return *e;
}

template <class T>
struct Buffer : zex_test::SharedUsm<T> {
  explicit Buffer(size_t n) : zex_test::SharedUsm<T>(env().ctx, env().dev, n) {}
};

uint32_t line_of(const std::string& marker) {
  std::ifstream f(ZEX_ASSERT_SOURCE);
  std::string line;
  for (uint32_t n = 1; std::getline(f, line); ++n)
    if (line.find("LINE:" + marker) != std::string::npos) return n;
  throw std::runtime_error("no LINE:" + marker);
}

zex::LaunchConfig grid(uint32_t groups, uint32_t group_size = 1, int level = 1) {
  zex::LaunchConfig c;
  c.groups = {groups, 1, 1};
  c.group_size = {group_size, 1, 1};
  c.debug_level = level;
  return c;
}

std::vector<uint8_t> spirv(const std::string& build) {
  return read_file(std::string(ZEX_ASSERT_KERNELS) + "/asserts_" + build + ".spv");
}

// Each build, with and without memory checks (the asserts do not depend on them).
class Asserts : public ::testing::TestWithParam<std::tuple<const char*, bool>> {
 protected:
  static zex::ModuleOptions options() {
    zex::ModuleOptions o;
    o.check_memory = std::get<1>(GetParam());
    return o;
  }
  zex::Module mod{env().dev, spirv(std::get<0>(GetParam())), options()};
  zex::Stream s{env().dev};

  void expect_assertion(const zex::KernelException& e, const std::string& kernel, const std::string& expr,
                        const std::string& function, const std::string& marker) {
    EXPECT_EQ(e.name(), "AssertionError");
    EXPECT_EQ(e.kernel_name(), kernel);
    EXPECT_EQ(e.reason(), expr);
    EXPECT_TRUE(e.values().empty());
    ASSERT_FALSE(e.frames().empty()) << e.what();
    EXPECT_EQ(e.frames()[0].function, function) << e.what();
    EXPECT_EQ(e.frames()[0].line, line_of(marker)) << e.what();
    EXPECT_NE(e.frames()[0].file.find("asserts.cl"), std::string::npos) << e.what();
    ASSERT_TRUE(e.launch_site().has_value());
    EXPECT_NE(e.launch_site()->file.find("asserts_test.cpp"), std::string::npos);
  }
};

INSTANTIATE_TEST_SUITE_P(Builds, Asserts,
                         ::testing::Combine(::testing::Values("O2", "O0", "O0g"), ::testing::Bool()),
                         [](const auto& i) {
                           return std::string(std::get<0>(i.param)) + (std::get<1>(i.param) ? "_checked" : "");
                         });

TEST_P(Asserts, AFailedAssertIsAKernelExceptionAndTheStreamGoesOn) {
  zex::Kernel k = mod.kernel("bounded");
  const uint32_t n = 12, items = 16;
  Buffer<int> out(items);
  s.launch(k, grid(items, 1, 2), out.get(), n, items);
  auto e = expect_kernel_exception([&] { s.synchronize(); });
  expect_assertion(e, "bounded", "i < n", "bounded", "bounded");
  EXPECT_EQ(e.thrower_count(), items - n);
  ASSERT_TRUE(e.global_id().has_value()) << "level 2 names the work-item";
  EXPECT_GE((*e.global_id())[0], n);
  for (uint32_t i = 0; i < n; ++i) EXPECT_EQ(out[i], int(i) + 1) << i;
  for (uint32_t i = n; i < items; ++i) EXPECT_EQ(out[i], 0) << "a failed assert ends the work-item: " << i;
  // The stream stays usable; an assert that holds throws nothing.
  s.launch(k, grid(n), out.get(), n, items);
  EXPECT_NO_THROW(s.synchronize());
  // Level 0 still names the assertion.
  s.launch(k, grid(items, 1, 0), out.get(), n, items);
  auto e0 = expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(e0.name(), "AssertionError");
  EXPECT_EQ(e0.reason(), "i < n");
}

TEST_P(Asserts, AnAssertInAHelperNamesTheHelper) {
  zex::Kernel k = mod.kernel("divide");
  const uint32_t n = 8;
  Buffer<int> out(n), a(n), b(n);
  for (uint32_t i = 0; i < n; ++i) a[i] = int(10 * i), b[i] = i == 5 ? 0 : 2;
  s.launch(k, grid(n), out.get(), a.get(), b.get());
  auto e = expect_kernel_exception([&] { s.synchronize(); });
  expect_assertion(e, "divide", "b != 0", "checked_div", "helper");
  EXPECT_EQ(e.thrower_count(), 1u);
  EXPECT_EQ(out[4], 20);
  EXPECT_EQ(out[6], 30);
}

TEST_P(Asserts, DpcppsDevicelibAssertFailIsReportedWithTheFrameItNames) {
  zex::Kernel k = mod.kernel("dpcpp");
  const uint32_t n = 8;
  Buffer<int> out(n), in(n);
  for (uint32_t i = 0; i < n; ++i) in[i] = i == 3 ? -1 : int(i);
  s.launch(k, grid(n, 1, 2), out.get(), in.get());
  auto e = expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(e.name(), "AssertionError");
  EXPECT_EQ(e.reason(), "x >= 0");
  ASSERT_FALSE(e.frames().empty());
  EXPECT_EQ(e.frames()[0].function, "void sycl_kernel(int *)");
  EXPECT_EQ(e.frames()[0].file, "kernel.cpp");
  EXPECT_EQ(e.frames()[0].line, 42u);
  ASSERT_TRUE(e.global_id().has_value());
  EXPECT_EQ((*e.global_id())[0], 3u);
  EXPECT_EQ(out[2], 4);
  EXPECT_EQ(out[3], 0);
  EXPECT_EQ(out[4], 8);
}

TEST_P(Asserts, AFailedAssertBeforeABarrierLetsTheGroupMeetThere) {
  zex::Kernel k = mod.kernel("before_barrier");
  const uint32_t group = 64;
  Buffer<int> out(2 * group), in(2 * group);
  for (uint32_t i = 0; i < 2 * group; ++i) in[i] = int(i) + 100;
  in[10] = 7;  // one work-item of group 0 fails
  s.launch(k, grid(2, group), out.get(), in.get());
  auto e = expect_kernel_exception([&] { s.synchronize(); });
  expect_assertion(e, "before_barrier", "in[i] != 7", "before_barrier", "barrier");
  EXPECT_EQ(e.thrower_count(), 1u);
  // Group 1 ran whole; in group 0 every item but the thrower reached the barrier and stored.
  for (uint32_t i = group; i < 2 * group; ++i) EXPECT_EQ(out[i], in[group + (i - group + 1) % group]) << i;
  EXPECT_EQ(out[0], in[1]);
  EXPECT_EQ(out[10], 0) << "the thrower does not store";
}

TEST_P(Asserts, AKernelWithoutAssertKeepsItsParameters) {
  zex::Kernel k = mod.kernel("plain");
  EXPECT_EQ(k.argument_count(), std::get<1>(GetParam()) ? 1u + 1u + 1u : 1u)
      << "no zex_state_t is added to a kernel that reaches no assert (check_memory adds one to every kernel)";
  EXPECT_EQ(mod.kernel("bounded").argument_count() - mod.kernel("bounded").hidden_argument_count(), 4u)
      << "out, n, items and the zex_state_t the assert needs";
}

// Without zex, Level Zero refuses the module: the import is resolved by nothing (on zex-cpu as on
// Intel's driver, whose IGC reports the unresolved symbol).
TEST(AssertsRaw, TheDriverAloneRefusesTheModule) {
  const std::vector<uint8_t> spv = spirv("O2");
  ze_module_desc_t d{ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_IL_SPIRV, spv.size(), spv.data(), "", nullptr};
  ze_module_handle_t m = nullptr;
  ze_module_build_log_handle_t log = nullptr;
  const ze_result_t r = zeModuleCreate(env().ctx.handle(), env().dev.handle(), &d, &m, &log);
  EXPECT_NE(r, ZE_RESULT_SUCCESS);
  if (m) zeModuleDestroy(m);
  if (log) zeModuleBuildLogDestroy(log);
}

}  // namespace
