// Throws that must end the work-item, on zex-cpu through zex::Module (issue 24, items 8 and 10):
// checks in helpers that return a scalar, a vector and a struct (ZEX_CHECK_BOUNDS_RET and
// ZEX_THROW_*_RET, tests/kernels/passes/throw_ret.cl, built five ways, the struct one by `sret` and
// with -g too), a check that clang -O2 threads into another's cold block (check_twice.cl), and a
// kernel that calls another kernel (kernel_calls_kernel.cl), and throw sites clang merged into one
// call (merged_sites.cl). Each at levels 0, 1 and 2: the report's
// name, reason, values and frames with their lines, one thrower, and none of the thrower's later writes.
#include "zex_fixture.hpp"

#include "passes_e2e_device.hpp"
#include "passes_util.hpp"

#include <cstring>

namespace {

using passes_test::device;

std::map<std::string, uint32_t> lines_of(const std::string& file) {
  return passes_test::marker_lines(std::string(ZEX_PASSES_KERNELS_SOURCE) + "/" + file);
}
zex::Module module_of(const std::string& build) {
  return zex::Module(device().dev, passes_test::read_bytes(std::string(ZEX_PASSES_KERNELS) + "/" + build + ".spv"));
}
std::vector<std::string> frame_functions(const zex::KernelException& ex) {
  std::vector<std::string> f;
  for (const auto& x : ex.frames()) f.push_back(x.function);
  return f;
}

// A byte buffer of `items` elements of `size` bytes, filled with a pattern no kernel writes.
struct Out {
  static constexpr uint8_t kFill = 0x5a;
  size_t size;
  zex_test::Usm<uint8_t> bytes;
  Out(size_t elem, size_t items) : size(elem), bytes(elem * items, device().ctx.handle(), device().dev.handle()) {}
  void fill() { std::memset(bytes.get(), kFill, bytes.size()); }
  bool untouched(size_t k) {
    for (size_t b = 0; b < size; ++b)
      if (bytes[k * size + b] != kFill) return false;
    return true;
  }
  template <class T>
  T at(size_t k) {
    T v;
    std::memcpy(&v, bytes.get() + k * size, sizeof v);
    return v;
  }
};

// What a throw_ret.cl kernel run with one throwing work-item must show.
struct Expect {
  const char* name;
  const char* reason;
  std::vector<uint64_t> values;  // level >= 1
  std::string function;          // the helper
  uint32_t line;
};

// Launches 8 work-items of `kernel`, work-item 3 throwing, and checks the report and that work-item 3
// wrote nothing (out[3], out[64 + 3], out[128 + 3]) while the others wrote all three.
template <class Launch>
void expect_one_thrower(zex::Stream& s, Out& out, int level, const std::string& kernel, const Expect& e,
                        Launch&& launch) {
  out.fill();
  launch(zex_test::cfg1d(1, 8, level));
  auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(ex.name(), e.name);
  EXPECT_EQ(ex.reason(), e.reason);
  EXPECT_EQ(frame_functions(ex), (std::vector<std::string>{e.function, kernel}));
  ASSERT_FALSE(ex.frames().empty());
  EXPECT_EQ(ex.frames()[0].line, e.line);
  if (level >= 1) {
    EXPECT_EQ(ex.values(), e.values);
    EXPECT_EQ(ex.thrower_count(), 1u);
  }
  EXPECT_TRUE(out.untouched(3)) << "the caller used the value of a helper that threw";
  EXPECT_TRUE(out.untouched(64 + 3)) << "the kernel went on after the throw";
  EXPECT_TRUE(out.untouched(128 + 3)) << "the helper went on after the throw";
  for (size_t k : {0, 5, 7})
    EXPECT_FALSE(out.untouched(k) || out.untouched(64 + k) || out.untouched(128 + k)) << "work-item " << k;
}

const char* const kRetBuilds[] = {"throw_ret_O2", "throw_ret_O2g", "throw_ret_O2gni", "throw_ret_O0g", "throw_ret_O0"};

TEST(ThrowInValueHelper, AScalarHelperThrowsWithCheckBoundsRet) {
  const auto lines = lines_of("throw_ret.cl");
  auto& d = device();
  zex_test::Usm<double> a(64, d.ctx.handle(), d.dev.handle());
  for (uint32_t i = 0; i < 64; ++i) a[i] = i;
  Out out(sizeof(double), 192);
  for (const char* build : kRetBuilds) {
    zex::Module mod = module_of(build);
    zex::Kernel k = mod.kernel("ret_scalar");
    zex::Stream s(d.dev);
    for (int level : {0, 1, 2}) {
      SCOPED_TRACE(std::string(build) + ", level " + std::to_string(level));
      expect_one_thrower(s, out, level, "ret_scalar",
                         {"BoundsError", "Out-of-bounds array access", {71, 64}, "d_checked", lines.at("SCALAR")},
                         [&](const zex::LaunchConfig& c) { s.launch(k, c, out.bytes.get(), a.get(), uint32_t(3), uint32_t(64)); });
      EXPECT_EQ(out.at<double>(5), 2.5);
    }
  }
}

TEST(ThrowInValueHelper, AVectorHelperThrowsWithThrowValuesRet) {
  const auto lines = lines_of("throw_ret.cl");
  auto& d = device();
  zex_test::Usm<float> a(4 * 64, d.ctx.handle(), d.dev.handle());
  for (uint32_t i = 0; i < 4 * 64; ++i) a[i] = static_cast<float>(i);
  Out out(4 * sizeof(float), 192);
  for (const char* build : kRetBuilds) {
    zex::Module mod = module_of(build);
    zex::Kernel k = mod.kernel("ret_vector");
    zex::Stream s(d.dev);
    for (int level : {0, 1, 2}) {
      SCOPED_TRACE(std::string(build) + ", level " + std::to_string(level));
      expect_one_thrower(s, out, level, "ret_vector", {"DomainError", "v_checked", {71, 64}, "v_checked", lines.at("VECTOR")},
                         [&](const zex::LaunchConfig& c) { s.launch(k, c, out.bytes.get(), a.get(), uint32_t(3), uint32_t(64)); });
      struct F4 { float x, y, z, w; };
      const F4 v = out.at<F4>(5);
      EXPECT_EQ(v.x, 21.0f);
      EXPECT_EQ(v.w, 24.0f);
    }
  }
}

// The struct comes back through an `sret` pointer: the helper is `void make(triple_t*, ...)` in
// SPIR-V, and with -g its debug information still says it returns triple_t.
TEST(ThrowInValueHelper, AStructHelperThrowsWithCheckBoundsRet) {
  const auto lines = lines_of("throw_ret.cl");
  auto& d = device();
  zex_test::Usm<int32_t> a(64, d.ctx.handle(), d.dev.handle());
  for (uint32_t i = 0; i < 64; ++i) a[i] = static_cast<int32_t>(i);
  Out out(sizeof(int32_t), 192);
  for (const char* build : kRetBuilds) {
    zex::Module mod = module_of(build);
    zex::Kernel k = mod.kernel("ret_struct");
    zex::Stream s(d.dev);
    for (int level : {0, 1, 2}) {
      SCOPED_TRACE(std::string(build) + ", level " + std::to_string(level));
      expect_one_thrower(s, out, level, "ret_struct",
                         {"BoundsError", "Out-of-bounds array access", {71, 64}, "make", lines.at("STRUCT")},
                         [&](const zex::LaunchConfig& c) { s.launch(k, c, out.bytes.get(), a.get(), uint32_t(3), uint32_t(64)); });
      EXPECT_EQ(out.at<int32_t>(5), 18);  // 5 + 6 + 7
    }
  }
}

TEST(ThrowInValueHelper, ThrowRetAndThrowValueRet) {
  const auto lines = lines_of("throw_ret.cl");
  auto& d = device();
  Out out(sizeof(uint64_t), 192);
  for (const char* build : kRetBuilds) {
    zex::Module mod = module_of(build);
    zex::Kernel k = mod.kernel("ret_plain");
    zex::Stream s(d.dev);
    for (int level : {0, 1, 2}) {
      SCOPED_TRACE(std::string(build) + ", level " + std::to_string(level));
      expect_one_thrower(s, out, level, "ret_plain", {"ArgumentError", "x is 1", {}, "u_checked", lines.at("PLAIN")},
                         [&](const zex::LaunchConfig& c) { s.launch(k, c, out.bytes.get(), uint64_t(1), uint32_t(3)); });
      expect_one_thrower(s, out, level, "ret_plain", {"ArgumentError", "x is 2", {2}, "u_checked", lines.at("ONE")},
                         [&](const zex::LaunchConfig& c) { s.launch(k, c, out.bytes.get(), uint64_t(2), uint32_t(3)); });
      EXPECT_EQ(out.at<uint64_t>(5), 11u);
    }
    // Nobody throws.
    out.fill();
    s.launch(k, zex_test::cfg1d(1, 8, 2), out.bytes.get(), uint64_t(5), uint32_t(3));
    EXPECT_NO_THROW(s.synchronize());
    EXPECT_EQ(out.at<uint64_t>(3), 6u);
  }
}

// clang -O2 threads the second check of the same index into the first's cold block (kernels/
// check_twice.cl): zex_throw, the store between, zex_throw again, in one block. The first throw ends
// the work-item: the store never happens and the work-item is counted once.
TEST(ThrowInHelper, ACheckThreadedIntoAnotherThrowsOnce) {
  const auto lines = lines_of("check_twice.cl");
  auto& d = device();
  zex_test::Usm<int32_t> a(64, d.ctx.handle(), d.dev.handle());
  for (uint32_t i = 0; i < 64; ++i) a[i] = static_cast<int32_t>(i);
  Out out(sizeof(int32_t), 256);
  for (const char* build : {"check_twice", "check_twice_g"}) {
    zex::Module mod = module_of(build);
    zex::Stream s(d.dev);
    zex::Kernel twice = mod.kernel("twice"), twice_void = mod.kernel("twice_void");
    for (int level : {0, 1, 2}) {
      SCOPED_TRACE(std::string(build) + ", level " + std::to_string(level));
      out.fill();
      s.launch(twice, zex_test::cfg1d(1, 8, level), out.bytes.get(), a.get(), uint32_t(3), uint32_t(64));
      auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
      EXPECT_EQ(frame_functions(ex), (std::vector<std::string>{"get", "twice"}));
      ASSERT_FALSE(ex.frames().empty());
      EXPECT_EQ(ex.frames()[0].line, lines.at("GET"));
      if (level >= 1) {
        EXPECT_EQ(ex.thrower_count(), 1u) << "the thrower threw twice";
        EXPECT_EQ(ex.values(), (std::vector<uint64_t>{67, 64}));
      }
      EXPECT_TRUE(out.untouched(3)) << "the code between the two checks ran";
      EXPECT_TRUE(out.untouched(64 + 3));
      EXPECT_EQ(out.at<int32_t>(5), 6);
      EXPECT_EQ(out.at<int32_t>(64 + 5), 6);

      out.fill();
      s.launch(twice_void, zex_test::cfg1d(1, 8, level), out.bytes.get(), uint32_t(3), uint32_t(64));
      ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
      EXPECT_EQ(frame_functions(ex), (std::vector<std::string>{"put", "twice_void"}));
      ASSERT_FALSE(ex.frames().empty());
      EXPECT_EQ(ex.frames()[0].line, lines.at("PUT"));
      if (level >= 1) {
        EXPECT_EQ(ex.thrower_count(), 1u) << "the thrower threw twice";
      }
      for (size_t k : {3, 64 + 3, 128 + 3, 192 + 3}) EXPECT_TRUE(out.untouched(k)) << "the thrower wrote c[" << k << "]";
      EXPECT_EQ(out.at<int32_t>(5), 1);
      EXPECT_EQ(out.at<int32_t>(64 + 5), 1);
    }
  }
}

// One kernel calls another (kernels/kernel_calls_kernel.cl, -O0): every kernel of the module still
// ends the work-item that throws in the helper, the called kernel run on its own, the calling kernel,
// and one that calls no kernel.
TEST(ThrowInHelper, AKernelThatCallsAKernelEndsTheWorkItem) {
  const auto lines = lines_of("kernel_calls_kernel.cl");
  auto& d = device();
  Out out(sizeof(int32_t), 192);
  for (const char* build : {"kernel_calls_kernel_O0", "kernel_calls_kernel_O0g"}) {
    zex::Module mod = module_of(build);
    zex::Stream s(d.dev);
    struct Case {
      const char* kernel;
      std::vector<std::string> frames;
      std::vector<size_t> writes;  // of work-item 3, none of which may happen
    };
    for (const Case& c : {Case{"inner", {"check", "inner"}, {3, 64 + 3}},
                          Case{"outer", {"check", "inner", "outer"}, {3, 64 + 3, 128 + 3}},
                          Case{"other", {"check", "other"}, {3, 64 + 3}}}) {
      zex::Kernel k = mod.kernel(c.kernel);
      for (int level : {0, 1, 2}) {
        SCOPED_TRACE(std::string(build) + ", " + c.kernel + ", level " + std::to_string(level));
        out.fill();
        s.launch(k, zex_test::cfg1d(1, 8, level), out.bytes.get(), uint32_t(3), uint32_t(64));
        auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
        EXPECT_EQ(frame_functions(ex), c.frames);
        ASSERT_FALSE(ex.frames().empty());
        EXPECT_EQ(ex.frames()[0].line, lines.at("KCHECK"));
        if (level >= 1) {
          EXPECT_EQ(ex.values(), (std::vector<uint64_t>{67, 64}));
        }
        for (size_t w : c.writes) EXPECT_TRUE(out.untouched(w)) << "the thrower wrote c[" << w << "]";
        EXPECT_EQ(out.at<int32_t>(64 + 5), 1);
      }
    }
  }
}

// Throw sites clang merged into one zex_throw call (kernels/merged_sites.cl, -O2): the two checks of
// a loop, whose line the call takes from an OpPhi, and a reason chosen by an OpSelect. Each site is
// numbered, so every level reports the check that failed, with its name and stacktrace.
TEST(ThrowInHelper, MergedSitesReportTheCheckThatFailed) {
  const auto lines = lines_of("merged_sites.cl");
  auto& d = device();
  const uint32_t m = 4, n = 64;
  zex_test::Usm<float> a(n, d.ctx.handle(), d.dev.handle());
  zex_test::Usm<uint32_t> idx(2 * m * 8, d.ctx.handle(), d.dev.handle());
  zex_test::Usm<int32_t> ai(n, d.ctx.handle(), d.dev.handle());
  Out out(sizeof(float), 8);
  for (const char* build : {"merged_sites", "merged_sites_g"}) {
    zex::Module mod = module_of(build);
    zex::Stream s(d.dev);
    zex::Kernel merged = mod.kernel("merged"), selected = mod.kernel("selected");
    struct Case {
      const char* marker;
      uint32_t at;  // which index of work-item 3 is out of bounds
    };
    for (const Case& c : {Case{"FIRST", 2 * m * 3 + 1}, Case{"SECOND", 2 * m * 3 + m + 2}})
      for (int level : {0, 1, 2}) {
        SCOPED_TRACE(std::string(build) + ", " + c.marker + ", level " + std::to_string(level));
        for (uint32_t k = 0; k < 2 * m * 8; ++k) idx[k] = k % n;
        idx[c.at] = n + 9;
        out.fill();
        s.launch(merged, zex_test::cfg1d(1, 8, level), out.bytes.get(), a.get(), idx.get(), m, n);
        auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
        EXPECT_EQ(ex.name(), "BoundsError");
        EXPECT_EQ(frame_functions(ex), (std::vector<std::string>{"dot_checked", "merged"}));
        ASSERT_FALSE(ex.frames().empty());
        EXPECT_EQ(ex.frames()[0].line, lines.at(c.marker));
        if (level >= 1) {
          EXPECT_EQ(ex.values(), (std::vector<uint64_t>{n + 9, n}));
        }
        EXPECT_TRUE(out.untouched(3));
        EXPECT_FALSE(out.untouched(5));
      }
    for (uint32_t which : {0u, 1u})
      for (int level : {0, 1, 2}) {
        SCOPED_TRACE(std::string(build) + ", which " + std::to_string(which) + ", level " + std::to_string(level));
        s.launch(selected, zex_test::cfg1d(1, 8, level), out.bytes.get(), ai.get(), uint32_t(3), n, which);
        auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
        EXPECT_EQ(ex.name(), "ArgumentError");
        EXPECT_EQ(ex.reason(), which ? "which is set" : "which is clear");
        EXPECT_EQ(frame_functions(ex), (std::vector<std::string>{"pick", "selected"}));
        ASSERT_FALSE(ex.frames().empty());
        EXPECT_EQ(ex.frames()[0].line, lines.at("PICK"));
        if (level >= 1) {
          EXPECT_EQ(ex.values(), (std::vector<uint64_t>{n + 3}));
        }
      }
  }
}

}  // namespace
