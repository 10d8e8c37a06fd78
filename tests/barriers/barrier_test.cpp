// Throws before work-group barriers (issue 24, item 5), end to end on the driver the loader finds
// (zex-cpu in CTest): kernels with __local memory and barriers whose checks can throw before a barrier
// that the rest of the work-group still reaches. A thrower records its throw and runs on, skipping
// its own work, to every barrier (docs/spirv-passes.md, "Throws before barriers"). So each launch
// must neither crash nor hang, must raise the exact KernelException (kernel, name, values, count,
// line), the thrower's own stores must not happen, and the work-groups without a thrower must compute
// what the host computes. Built -O2 and -O0, at debug levels 0, 1 and 2.
#include <zex/zex.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

constexpr uint32_t G = 16;       // the kernels' work-group size
constexpr uint32_t kGroups = 4;  // work-groups per launch
constexpr uint32_t N = G * kGroups;
constexpr float kSentinel = -12345.0f;

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

uint32_t line_of(const std::string& marker) {
  std::ifstream f(ZEX_BARRIER_SOURCE);
  std::string line;
  for (uint32_t n = 1; std::getline(f, line); ++n)
    if (line.size() >= marker.size() + 5 && line.compare(line.size() - marker.size() - 5, std::string::npos, "LINE:" + marker) == 0)
      return n;  // the line ends with LINE:<marker>
  throw std::runtime_error("no LINE:" + marker);
}

struct Env {
  zex::Context ctx;
  zex::Device dev{ctx.device(0)};
  zex::Stream stream{dev};
};
Env& env() {
  static Env* e = new Env();  // never destroyed: the loader tears down first at exit
  return *e;
}

template <class T>
class Usm {
 public:
  explicit Usm(size_t n, T fill = T()) : n_(n) {
    ze_device_mem_alloc_desc_t dd{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
    ze_host_mem_alloc_desc_t hd{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
    void* p = nullptr;
    zex::check(zeMemAllocShared(env().ctx.handle(), &dd, &hd, n * sizeof(T), 64, env().dev.handle(), &p),
               "zeMemAllocShared");
    p_ = static_cast<T*>(p);
    for (size_t i = 0; i < n; ++i) p_[i] = fill;
  }
  ~Usm() { zeMemFree(env().ctx.handle(), p_); }
  Usm(const Usm&) = delete;
  Usm& operator=(const Usm&) = delete;
  T* get() const { return p_; }
  T& operator[](size_t i) { return p_[i]; }

 private:
  T* p_ = nullptr;
  size_t n_;
};

struct Variant {
  const char* build;  // barrier_kernels_<build>.spv
  int level;
};

class Barriers : public ::testing::TestWithParam<Variant> {
 protected:
  static zex::Module& module(const std::string& build) {
    // Never destroyed, like env(): the loader tears down first at exit.
    static auto* mods = new std::map<std::string, zex::Module*>;
    auto& m = (*mods)[build];
    if (!m) m = new zex::Module(env().dev, read_file(std::string(ZEX_BARRIER_KERNELS) + "/barrier_kernels_" + build + ".spv"));
    return *m;
  }
  zex::Kernel kernel(const char* name) { return module(GetParam().build).kernel(name); }
  zex::LaunchConfig cfg() const {
    zex::LaunchConfig c;
    c.groups = {kGroups, 1, 1};
    c.group_size = {G, 1, 1};
    c.debug_level = GetParam().level;
    return c;
  }
  int level() const { return GetParam().level; }

  /// Runs `launch` and returns its KernelException (a failure if there is none); the stream works after.
  template <class F>
  zex::KernelException thrown(F&& launch) {
    launch();
    try {
      env().stream.synchronize();
    } catch (const zex::KernelException& e) {
      return e;
    }
    ADD_FAILURE() << "no KernelException";
    return zex::KernelException(zex::KernelExceptionInfo{});
  }

  /// What every report of a BoundsError says at this level.
  void expect_bounds(const zex::KernelException& e, const char* kernel, const char* line_marker, uint64_t throwers,
                     uint64_t length, uint64_t first_index, uint64_t last_index) {
    EXPECT_EQ(e.kernel_name(), kernel);
    EXPECT_EQ(e.name(), "BoundsError") << e.what();
    if (level() >= 1) {
      EXPECT_EQ(e.thrower_count(), throwers) << e.what();  // each thrower once, however often it ran on
      ASSERT_EQ(e.values().size(), 2u) << e.what();
      EXPECT_GE(e.values()[0], first_index) << e.what();
      EXPECT_LE(e.values()[0], last_index) << e.what();
      EXPECT_EQ(e.values()[1], length) << e.what();
      ASSERT_FALSE(e.frames().empty()) << e.what();
      EXPECT_EQ(e.frames()[0].line, line_of(line_marker)) << e.what();
    }
    if (level() >= 2) {
      ASSERT_TRUE(e.global_id().has_value()) << e.what();
    }
  }
};

// bpnn_layerforward's shape: work-item 0 of each group loads the group's inputs, a barrier, a product,
// a tree reduction with a barrier per step.
TEST_P(Barriers, LayerForward) {
  Usm<float> in(N), w(N), out(kGroups, kSentinel);
  for (uint32_t i = 0; i < N; ++i) {
    in[i] = static_cast<float>(i % 5);
    w[i] = static_cast<float>(1 + i % 3);
  }
  auto expected = [&](uint32_t grp) {
    float p[G];
    for (uint32_t t = 0; t < G; ++t) p[t] = in[grp * G + t] * w[grp * G + t];
    for (uint32_t s = G / 2; s > 0; s >>= 1)
      for (uint32_t t = 0; t < s; ++t) p[t] += p[t + s];
    return p[0];
  };
  zex::Kernel k = kernel("layer");
  env().stream.launch(k, cfg(), out.get(), in.get(), w.get(), N);
  env().stream.synchronize();
  for (uint32_t g = 0; g < kGroups; ++g) EXPECT_EQ(out[g], expected(g)) << "group " << g;

  for (uint32_t g = 0; g < kGroups; ++g) out[g] = kSentinel;
  const uint32_t n = N - 3;  // work-item 0 of the last group throws at k = 13
  zex::KernelException e = thrown([&] { env().stream.launch(k, cfg(), out.get(), in.get(), w.get(), n); });
  expect_bounds(e, "layer", "layer", 1, n, n, n);
  for (uint32_t g = 0; g + 1 < kGroups; ++g) EXPECT_EQ(out[g], expected(g)) << "group " << g;
  EXPECT_EQ(out[kGroups - 1], kSentinel) << "the thrower's store happened";
}

// hotspot's shape: every work-item loads its cell (checked), a barrier, a stencil over local memory.
TEST_P(Barriers, Stencil) {
  Usm<float> in(N), out(N, kSentinel);
  for (uint32_t i = 0; i < N; ++i) in[i] = static_cast<float>(4 * (i % 7));
  auto expected = [&](uint32_t g) {
    const uint32_t base = g / G * G, t = g % G;
    const float left = in[base + (t == 0 ? 0 : t - 1)], right = in[base + (t == G - 1 ? G - 1 : t + 1)];
    return 0.25f * left + 0.5f * in[g] + 0.25f * right;
  };
  zex::Kernel k = kernel("stencil");
  env().stream.launch(k, cfg(), out.get(), in.get(), N);
  env().stream.synchronize();
  for (uint32_t g = 0; g < N; ++g) EXPECT_EQ(out[g], expected(g)) << g;

  for (uint32_t g = 0; g < N; ++g) out[g] = kSentinel;
  const uint32_t n = N - 5;  // the last 5 work-items throw before the first barrier
  zex::KernelException e = thrown([&] { env().stream.launch(k, cfg(), out.get(), in.get(), n); });
  expect_bounds(e, "stencil", "stencil", 5, n, n, N - 1);
  for (uint32_t g = 0; g + 6 < N; ++g) EXPECT_EQ(out[g], expected(g)) << g;  // no thrower as a neighbour
  for (uint32_t g = n; g < N; ++g) EXPECT_EQ(out[g], kSentinel) << "thrower " << g << "'s store happened";
}

// nw's shape: a wavefront over a local tile, a barrier per diagonal, the check inside the loop.
TEST_P(Barriers, Wavefront) {
  Usm<int32_t> in(N), out(N, -1);
  for (uint32_t i = 0; i < N; ++i) in[i] = static_cast<int32_t>(i % 9) - 3;
  auto expected = [&](uint32_t g) {
    const uint32_t base = g / G * G;
    int32_t s = 0;
    for (uint32_t t = 0; t <= g % G; ++t) s = std::max(s, 0) + in[base + t];
    return s;
  };
  zex::Kernel k = kernel("wavefront");
  env().stream.launch(k, cfg(), out.get(), in.get(), N);
  env().stream.synchronize();
  for (uint32_t g = 0; g < N; ++g) EXPECT_EQ(out[g], expected(g)) << g;

  for (uint32_t g = 0; g < N; ++g) out[g] = -1;
  const uint32_t n = N - 4;  // work-items 12..15 of the last group throw, each on its own diagonal
  zex::KernelException e = thrown([&] { env().stream.launch(k, cfg(), out.get(), in.get(), n); });
  expect_bounds(e, "wavefront", "wavefront", 4, n, n, N - 1);
  for (uint32_t g = 0; g < n; ++g) EXPECT_EQ(out[g], expected(g)) << g;  // the work-items before them
  for (uint32_t g = n; g < N; ++g) EXPECT_EQ(out[g], -1) << "thrower " << g << "'s store happened";
}

// lavaMD's shape: neighbour boxes read through local memory, the check on an index read from memory,
// in a loop with two barriers per iteration.
TEST_P(Barriers, Boxes) {
  Usm<float> in(N), out(N, kSentinel);
  Usm<int32_t> nb(N);
  for (uint32_t i = 0; i < N; ++i) {
    in[i] = static_cast<float>(i % 6);
    nb[i] = static_cast<int32_t>((i * 7) % (N - 1));
  }
  auto expected = [&](uint32_t g) {
    const uint32_t base = g / G * G;
    float acc = 0.0f;
    for (uint32_t k = 0; k < 2; ++k)
      for (uint32_t m = 0; m < G; ++m) acc += in[static_cast<uint32_t>(nb[base + m]) + k] * 0.5f;
    return acc;
  };
  zex::Kernel k = kernel("boxes");
  env().stream.launch(k, cfg(), out.get(), in.get(), nb.get(), N);
  env().stream.synchronize();
  for (uint32_t g = 0; g < N; ++g) EXPECT_EQ(out[g], expected(g)) << g;

  for (uint32_t g = 0; g < N; ++g) out[g] = kSentinel;
  const uint32_t n = N - 1;
  nb[5] = static_cast<int32_t>(n - 1);  // work-item 5 throws in the second iteration (j = n)
  zex::KernelException e = thrown([&] { env().stream.launch(k, cfg(), out.get(), in.get(), nb.get(), n); });
  expect_bounds(e, "boxes", "boxes", 1, n, n, n);
  for (uint32_t g = G; g < N; ++g) EXPECT_EQ(out[g], expected(g)) << g;  // the groups without a thrower
  EXPECT_EQ(out[5], kSentinel) << "the thrower's store happened";
}

// A throw in a helper called before a barrier: the inlined helper throws, the noinline one would throw
// again for the same work-item, which skips it (counted once).
TEST_P(Barriers, HelperBeforeBarrier) {
  Usm<float> in(N), out(N, kSentinel);
  for (uint32_t i = 0; i < N; ++i) in[i] = static_cast<float>(i % 11);
  auto expected = [&](uint32_t g) { return 3.0f * in[g / G * G + (g % G + 1) % G]; };
  zex::Kernel k = kernel("helper_then_barrier");
  env().stream.launch(k, cfg(), out.get(), in.get(), N);
  env().stream.synchronize();
  for (uint32_t g = 0; g < N; ++g) EXPECT_EQ(out[g], expected(g)) << g;

  for (uint32_t g = 0; g < N; ++g) out[g] = kSentinel;
  const uint32_t n = N - 2;
  zex::KernelException e = thrown([&] { env().stream.launch(k, cfg(), out.get(), in.get(), n); });
  expect_bounds(e, "helper_then_barrier", "fetch", 2, n, n, N - 1);
  if (level() >= 2) {
    ASSERT_GE(e.frames().size(), 2u) << e.what();
    EXPECT_EQ(e.frames()[0].function, "fetch") << e.what();
    EXPECT_EQ(e.frames()[1].function, "helper_then_barrier") << e.what();
  }
  for (uint32_t g = 0; g + 3 < N; ++g) EXPECT_EQ(out[g], expected(g)) << g;
  for (uint32_t g = n; g < N; ++g) EXPECT_EQ(out[g], kSentinel) << "thrower " << g << "'s store happened";
}

// A throw inside a loop that contains barriers: the thrower arrives at every later barrier.
TEST_P(Barriers, LoopWithBarrier) {
  constexpr uint32_t iters = 3;
  Usm<float> in(N * iters), out(N, kSentinel);
  for (uint32_t i = 0; i < N * iters; ++i) in[i] = static_cast<float>(i % 13);
  auto expected = [&](uint32_t g) {
    const uint32_t base = g / G * G, t = g % G;
    float acc = 0.0f;
    for (uint32_t k = 0; k < iters; ++k) acc += in[base + (t + k) % G + k * N];
    return acc;
  };
  zex::Kernel k = kernel("loop_barrier");
  env().stream.launch(k, cfg(), out.get(), in.get(), N * iters, iters);
  env().stream.synchronize();
  for (uint32_t g = 0; g < N; ++g) EXPECT_EQ(out[g], expected(g)) << g;

  for (uint32_t g = 0; g < N; ++g) out[g] = kSentinel;
  const uint32_t n = N * iters - 3;  // the last 3 work-items throw in the last iteration
  zex::KernelException e = thrown([&] { env().stream.launch(k, cfg(), out.get(), in.get(), n, iters); });
  expect_bounds(e, "loop_barrier", "loop", 3, n, n, N * iters - 1);
  for (uint32_t g = 0; g + G < N; ++g) EXPECT_EQ(out[g], expected(g)) << g;
  for (uint32_t g = N - 3; g < N; ++g) EXPECT_EQ(out[g], kSentinel) << "thrower " << g << "'s store happened";
  // The stream works on.
  env().stream.launch(k, cfg(), out.get(), in.get(), N * iters, iters);
  env().stream.synchronize();
  EXPECT_EQ(out[N - 1], expected(N - 1));
}

// Rodinia particlefilter's likelihood shape (item 6): the throws are in a value-returning helper and
// in a loop before the barriers; a group without a thrower reduces exactly what the host reduces.
TEST_P(Barriers, Likelihood) {
  constexpr uint32_t ones = 5, img_n = N + 6 + 4 + 1;  // the largest index: i + 6 + offs[4]
  constexpr uint32_t kUnset = 0xdeadbeefu;
  Usm<uint32_t> partial(kGroups, kUnset), weights(N, kUnset), seed(N), img(img_n), offs(ones);
  for (uint32_t i = 0; i < N; ++i) seed[i] = i * 2654435761u;
  for (uint32_t i = 0; i < img_n; ++i) img[i] = (i * 37u) % 101u;
  for (uint32_t j = 0; j < ones; ++j) offs[j] = j;
  auto x_of = [&](uint32_t i) { return (seed[i] * 1103515245u + 12345u) % 7u; };
  auto weight = [&](uint32_t i) {
    uint32_t sum = 0;
    for (uint32_t j = 0; j < ones; ++j) sum += img[i + x_of(i) + offs[j]];
    return sum / ones;
  };
  auto group_sum = [&](uint32_t grp, uint32_t particles) {
    uint32_t s = 0;
    for (uint32_t i = grp * G; i < (grp + 1) * G && i < particles; ++i) s += weight(i);
    return s;
  };
  zex::Kernel k = kernel("likelihood");
  const uint32_t particles = N - 5;  // the guard of the original: the last items only take part in the sum
  auto run = [&](uint32_t n, uint32_t in) {
    env().stream.launch(k, cfg(), partial.get(), weights.get(), seed.get(), img.get(), offs.get(), particles, n, in,
                        ones);
  };
  run(N, img_n);
  env().stream.synchronize();
  for (uint32_t grp = 0; grp < kGroups; ++grp) EXPECT_EQ(partial[grp], group_sum(grp, particles)) << grp;
  for (uint32_t i = 0; i < particles; ++i) EXPECT_EQ(weights[i], weight(i)) << i;

  // The image shrunk: the particles whose neighbourhood reaches past it throw in the loop.
  const uint32_t shrunk = particles + 4;
  uint32_t throwers = 0, first_thrower = N;
  for (uint32_t i = 0; i < particles; ++i)
    if (i + x_of(i) + offs[ones - 1] >= shrunk) {
      ++throwers;
      first_thrower = std::min(first_thrower, i);
    }
  ASSERT_GT(throwers, 0u);
  ASSERT_GE(first_thrower, G) << "the first group must stay free of throwers";
  for (uint32_t i = 0; i < N; ++i) weights[i] = kUnset;
  for (uint32_t grp = 0; grp < kGroups; ++grp) partial[grp] = kUnset;
  zex::KernelException e = thrown([&] { run(N, shrunk); });
  expect_bounds(e, "likelihood", "pf_ind", throwers, shrunk, shrunk, particles + 6 + ones);
  for (uint32_t grp = 0; grp < first_thrower / G; ++grp) EXPECT_EQ(partial[grp], group_sum(grp, particles)) << grp;
  for (uint32_t i = 0; i < first_thrower; ++i) EXPECT_EQ(weights[i], weight(i)) << i;
  for (uint32_t i = first_thrower; i < particles; ++i) {
    if (i + x_of(i) + offs[ones - 1] >= shrunk) {
      EXPECT_EQ(weights[i], kUnset) << "thrower " << i << "'s store happened";
    }
  }

  // The seed table shrunk: the last particles throw in the helper, before the loop.
  const uint32_t n = particles - 3;
  for (uint32_t i = 0; i < N; ++i) weights[i] = kUnset;
  e = thrown([&] { run(n, img_n); });
  expect_bounds(e, "likelihood", "pf_step", 3, n, n, particles - 1);
  if (level() >= 2) {
    ASSERT_GE(e.frames().size(), 2u) << e.what();
    EXPECT_EQ(e.frames()[0].function, "pf_step") << e.what();
    EXPECT_EQ(e.frames()[1].function, "likelihood") << e.what();
  }
  for (uint32_t i = 0; i < n; ++i) EXPECT_EQ(weights[i], weight(i)) << i;
  for (uint32_t i = n; i < particles; ++i) EXPECT_EQ(weights[i], kUnset) << "thrower " << i << "'s store happened";
  for (uint32_t grp = 0; grp + 1 < kGroups; ++grp) EXPECT_EQ(partial[grp], group_sum(grp, particles)) << grp;

  // The stream works on.
  run(N, img_n);
  env().stream.synchronize();
  EXPECT_EQ(partial[kGroups - 1], group_sum(kGroups - 1, particles));
}

std::string variant_name(const ::testing::TestParamInfo<Variant>& i) {
  return std::string(i.param.build) + "_level" + std::to_string(i.param.level);
}

INSTANTIATE_TEST_SUITE_P(Shapes, Barriers,
                         ::testing::Values(Variant{"O2", 0}, Variant{"O2", 1}, Variant{"O2", 2}, Variant{"O0", 0},
                                           Variant{"O0", 1}, Variant{"O0", 2}),
                         variant_name);

}  // namespace
