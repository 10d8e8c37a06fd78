// zex's memory checks end to end (issue 27): kernels with no zex code (tests/kernels/memory/
// memory_bugs.cl, three builds) loaded with ModuleOptions{check_memory} on zex-cpu through the loader.
// Each bug must be caught before the access happens, with the argument's name, the byte offset, the
// allocation's size and (with -g) the line; in-bounds launches must give the unchecked module's results
// bit for bit; a pointer loaded from memory is counted, not reported. Under ZEX_CPU_GUARD_PAGES=1 (CTest
// zex_memory_checks_guard_pages) an access the check missed would kill the process.
#include "shared_usm.hpp"
#include "zex_fixture.hpp"

#include <zex/zex.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

using zex_test::expect_kernel_exception;
using zex_test::read_file;
using zex_test::ScopedEnv;

struct Env {
  zex::Context ctx;
  zex::Device dev;
  Env() : ctx(), dev(ctx.device(0)) {}
};
Env& env() {
  static Env* e = new Env();  // never destroyed: see zex_fixture.hpp
  return *e;
}

bool guarded() {
  const char* g = std::getenv("ZEX_CPU_GUARD_PAGES");
  return g && std::string(g) == "1";
}

template <class T>
struct Buffer : zex_test::SharedUsm<T> {
  explicit Buffer(size_t n) : zex_test::SharedUsm<T>(env().ctx, env().dev, n) {}
};

uint32_t line_of(const std::string& marker) {
  std::ifstream f(ZEX_MEMORY_SOURCE);
  std::string line;
  for (uint32_t n = 1; std::getline(f, line); ++n)
    if (line.find("LINE:" + marker) != std::string::npos) return n;
  throw std::runtime_error("no LINE:" + marker);
}

zex::LaunchConfig grid(uint32_t x, uint32_t y = 1, int level = 1) {
  zex::LaunchConfig c;
  c.groups = {x, y, 1};
  c.group_size = {1, 1, 1};
  c.debug_level = level;
  return c;
}

std::vector<uint8_t> spirv(const std::string& build) {
  return read_file(std::string(ZEX_MEMORY_KERNELS) + "/memory_bugs_" + build + ".spv");
}

class Builds : public ::testing::TestWithParam<const char*> {
 protected:
  static zex::ModuleOptions checked() {
    zex::ModuleOptions o;
    o.check_memory = true;
    return o;
  }
  bool debug() const { return std::string(GetParam()) == "O0g"; }
  zex::Module mod{env().dev, spirv(GetParam()), checked()};
  zex::Stream s{env().dev};

  // The report of an out-of-bounds access: its name, the values, the message, the line (with -g).
  void expect_report(const zex::KernelException& e, const std::string& kernel, const std::string& what,
                     uint64_t offset, uint64_t size, const std::string& marker) {
    EXPECT_EQ(e.name(), "OutOfBoundsAccess");
    EXPECT_EQ(e.kernel_name(), kernel);
    EXPECT_EQ(e.info().value_kind, uint32_t{ZEX_VALUES_MEMORY});
    EXPECT_EQ(e.values(), (std::vector<uint64_t>{offset, size}));
    const std::string at = offset >= (uint64_t(1) << 63) ? "-" + std::to_string(uint64_t(0) - offset) + " (before the start)"
                                                         : std::to_string(offset);
    const std::string text = what + " at byte offset " + at + " of an allocation of " + std::to_string(size) + " bytes";
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    ASSERT_FALSE(e.frames().empty()) << e.what();
    if (debug()) {
      EXPECT_EQ(e.frames()[0].line, line_of(marker)) << e.what();
      EXPECT_NE(e.frames()[0].file.find("memory_bugs.cl"), std::string::npos) << e.what();
    }
    ASSERT_TRUE(e.launch_site().has_value());
    EXPECT_NE(e.launch_site()->file.find("memory_checks_test.cpp"), std::string::npos);
  }
};

INSTANTIATE_TEST_SUITE_P(Memory, Builds, ::testing::Values("O2", "O0", "O0g"));

TEST_P(Builds, TheModuleSaysWhatItChecks) {
  const zex::MemoryCheckCounts& c = mod.memory_checks();
  EXPECT_TRUE(c.enabled);
  EXPECT_GE(c.checked, 9u);  // stencil 4, transpose 2, prefix 1, copy2 2, histogram 2, helper 1, loaded 1
  EXPECT_GE(c.loaded, 1u) << "loaded's store goes through a pointer read from memory";
  EXPECT_LE(c.merged, c.checked);
  if (std::string(GetParam()) == "O2") {
    EXPECT_GE(c.merged, 4u) << "stencil's and window's reads off one index: two of each three share the first's check";
  }
  zex::Kernel k = mod.kernel("stencil");
  EXPECT_EQ(k.hidden_argument_count(), 1u) << "one struct: base and end of out and in";
  EXPECT_EQ(k.argument_count(), 3u + 1u + 1u);
  EXPECT_EQ(k.checked_arguments(), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(mod.kernel("loaded").hidden_argument_count(), 1u) << "the table itself is checked";
  zex::Module plain(env().dev, spirv(GetParam()));
  EXPECT_FALSE(plain.memory_checks().enabled);
  EXPECT_EQ(plain.memory_checks().checked, 0u);
}

TEST_P(Builds, AStencilPastTheEndIsCaughtAtTheRead) {
  zex::Kernel k = mod.kernel("stencil");
  const uint32_t n = 64;
  Buffer<float> in(n), out(n);
  for (uint32_t i = 0; i < n; ++i) in[i] = float(i);
  s.launch(k, grid(n), out.get(), in.get(), n);  // i = n - 1 reads in[n]
  auto e = expect_kernel_exception([&] { s.synchronize(); });
  expect_report(e, "stencil", "read of argument 'in'", n * 4, n * 4, "stencil");
  EXPECT_EQ(e.thrower_count(), 1u);
  EXPECT_EQ(out[n - 1], 0.0f) << "the throwing work-item does not store";
  EXPECT_EQ(out[n - 2], float(3 * (n - 2))) << "the others ran";
  // The stream stays usable; in bounds nothing is thrown.
  s.launch(k, grid(n - 1), out.get(), in.get(), n);
  EXPECT_NO_THROW(s.synchronize());
}

// window's three reads off one index (in[i + 2], in[i - 2], in[i]): on -O2 one check covers them all
// (add_memory_checks' groups); each failure is still reported as its own access's check reports it, the
// first in program order when several fail.
TEST_P(Builds, ReadsOffOneIndexShareACheckAndEachFailureIsItsOwn) {
  zex::Kernel k = mod.kernel("window");
  const uint32_t n = 32;
  Buffer<float> in(n), out(n);
  auto fill = [&] {
    for (uint32_t i = 0; i < n; ++i) in[i] = float(i % 5), out[i] = -1.0f;
  };
  fill();
  s.launch(k, grid(n), out.get(), in.get(), 2u, n - 2);  // every read in bounds
  ASSERT_NO_THROW(s.synchronize());
  for (uint32_t i = 0; i < n; ++i) {
    const float want = i >= 2 && i < n - 2 ? in[i + 2] * 4.0f - in[i - 2] + in[i] : -1.0f;
    EXPECT_EQ(out[i], want) << i;
  }
  // i = n - 2 reads in[n]: only the greatest index fails.
  fill();
  s.launch(k, grid(n), out.get(), in.get(), 2u, n - 1);
  auto past = expect_kernel_exception([&] { s.synchronize(); });
  expect_report(past, "window", "read of argument 'in'", n * 4, n * 4, "window");
  EXPECT_EQ(past.thrower_count(), 1u);
  EXPECT_EQ(out[n - 2], -1.0f) << "the thrower does not store";
  EXPECT_EQ(out[n - 3], in[n - 1] * 4.0f - in[n - 5] + in[n - 3]) << "the others ran";
  // i = 0 reads in[-2]: only the least index fails, 8 bytes before the start.
  s.launch(k, grid(1), out.get(), in.get(), 0u, 1u);
  auto before = expect_kernel_exception([&] { s.synchronize(); });
  expect_report(before, "window", "read of argument 'in'", uint64_t(0) - 8, n * 4, "window");
  EXPECT_NE(std::string(before.what()).find("at byte offset -8 (before the start) of an allocation of"), std::string::npos)
      << before.what();
  // In an allocation of two floats, i = 0 reads in[2] and in[-2]: both fail, the first read is reported.
  Buffer<float> two(2);
  two[0] = two[1] = 1.0f;
  s.launch(k, grid(1), out.get(), two.get(), 0u, 1u);
  auto both = expect_kernel_exception([&] { s.synchronize(); });
  expect_report(both, "window", "read of argument 'in'", 8, 8, "window");
  // The stream stays usable.
  fill();
  s.launch(k, grid(n), out.get(), in.get(), 2u, n - 2);
  EXPECT_NO_THROW(s.synchronize());
}

// A group never reaches across another check: interleaved's write through `out` between its reads of
// in[c] and in[c + 1] is reported when it fails first (a group of the two reads would report in[n]).
TEST_P(Builds, AGroupDoesNotOvertakeTheCheckBetweenItsMembers) {
  zex::Kernel k = mod.kernel("interleaved");
  const uint32_t n = 16;
  Buffer<float> in(n), out(n - 1);
  for (uint32_t i = 0; i < n; ++i) in[i] = float(i);
  s.launch(k, grid(n), out.get(), in.get());  // c = n - 1 writes out[n - 1], then would read in[n]
  auto e = expect_kernel_exception([&] { s.synchronize(); });
  expect_report(e, "interleaved", "write of argument 'out'", (n - 1) * 4, (n - 1) * 4, "interleaved");
  EXPECT_EQ(e.thrower_count(), 1u);
  EXPECT_EQ(out[n - 2], float(2 * n - 3)) << "the others ran";
}

TEST_P(Builds, ATransposedIndexIsCaughtAtTheWrite) {
  zex::Kernel k = mod.kernel("transpose");
  const uint32_t rows = 4, cols = 8;
  Buffer<float> in(rows * cols), out(rows * cols);
  s.launch(k, grid(cols, rows), out.get(), in.get(), rows, cols);
  auto e = expect_kernel_exception([&] { s.synchronize(); });
  // x * cols + y reaches (cols - 1) * cols + rows - 1 = 59 > 31: every x >= 4 throws.
  ASSERT_EQ(e.values().size(), 2u);
  EXPECT_GE(e.values()[0], uint64_t{rows * cols * 4});
  EXPECT_EQ(e.values()[0] % 4, 0u);
  expect_report(e, "transpose", "write of argument 'out'", e.values()[0], rows * cols * 4, "transpose");
  EXPECT_EQ(e.thrower_count(), 16u) << "x in 4..7, y in 0..3";
}

TEST_P(Builds, AnOffByOneLoopIsCaughtAtItsLastStore) {
  zex::Kernel k = mod.kernel("prefix");
  const uint32_t n = 16;
  Buffer<int> out(n);
  s.launch(k, grid(1), out.get(), n);
  auto e = expect_kernel_exception([&] { s.synchronize(); });
  expect_report(e, "prefix", "write of argument 'out'", n * 4, n * 4, "prefix");
  EXPECT_EQ(out[n - 1], int((n - 1) * n / 2)) << "every store before it happened";
}

TEST_P(Builds, TheSecondPointerArgumentIsNamed) {
  zex::Kernel k = mod.kernel("copy2");
  const uint32_t n = 32;
  Buffer<int> src(n), dst(n - 1);
  s.launch(k, grid(n), src.get(), dst.get(), n);
  auto e = expect_kernel_exception([&] { s.synchronize(); });
  expect_report(e, "copy2", "write of argument 'dst'", (n - 1) * 4, (n - 1) * 4, "copy2");
}

TEST_P(Builds, AnAtomicPastTheBinsIsCaught) {
  zex::Kernel k = mod.kernel("histogram");
  Buffer<uint32_t> values(8);
  Buffer<int> bins(4);
  for (uint32_t i = 0; i < 8; ++i) values[i] = i % 4;
  values[5] = 7;
  s.launch(k, grid(8), values.get(), bins.get(), 8u);
  auto e = expect_kernel_exception([&] { s.synchronize(); });
  expect_report(e, "histogram", "atomic update of argument 'bins'", 28, 16, "histogram");
  EXPECT_EQ(bins[0] + bins[1] + bins[2] + bins[3], 7) << "the seven in-bounds updates happened";
}

TEST_P(Builds, AStoreInAHelperIsCaughtThroughTheCall) {
  zex::Kernel k = mod.kernel("through_helper");
  const uint32_t n = 16;
  Buffer<float> out(n);
  s.launch(k, grid(n + 1), out.get(), n);  // i = n stores out[n] in store_at
  auto e = expect_kernel_exception([&] { s.synchronize(); });
  // The helper's own parameter is the one named (the check is in the helper, shared by its callers).
  expect_report(e, "through_helper", "write of argument 'p'", n * 4, n * 4, "helper");
  EXPECT_EQ(e.frames()[0].function, "store_at");
}

// issue 27's second step: a static __local array checked against its own size, in a kernel with a
// barrier (the throwing work-items end before it; the others still meet there).
TEST_P(Builds, ALocalTilePastItsEndIsCaughtBeforeTheBarrier) {
  zex::Kernel k = mod.kernel("tiled");
  const uint32_t n = 64;
  Buffer<float> in(n), out(n);
  for (uint32_t i = 0; i < n; ++i) in[i] = float(i);
  zex::LaunchConfig c = grid(n / 16);
  c.group_size = {16, 1, 1};
  s.launch(k, c, out.get(), in.get());
  ASSERT_NO_THROW(s.synchronize()) << "a group of 16 fits the tile";
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(out[i], float((i / 16) * 16 + (i % 16 + 1) % 16)) << i;
  // Groups of 32: local ids 16..31 write tile[16..31] (byte offsets 64..124 of 64 bytes) and throw; the
  // report is one of theirs.
  c = grid(n / 32);
  c.group_size = {32, 1, 1};
  s.launch(k, c, out.get(), in.get());
  auto e = expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(e.name(), "OutOfBoundsAccess");
  ASSERT_EQ(e.values().size(), 2u);
  const uint64_t off = e.values()[0];
  EXPECT_EQ(e.values()[1], 64u) << "the tile's size";
  EXPECT_TRUE(off >= 64 && off <= 124 && off % 4 == 0) << off;
  const std::string text = "write of __local 'tile' at byte offset " + std::to_string(off) + " of an allocation of 64 bytes";
  EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  EXPECT_EQ(e.thrower_count(), 32u) << "local ids 16..31 of both groups";
  if (debug()) {
    ASSERT_FALSE(e.frames().empty());
    EXPECT_EQ(e.frames()[0].line, line_of("tiled")) << e.what();
  }
  for (uint32_t i = 0; i < n; ++i)
    if (i % 32 < 16) {
      EXPECT_EQ(out[i], float((i / 32) * 32 + (i % 16 + 1) % 16)) << "work-item " << i << " ran on";
    }
  // The stream stays usable.
  c = grid(n / 16);
  c.group_size = {16, 1, 1};
  s.launch(k, c, out.get(), in.get());
  EXPECT_NO_THROW(s.synchronize());
  EXPECT_EQ(mod.memory_checks().local, 0u) << "memory_bugs.cl has no __local parameter";
}

// A __local parameter is checked against the bytes its launch gives it (zex::local, or a binding's
// {bytes, null} argument), caught before the barrier, the others running on.
TEST_P(Builds, ALocalParameterIsCheckedAgainstItsLaunchsSize) {
  zex::Kernel k = mod.kernel("tiled_param");
  ASSERT_EQ(k.local_checked_arguments(), (std::vector<uint32_t>{2}));
  EXPECT_EQ(k.checked_arguments(), (std::vector<uint32_t>{0, 1, 2}));
  const uint32_t n = 64;
  Buffer<float> in(n), out(n);
  for (uint32_t i = 0; i < n; ++i) in[i] = float(i);
  zex::LaunchConfig c = grid(n / 16);
  c.group_size = {16, 1, 1};
  s.launch(k, c, out.get(), in.get(), zex::local(16 * sizeof(float)));
  ASSERT_NO_THROW(s.synchronize()) << "16 floats for a group of 16";
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(out[i], float((i / 16) * 16 + (i % 16 + 1) % 16)) << i;
  // Groups of 32 in a tile of 16 floats: local ids 16..31 write past it and throw.
  c = grid(n / 32);
  c.group_size = {32, 1, 1};
  s.launch(k, c, out.get(), in.get(), zex::local(16 * sizeof(float)));
  auto e = expect_kernel_exception([&] { s.synchronize(); });
  ASSERT_EQ(e.values().size(), 2u);
  const uint64_t off = e.values()[0];
  EXPECT_TRUE(off >= 64 && off <= 124 && off % 4 == 0) << off;
  expect_report(e, "tiled_param", "write of argument 'tile'", off, 64, "tiled_param");
  EXPECT_EQ(e.thrower_count(), 34u) << "local ids 16..31 of both groups writing, 15 reading tile[16] after the barrier";
  // The same groups with room for them: no throw, the exact results; then through launch_args (the C
  // API's and Python's path: a {bytes, null} argument).
  s.launch(k, c, out.get(), in.get(), zex::local(32 * sizeof(float)));
  ASSERT_NO_THROW(s.synchronize());
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(out[i], float((i / 32) * 32 + (i % 32 + 1) % 32)) << i;
  float* op = out.get();
  float* ip = in.get();
  const zex::KernelArg small[] = {{sizeof op, &op}, {sizeof ip, &ip}, {20 * sizeof(float), nullptr}};
  s.launch_args(k, c, small, 3, __FILE__, __LINE__);
  auto e2 = expect_kernel_exception([&] { s.synchronize(); });
  ASSERT_EQ(e2.values().size(), 2u);
  EXPECT_EQ(e2.values()[1], 80u) << "the 20 floats launch_args gave: " << e2.what();
  EXPECT_EQ(e2.thrower_count(), 26u) << "local ids 20..31 of both groups writing, 19 reading tile[20]";
  EXPECT_EQ(mod.memory_checks().local, 0u) << "every __local access is checked";
}

// A helper given `tile + 1` checks against the tile, not against what follows its pointer: its bounds
// travel relative to the pointer passed.
TEST_P(Builds, AHelperGivenAnOffsetIntoALocalParameterChecksTheWholeTile) {
  zex::Kernel k = mod.kernel("shifted_param");
  const uint32_t n = 64;
  Buffer<float> out(n);
  zex::LaunchConfig c = grid(n / 16);
  c.group_size = {16, 1, 1};
  s.launch(k, c, out.get(), zex::local(17 * sizeof(float)));
  ASSERT_NO_THROW(s.synchronize()) << "tile[1..16] of 17 floats";
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(out[i], float(i % 16) + 0.5f) << i;
  s.launch(k, c, out.get(), zex::local(16 * sizeof(float)));
  auto e = expect_kernel_exception([&] { s.synchronize(); });
  // -O2 inlines the helper: the access is the kernel's, through 'tile'.
  const bool inlined = std::string(GetParam()) == "O2";
  expect_report(e, "shifted_param", inlined ? "write of argument 'tile'" : "write of argument 't'", 64, 64, "put_at");
  EXPECT_EQ(e.thrower_count(), 4u) << "local id 15 of each group";
  zex::Graph g(env().dev);  // a recorded launch takes its __local sizes as recorded, and as updated
  const zex::GraphLaunch h = g.launch(k, c, out.get(), zex::local(16 * sizeof(float)));
  g.close();
  s.execute(g);
  auto e2 = expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(e2.values(), (std::vector<uint64_t>{64, 64}));
  g.update(h, out.get(), zex::local(17 * sizeof(float)));
  s.execute(g);
  EXPECT_NO_THROW(s.synchronize()) << "the updated size";
  g.update(h, out.get(), zex::local(12 * sizeof(float)));
  s.execute(g);
  auto e3 = expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(e3.values()[1], 48u);
  s.launch(k, c, out.get(), zex::local(17 * sizeof(float)));
  EXPECT_NO_THROW(s.synchronize()) << "the stream stays usable";
}

TEST_P(Builds, APointerLoadedFromMemoryIsNotReportedFalsely) {
  zex::Kernel k = mod.kernel("loaded");
  Buffer<float> target(16);
  Buffer<float*> table(1);
  table[0] = target.get();
  s.launch(k, grid(1), table.get(), 3u);
  EXPECT_NO_THROW(s.synchronize());
  EXPECT_EQ(target[3], 5.0f);
}

TEST_P(Builds, LevelTwoNamesTheWorkItemAndLevelZeroStillCatches) {
  zex::Kernel k = mod.kernel("copy2");
  const uint32_t n = 32;
  Buffer<int> src(n), dst(n - 1);
  s.launch(k, grid(n, 1, 2), src.get(), dst.get(), n);
  auto e2 = expect_kernel_exception([&] { s.synchronize(); });
  ASSERT_TRUE(e2.global_id().has_value());
  EXPECT_EQ((*e2.global_id())[0], n - 1);
  EXPECT_EQ(e2.values(), (std::vector<uint64_t>{(n - 1) * 4, (n - 1) * 4}));
  s.launch(k, grid(n, 1, 0), src.get(), dst.get(), n);
  auto e0 = expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(e0.kernel_name(), "copy2");
  EXPECT_TRUE(e0.values().empty()) << "level 0 records no values";
}

// The unchecked module through raw Level Zero (its kernels take no zex_state_t, so zex cannot launch
// them): the baseline the checked kernels must equal bit for bit.
class RawModule {
 public:
  explicit RawModule(const std::vector<uint8_t>& spv) {
    ze_module_desc_t d{ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_IL_SPIRV, spv.size(), spv.data(), "",
                       nullptr};
    zex::check(zeModuleCreate(env().ctx.handle(), env().dev.handle(), &d, &module_, nullptr), "zeModuleCreate");
    ze_command_queue_desc_t q{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, 0, 0, 0, ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS,
                              ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    zex::check(zeCommandListCreateImmediate(env().ctx.handle(), env().dev.handle(), &q, &list_),
               "zeCommandListCreateImmediate");
  }
  ~RawModule() {
    for (ze_kernel_handle_t k : kernels_) zeKernelDestroy(k);
    zeCommandListDestroy(list_);
    zeModuleDestroy(module_);
  }
  RawModule(const RawModule&) = delete;
  RawModule& operator=(const RawModule&) = delete;
  template <class... Args>
  void launch(const char* name, uint32_t groups, const Args&... args) {
    ze_kernel_desc_t kd{ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, name};
    ze_kernel_handle_t k = nullptr;
    zex::check(zeKernelCreate(module_, &kd, &k), "zeKernelCreate");
    kernels_.push_back(k);
    zex::check(zeKernelSetGroupSize(k, 1, 1, 1), "zeKernelSetGroupSize");
    uint32_t i = 0;
    ((zex::check(zeKernelSetArgumentValue(k, i++, sizeof(Args), &args), "zeKernelSetArgumentValue")), ...);
    const ze_group_count_t g{groups, 1, 1};
    zex::check(zeCommandListAppendLaunchKernel(list_, k, &g, nullptr, 0, nullptr), "zeCommandListAppendLaunchKernel");
  }

 private:
  ze_module_handle_t module_ = nullptr;
  ze_command_list_handle_t list_ = nullptr;
  std::vector<ze_kernel_handle_t> kernels_;
};

// Bit for bit: kernels in bounds, checked (through zex) and unchecked (raw), from the same inputs.
TEST_P(Builds, InBoundsResultsAreTheUncheckedModulesBitForBit) {
  const uint32_t n = 64;
  struct Run {
    Buffer<float> in{n}, out{n};
    Buffer<uint32_t> values{n};
    Buffer<int> bins{8}, prefix{n + 1};
    Run() {
      for (uint32_t i = 0; i < n; ++i) in[i] = 1.0f / float(i + 3);
      for (uint32_t i = 0; i < n; ++i) values[i] = (i * 7) % 8;
    }
  } checked_run, raw_run;
  zex::Kernel ks = mod.kernel("stencil"), kh = mod.kernel("histogram"), kp = mod.kernel("prefix");
  s.launch(ks, grid(n - 1), checked_run.out.get(), checked_run.in.get(), n);
  s.launch(kh, grid(n), checked_run.values.get(), checked_run.bins.get(), n);
  s.launch(kp, grid(1), checked_run.prefix.get(), n);
  s.synchronize();
  {
    RawModule raw(spirv(GetParam()));
    raw.launch("stencil", n - 1, raw_run.out.get(), raw_run.in.get(), n);
    raw.launch("histogram", n, raw_run.values.get(), raw_run.bins.get(), n);
    raw.launch("prefix", 1, raw_run.prefix.get(), n);
  }
  EXPECT_EQ(std::memcmp(checked_run.out.get(), raw_run.out.get(), n * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(checked_run.bins.get(), raw_run.bins.get(), 8 * sizeof(int)), 0);
  EXPECT_EQ(std::memcmp(checked_run.prefix.get(), raw_run.prefix.get(), (n + 1) * sizeof(int)), 0);
  EXPECT_EQ(checked_run.prefix[n], int(n * (n + 1) / 2)) << "the results are real";
}

// The allocation a pointer points into, not the pointer: an argument offset into a buffer is checked
// against the whole buffer, and a new buffer at a new address is looked up again.
TEST_P(Builds, BoundsAreTheAllocationsAndFollowThePointer) {
  zex::Kernel k = mod.kernel("copy2");
  Buffer<int> src(64), small(8), big(64);
  s.launch(k, grid(32), src.get(), big.get() + 16, 32u);  // 16..47 of 64: in bounds
  EXPECT_NO_THROW(s.synchronize());
  s.launch(k, grid(32), src.get(), small.get(), 32u);
  auto e = expect_kernel_exception([&] { s.synchronize(); });
  // Items 8..31 throw; which claims the report first is the driver's order.
  ASSERT_EQ(e.values().size(), 2u);
  EXPECT_EQ(e.values()[1], 32u);
  EXPECT_GE(e.values()[0], 32u);
  EXPECT_LT(e.values()[0], 128u);
  EXPECT_EQ(e.thrower_count(), 24u);
  s.launch(k, grid(32), src.get(), big.get(), 32u);
  EXPECT_NO_THROW(s.synchronize());
  zex::forget_memory_bounds();
  s.launch(k, grid(64), src.get(), big.get() + 16, 64u);  // 16..79 of 64
  auto e2 = expect_kernel_exception([&] { s.synchronize(); });
  ASSERT_EQ(e2.values().size(), 2u);
  EXPECT_EQ(e2.values()[1], 256u) << "the whole allocation, not the 192 bytes after the pointer";
  EXPECT_GE(e2.values()[0], 256u);
  EXPECT_EQ(e2.thrower_count(), 16u) << "items 48..63";
}

// A launch sets the hidden bounds only when they changed, per level's kernel: whatever the order of
// allocations and levels, every launch checks against the allocation it was given.
TEST_P(Builds, HiddenBoundsFollowEveryChangeAcrossLevels) {
  zex::Kernel k = mod.kernel("copy2");
  Buffer<int> src(32), small(31), big(32);
  struct Step {
    int* dst;
    int level;
    bool throws;
  };
  const Step steps[] = {{small.get(), 1, true},  {big.get(), 1, false},   {small.get(), 2, true},
                        {small.get(), 1, true},  {big.get(), 0, false},   {big.get(), 2, false},
                        {small.get(), 0, true},  {big.get(), 1, false},   {big.get() + 1, 1, true},
                        {small.get(), 2, true}};
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; ++i) {
    const Step& st = steps[i];
    s.launch(k, grid(32, 1, st.level), src.get(), st.dst, 32u);
    if (st.throws) {
      auto e = expect_kernel_exception([&] { s.synchronize(); });
      EXPECT_EQ(e.kernel_name(), "copy2") << "step " << i;
      if (st.level > 0) {
        EXPECT_EQ(e.values()[1], st.dst == small.get() ? 124u : 128u) << "step " << i;
      }
    } else {
      EXPECT_NO_THROW(s.synchronize()) << "step " << i;
    }
  }
  // Many launches per synchronize with alternating allocations: the first launch that throws reports.
  for (int r = 0; r < 4; ++r) s.launch(k, grid(32), src.get(), big.get(), 32u);
  s.launch(k, grid(32), src.get(), small.get(), 32u);
  s.launch(k, grid(32), src.get(), big.get(), 32u);
  auto e = expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(e.values(), (std::vector<uint64_t>{124, 124}));
}

// launch_args (the C API's and Python's path) passes the bounds too.
TEST_P(Builds, LaunchArgsPassesTheBounds) {
  zex::Kernel k = mod.kernel("copy2");
  Buffer<int> src(32), dst(31);
  int* sp = src.get();
  int* dp = dst.get();
  uint32_t n = 32;
  const zex::KernelArg args[] = {{sizeof sp, &sp}, {sizeof dp, &dp}, {sizeof n, &n}};
  s.launch_args(k, grid(32), args, 3, __FILE__, __LINE__);
  auto e = expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(e.values(), (std::vector<uint64_t>{124, 124}));
}

// A failed lookup (not "no allocation here") fails the launch with the call named; nothing is appended
// and the next launch works (CTest zex_memory_checks_fault: ZEX_CPU_FAIL fails the first lookup).
TEST(MemoryChecksFault, AFailedLookupFailsTheLaunchAndLosesNothing) {
  const char* f = std::getenv("ZEX_CPU_FAIL");
  if (!f || std::string(f).find("zeMemGetAddressRange") == std::string::npos)
    GTEST_SKIP() << "runs in CTest zex_memory_checks_fault (ZEX_CPU_FAIL=zeMemGetAddressRange:1:...)";
  zex::ModuleOptions o;
  o.check_memory = true;
  zex::Module m(env().dev, spirv("O2"), o);
  zex::Kernel k = m.kernel("copy2");
  zex::Stream s(env().dev);
  Buffer<int> src(8), dst(8);
  try {
    s.launch(k, grid(8), src.get(), dst.get(), 8u);
    FAIL() << "the injected failure must fail the launch";
  } catch (const zex::ZeError& e) {
    EXPECT_EQ(e.result(), ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
    EXPECT_NE(std::string(e.what()).find("zeMemGetAddressRange"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("memory checks"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(s.synchronize());
  for (int i = 0; i < 8; ++i) src[i] = i + 1;
  s.launch(k, grid(8), src.get(), dst.get(), 8u);
  EXPECT_NO_THROW(s.synchronize());
  EXPECT_EQ(dst[7], 8);
}

// Another pointer into the allocation an argument's last lookup found is that allocation: no lookup
// (CTest zex_memory_checks_inside fails the third one, so a launch that looked up again would throw),
// and its accesses are checked against the whole allocation, offsets from its start.
TEST(MemoryChecksInside, APointerInsideTheLastAllocationIsNotLookedUpAgain) {
  const char* f = std::getenv("ZEX_CPU_FAIL");
  if (!f || std::string(f).find("zeMemGetAddressRange:3") == std::string::npos)
    GTEST_SKIP() << "runs in CTest zex_memory_checks_inside (ZEX_CPU_FAIL=zeMemGetAddressRange:3:...)";
  zex::ModuleOptions o;
  o.check_memory = true;
  zex::Module m(env().dev, spirv("O2"), o);
  zex::Kernel k = m.kernel("copy2");
  zex::Stream s(env().dev);
  Buffer<int> src(64), dst(64), other(8);
  for (int i = 0; i < 64; ++i) src[i] = i;
  s.launch(k, grid(8), src.get(), dst.get(), 8u);  // lookups 1 and 2
  ASSERT_NO_THROW(s.synchronize());
  for (int at = 1; at < 56; at += 9) {  // new pointers, the same allocations: no lookup
    s.launch(k, grid(8), src.get() + at, dst.get() + at, 8u);
    ASSERT_NO_THROW(s.synchronize()) << at;
    EXPECT_EQ(dst[at + 7], at + 7);
  }
  s.launch(k, grid(16), src.get() + 56, dst.get(), 16u);  // src[56..71] of 64
  auto e = expect_kernel_exception([&] { s.synchronize(); });
  ASSERT_EQ(e.values().size(), 2u);
  EXPECT_EQ(e.values()[1], 256u) << "the whole allocation";
  EXPECT_GE(e.values()[0], 256u) << "an offset from the allocation's start";
  EXPECT_EQ(e.thrower_count(), 8u);
  try {  // another allocation: looked up (the third lookup, injected to fail)
    s.launch(k, grid(8), other.get(), dst.get(), 8u);
    FAIL() << "a pointer outside the last allocation must be looked up";
  } catch (const zex::ZeError& z) {
    EXPECT_EQ(z.result(), ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
  }
  EXPECT_NO_THROW(s.synchronize());
}

// The third lookup (the update's first) fails: update() throws naming the call, and the graph runs on
// with the launch as recorded (CTest zex_memory_checks_graph_fault).
TEST(MemoryChecksGraphFault, AFailedLookupInAnUpdateChangesNothing) {
  const char* f = std::getenv("ZEX_CPU_FAIL");
  if (!f || std::string(f).find("zeMemGetAddressRange:3") == std::string::npos)
    GTEST_SKIP() << "runs in CTest zex_memory_checks_graph_fault (ZEX_CPU_FAIL=zeMemGetAddressRange:3:...)";
  zex::ModuleOptions o;
  o.check_memory = true;
  zex::Module m(env().dev, spirv("O2"), o);
  zex::Kernel k = m.kernel("copy2");
  Buffer<int> src(4), dst(4), other(4);
  for (int i = 0; i < 4; ++i) src[i] = 20 + i;
  zex::Graph g(env().dev);
  const zex::GraphLaunch h = g.launch(k, grid(4), src.get(), dst.get(), 4u);  // lookups 1 and 2
  g.close();
  // Scalars alone: the recorded bounds stand, no lookup (so the injected third one is still ahead).
  EXPECT_NO_THROW(g.update(h, src.get(), dst.get(), 3u));
  EXPECT_NO_THROW(g.update(h, src.get(), dst.get(), 4u));
  try {
    g.update(h, src.get(), other.get(), 4u);
    FAIL() << "the injected failure must fail the update";
  } catch (const zex::ZeError& e) {
    EXPECT_EQ(e.result(), ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
    EXPECT_NE(std::string(e.what()).find("zeMemGetAddressRange"), std::string::npos) << e.what();
  }
  zex::Stream s(env().dev);
  s.execute(g);
  EXPECT_NO_THROW(s.synchronize());
  EXPECT_EQ(dst[3], 23) << "the launch as recorded";
  EXPECT_EQ(other[3], 0) << "the failed update changed the launch";
  g.update(h, src.get(), other.get(), 4u);  // the next lookups succeed
  s.execute(g);
  EXPECT_NO_THROW(s.synchronize());
  EXPECT_EQ(other[3], 23);
}

TEST(MemoryChecks, ZexCheckMemoryTurnsThemOnAndAGarbageValueIsRefused) {
  {
    ScopedEnv on("ZEX_CHECK_MEMORY", "1");
    zex::Module m(env().dev, spirv("O2"));
    EXPECT_TRUE(m.memory_checks().enabled);
    EXPECT_EQ(m.kernel("copy2").hidden_argument_count(), 1u);
  }
  {
    ScopedEnv off("ZEX_CHECK_MEMORY", "0");
    EXPECT_FALSE(zex::Module(env().dev, spirv("O2")).memory_checks().enabled);
  }
  ScopedEnv bad("ZEX_CHECK_MEMORY", "yes");
  try {
    zex::Module m(env().dev, spirv("O2"));
    FAIL() << "ZEX_CHECK_MEMORY=yes must be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("ZEX_CHECK_MEMORY='yes' is neither 0 nor 1"), std::string::npos) << e.what();
  }
}

// zex's own kernels (zex calls, a zex_state_t already) take the checks as well and keep their throws.
TEST(MemoryChecks, AModuleWithZexCodeKeepsItsOwnThrows) {
  zex::ModuleOptions o;
  o.check_memory = true;
  zex::Module m(env().dev, read_file(ZEX_TEST_KERNEL_SPV), o);
  EXPECT_TRUE(m.memory_checks().enabled);
  EXPECT_GT(m.memory_checks().checked, 0u);
  zex::Kernel k = m.kernel("memory_report");
  zex::Stream s(env().dev);
  Buffer<uint32_t> a(64), out(128);
  // Its own check (index 64 of 64) throws before the access the memory check would catch.
  s.launch(k, grid(65), a.get(), out.get(), uint64_t{64 * 4});
  auto e = expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(e.name(), "OutOfBoundsAccess");
  EXPECT_EQ(e.values(), (std::vector<uint64_t>{256, 256}));
}

// A graph records a checked launch with the bounds of the allocations its pointers point into then,
// and an update looks them up again for the new pointers: in place on zex-cpu's mutable lists, and by
// recording the list again under ZEX_GRAPH_UPDATE=rerecord (CTest zex_memory_checks_graph_rerecord).
TEST(MemoryChecksGraph, RecordedLaunchesAreCheckedAndUpdatesFollowThePointers) {
  zex::ModuleOptions o;
  o.check_memory = true;
  zex::Module m(env().dev, spirv("O2"), o);
  zex::Kernel k = m.kernel("copy2");
  Buffer<int> src(4), big(4), small(3), other(4);
  for (int i = 0; i < 4; ++i) src[i] = 10 + i;
  zex::Stream s(env().dev);
  zex::Graph g(env().dev, "checked");
  const uint32_t line = __LINE__ + 1;
  const zex::GraphLaunch h = g.launch(k, grid(4), src.get(), big.get(), 4u);
  g.close();
  EXPECT_EQ(g.launches(), 1u);
  s.execute(g);
  s.synchronize();
  EXPECT_EQ(big[3], 13);

  // dst one element short: the execution throws at dst[3], before the write.
  g.update(h, src.get(), small.get(), 4u);
  s.execute(g);
  auto e = expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(e.name(), "OutOfBoundsAccess");
  EXPECT_EQ(e.values(), (std::vector<uint64_t>{12, 12}));
  EXPECT_NE(std::string(e.what()).find("write of argument 'dst' at byte offset 12 of an allocation of 12 bytes"),
            std::string::npos)
      << e.what();
  ASSERT_TRUE(e.launch_site().has_value());
  EXPECT_EQ(e.launch_site()->line, line);

  // Another allocation of the right size: in bounds again, the graph and the stream both usable.
  g.update(h, src.get(), other.get(), 4u);
  s.execute(g);
  EXPECT_NO_THROW(s.synchronize());
  EXPECT_EQ(other[3], 13);
}

// The graph and the stream set the same ze kernel's bounds: after the graph recorded (and re-recorded)
// a launch with a short buffer, a stream launch with the pointers of its previous launch must not run
// with the graph's bounds (a false report), nor the graph's execution with the stream's (a missed one).
TEST(MemoryChecksGraph, AStreamLaunchAfterARecordingSetsItsOwnBounds) {
  zex::ModuleOptions o;
  o.check_memory = true;
  zex::Module m(env().dev, spirv("O2"), o);
  zex::Kernel k = m.kernel("copy2");
  Buffer<int> src(4), big(4), small(3);
  zex::Stream s(env().dev);
  s.launch(k, grid(4), src.get(), big.get(), 4u);
  s.synchronize();
  zex::Graph g(env().dev);
  g.launch(k, grid(4), src.get(), small.get(), 4u);
  g.close();
  s.launch(k, grid(4), src.get(), big.get(), 4u);  // the bounds cached for these pointers: set again
  EXPECT_NO_THROW(s.synchronize());
  s.execute(g);
  auto e = expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(e.values(), (std::vector<uint64_t>{12, 12}));
  s.launch(k, grid(4), src.get(), big.get(), 4u);
  EXPECT_NO_THROW(s.synchronize());
}

// A graph's shape checks count the kernel's own arguments, not the hidden ones.
TEST(MemoryChecksGraph, AWrongArgumentCountNamesTheKernelsOwnCount) {
  zex::ModuleOptions o;
  o.check_memory = true;
  zex::Module m(env().dev, spirv("O2"), o);
  zex::Kernel k = m.kernel("copy2");
  Buffer<int> src(4), dst(4);
  zex::Graph g(env().dev);
  try {
    g.launch(k, grid(4), src.get(), dst.get());
    FAIL() << "two arguments for a kernel of three";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("3"), std::string::npos) << e.what();
  }
}

// Under guard pages, the same bug in the unchecked module kills the process: the checked runs above
// survive only because the check came first.
TEST(MemoryChecks, UncheckedTheBugFaultsUnderGuardPages) {
  if (!guarded()) GTEST_SKIP() << "runs in CTest zex_memory_checks_guard_pages (ZEX_CPU_GUARD_PAGES=1)";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto run_unchecked = [] {
    RawModule plain(spirv("O2"));
    Buffer<int> src(1024), dst(1023);
    plain.launch("copy2", 1024, src.get(), dst.get(), 1024u);  // dst[1023] is the guard page's first word
  };
  EXPECT_DEATH(run_unchecked(), "");
}

}  // namespace
