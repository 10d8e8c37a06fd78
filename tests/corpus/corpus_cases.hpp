// The third-party kernel corpus (tests/corpus/README.md): for each kernel, its program, its launch
// geometry, its buffers (with deterministic contents) and its arguments, as the benchmark's host code
// sets them up, and the shrunk buffer whose bounds check the exception test hits. Shared by the
// tests (corpus_test.cpp, scale 1) and the benchmark (bench/corpus/, larger scales).
#pragma once

#include <zex/stream.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace corpus {

enum class Elem : uint8_t { F32, I32 };

/// A __global buffer: `count` elements; filled by fill() from `seed`.
struct Buffer {
  Elem elem;
  size_t count;
  uint32_t seed;
};

/// One argument of the unchanged kernel, in its parameter order.
struct Arg {
  enum Kind : uint8_t { Buf, I32, F32, Local } kind;
  int32_t i = 0;     // the buffer's index (Buf) or the value (I32)
  float f = 0;       // F32
  size_t bytes = 0;  // Local
};
inline Arg buf(int b) { return {Arg::Buf, b, 0, 0}; }
inline Arg i32(int32_t v) { return {Arg::I32, v, 0, 0}; }
inline Arg f32(float v) { return {Arg::F32, 0, v, 0}; }
inline Arg local(size_t bytes) { return {Arg::Local, 0, 0, bytes}; }

/// The shrunk-length test: buffer `buffer`'s length argument becomes `length`; exactly one work-item
/// then fails the check marked "SHRINK:<kernel>" in the checked copy, with index `index`.
struct Shrink {
  int buffer;
  uint64_t length;
  uint64_t index;
  std::array<uint64_t, 3> global_id;
};

struct Case {
  std::string suite;    // "polybench" or "rodinia": the folder of the unchanged source
  std::string program;  // the source's file name without .cl (the same in checked/)
  std::string kernel;
  zex::Dim3 groups, group_size;
  std::vector<Buffer> buffers;  // in the order of the checked kernel's length parameters
  std::vector<Arg> args;
  bool barriers = false;  // __local memory and work-group barriers (a throw before one: issue 24 item 5)
  Shrink shrink{};
  /// Why the unchanged kernel's zex::Module is known to be refused (empty: it is not): the tests then
  /// skip unless ZEX_CORPUS_ALL=1.
  std::string known_issue;
  /// Why the checked copy is known to compute wrongly in bounds: with its checks as plain returns,
  /// raw on zex-cpu (returns_issue), and through zex (checked_issue). Empty: it does not; else the
  /// test skips with this reason unless ZEX_CORPUS_ALL=1.
  std::string returns_issue = {}, checked_issue = {};
  /// Why zex-cpu is known to run even the unchanged kernel wrongly (it then writes no buffer at all):
  /// RawVsZex still compares, but does not require that the kernel wrote something.
  std::string raw_issue = {};

  std::string name() const { return program + "_" + kernel; }
};

/// Deterministic contents, positive and nonzero for floats (divisors stay finite), small for ints
/// (Rodinia's pathfinder uses gpuSrc's values as indexes into outputBuffer).
inline void fill(const Buffer& b, void* p) {
  for (size_t i = 0; i < b.count; ++i) {
    const uint32_t v = static_cast<uint32_t>((i * 37u + b.seed * 11u) % 41u);
    if (b.elem == Elem::F32) {
      const float f = static_cast<float>(v + 1) * 0.125f;
      std::memcpy(static_cast<char*>(p) + 4 * i, &f, 4);
    } else {
      const int32_t n = static_cast<int32_t>(v);
      std::memcpy(static_cast<char*>(p) + 4 * i, &n, 4);
    }
  }
}

inline size_t bytes(const Buffer& b) { return 4 * b.count; }

inline Buffer f32s(size_t n, uint32_t seed) { return {Elem::F32, n, seed}; }
inline Buffer i32s(size_t n, uint32_t seed) { return {Elem::I32, n, seed}; }

/// The corpus at problem size `s` (1: the tests' small inputs). The geometry follows each suite's host
/// code (PolyBench: 2-D groups of 8x8 or 1-D groups of 64 over the padded problem; Rodinia: its block
/// sizes), with problem sizes that leave partial groups where the original's guards matter.
inline std::vector<Case> cases(uint32_t s = 1) {
  const std::string kItem4 =
      "issue 24 item 4 (PoCL 3.1 runs a kernel that returns early before a barrier wrongly, even when no "
      "work-item takes the return)";
  const int n = static_cast<int>(20 * s);  // PolyBench matrix extent
  const auto un = static_cast<size_t>(n);
  const auto g8 = static_cast<uint32_t>((n + 7) / 8), g64 = static_cast<uint32_t>((n + 63) / 64);
  const auto last = static_cast<uint64_t>(n - 1);
  std::vector<Case> v;
  auto add = [&](Case c) { v.push_back(std::move(c)); };
  // gemm(a, b, c, alpha, beta, ni, nj, nk): c = alpha a b + beta c
  add({"polybench", "gemm", "gemm", {g8, g8}, {8, 8}, {f32s(un * un, 1), f32s(un * un, 2), f32s(un * un, 3)},
       {buf(0), buf(1), buf(2), f32(1.5f), f32(0.75f), i32(n), i32(n), i32(n)}, false,
       {2, un * un - 1, un * un - 1, {last, last, 0}}, ""});
  add({"polybench", "2mm", "mm2_kernel1", {g8, g8}, {8, 8}, {f32s(un * un, 4), f32s(un * un, 5), f32s(un * un, 6)},
       {buf(0), buf(1), buf(2), i32(n), i32(n), i32(n), i32(n), f32(1.25f), f32(0.5f)}, false,
       {0, un * un - 1, un * un - 1, {last, last, 0}}, ""});
  add({"polybench", "atax", "atax_kernel1", {g64}, {64}, {f32s(un * un, 7), f32s(un, 8), f32s(un, 9)},
       {buf(0), buf(1), buf(2), i32(n), i32(n)}, false, {2, un - 1, un - 1, {last, 0, 0}}, ""});
  add({"polybench", "bicg", "bicgKernel1", {g64}, {64}, {f32s(un * un, 10), f32s(un, 11), f32s(un, 12)},
       {buf(0), buf(1), buf(2), i32(n), i32(n)}, false, {2, un - 1, un - 1, {last, 0, 0}}, ""});
  add({"polybench", "gesummv", "gesummv_kernel", {g64}, {64},
       {f32s(un * un, 13), f32s(un * un, 14), f32s(un, 15), f32s(un, 16), f32s(un, 17)},
       {buf(0), buf(1), buf(2), buf(3), buf(4), f32(1.5f), f32(2.5f), i32(n)}, false,
       {1, un * un - 1, un * un - 1, {last, 0, 0}}, ""});
  // syrk: c (nj x nj) = alpha a a^T + beta c, a is nj x ni
  add({"polybench", "syrk", "syrk_kernel", {g8, g8}, {8, 8}, {f32s(un * un, 18), f32s(un * un, 19)},
       {buf(0), buf(1), f32(1.5f), f32(0.25f), i32(n), i32(n)}, false, {1, un * un - 1, un * un - 1, {last, last, 0}},
       ""});
  add({"polybench", "covariance", "mean_kernel", {g64}, {64}, {f32s(un, 20), f32s(un * un, 21)},
       {buf(0), buf(1), f32(static_cast<float>(n)), i32(n), i32(n)}, false,
       {1, un * un - 1, un * un - 1, {last, 0, 0}}, ""});
  {  // doitgen: nr x nq x np, the last r
    const size_t nr = 4, cube = nr * un * un;
    add({"polybench", "doitgen", "doitgen_kernel1", {g8, g8}, {8, 8}, {f32s(cube, 22), f32s(un * un, 23), f32s(cube, 24)},
         {i32(static_cast<int>(nr)), i32(n), i32(n), buf(0), buf(1), buf(2), i32(static_cast<int>(nr) - 1)}, false,
         {2, cube - 1, cube - 1, {last, last, 0}}, ""});
  }
  add({"polybench", "fdtd2d", "fdtd_kernel1", {g8, g8}, {8, 8},
       {f32s(8, 25), f32s(un * un, 26), f32s(un * un, 27), f32s(un * un, 28)},
       {buf(0), buf(1), buf(2), buf(3), i32(3), i32(n), i32(n)}, false, {3, un * un - 1, un * un - 1, {last, last, 0}},
       ""});
  {  // jacobi-1d over n2 points: A[n2-1] is read only by i = n2-2
    const size_t n2 = un * un;
    const auto g = static_cast<uint32_t>((n2 + 63) / 64);
    add({"polybench", "jacobi1D", "runJacobi1D_kernel1", {g}, {64}, {f32s(n2, 29), f32s(n2, 30)},
         {buf(0), buf(1), i32(static_cast<int>(n2))}, false, {0, n2 - 1, n2 - 1, {n2 - 2, 0, 0}}, ""});
  }
  add({"polybench", "2DConvolution", "Convolution2D_kernel", {g8, g8}, {8, 8}, {f32s(un * un, 31), f32s(un * un, 32)},
       {buf(0), buf(1), i32(n), i32(n)}, false, {0, un * un - 1, un * un - 1, {last - 1, last - 1, 0}}, ""});
  add({"polybench", "mvt", "mvt_kernel1", {g64}, {64}, {f32s(un * un, 33), f32s(un, 34), f32s(un, 35)},
       {buf(0), buf(1), buf(2), i32(n)}, false, {1, un - 1, un - 1, {last, 0, 0}}, ""});

  // Rodinia. nn: LatLong records (two floats each).
  {
    const size_t recs = 100 * s;
    const auto g = static_cast<uint32_t>((recs + 63) / 64);
    add({"rodinia", "nearestNeighbor_kernel", "NearestNeighbor", {g}, {64}, {f32s(2 * recs, 36), f32s(recs, 37)},
         {buf(0), buf(1), i32(static_cast<int>(recs)), f32(30.0f), f32(90.0f)}, false,
         {1, recs - 1, recs - 1, {recs - 1, 0, 0}}, ""});
  }
  {  // kmeans: feature is nfeatures x npoints (swapped), clusters nclusters x nfeatures
    const size_t points = 100 * s, features = 8, clusters = 5;
    const auto g = static_cast<uint32_t>((points + 63) / 64);
    add({"rodinia", "kmeans", "kmeans_kernel_c", {g}, {64},
         {f32s(points * features, 38), f32s(clusters * features, 39), i32s(points, 40)},
         {buf(0), buf(1), buf(2), i32(static_cast<int>(points)), i32(static_cast<int>(clusters)),
          i32(static_cast<int>(features)), i32(0), i32(0)},
         false, {2, points - 1, points - 1, {points - 1, 0, 0}}, ""});
  }
  {  // gaussian: Fan1 then Fan2 at step t, size x size
    const int size = static_cast<int>(16 * s), t = 1;
    const auto us = static_cast<size_t>(size);
    // Fan1: the largest m index, size * (size - 1) + t, is written by globalId size - 2 - t.
    add({"rodinia", "gaussianElim_kernels", "Fan1", {static_cast<uint32_t>((size + 63) / 64)}, {64},
         {f32s(us * us, 41), f32s(us * us, 42), f32s(us, 43)}, {buf(0), buf(1), buf(2), i32(size), i32(t)}, false,
         {0, us * (us - 1) + t, us * (us - 1) + t, {us - 2 - t, 0, 0}}, ""});
    const auto g = static_cast<uint32_t>((size + 7) / 8);
    add({"rodinia", "gaussianElim_kernels", "Fan2", {g, g}, {8, 8},
         {f32s(us * us, 44), f32s(us * us, 45), f32s(us, 46)}, {buf(0), buf(1), buf(2), i32(size), i32(t)}, false,
         {1, us * us - 1, us * us - 1, {us - 2 - t, us - 1 - t, 0}}, ""});
  }
  {  // pathfinder: BLOCK_SIZE 16 (the group size), pyramid height 2, HALO 1, one step from row 0
    const int cols = static_cast<int>(48 * s), rows = 4, pyramid = 2, block = 16;
    const int small = block - pyramid * 2;
    const auto groups = static_cast<uint32_t>(cols / small + (cols % small == 0 ? 0 : 1));
    const auto uc = static_cast<size_t>(cols);
    // gpuSrc[cols-1] is loaded (before the first barrier) by one work-item only: the one in the last
    // block whose xidx is cols - 1 (blocks overlap by the halo, the last one's does not reach it twice).
    const uint64_t last_bx = groups - 1, blkx = small * last_bx - pyramid;
    add({"rodinia", "pathfinder_kernels", "dynproc_kernel", {groups}, {static_cast<uint32_t>(block)},
         {i32s(uc * (rows - 1), 47), i32s(uc, 48), i32s(uc, 49), i32s(64, 50)},
         {i32(pyramid), buf(0), buf(1), buf(2), i32(cols), i32(rows), i32(0), i32(pyramid), i32(1),
          local(4 * block), local(4 * block), buf(3)},
         true, {1, uc - 1, uc - 1, {last_bx * block + (uc - 1 - blkx), 0, 0}}, "", kItem4});
  }
  {  // hotspot: BLOCK_SIZE 16, pyramid height 2 (small blocks of 12), border 2
    const int grid = static_cast<int>(24 * s), pyramid = 2, block = 16, small = block - 2 * pyramid;
    const auto blocks = static_cast<uint32_t>(grid / small + (grid % small == 0 ? 0 : 1));
    const auto ug = static_cast<size_t>(grid);
    const uint64_t lb = blocks - 1, blk = small * lb - pyramid, l = ug - 1 - blk;
    add({"rodinia", "hotspot_kernel", "hotspot", {blocks, blocks}, {16, 16},
         {f32s(ug * ug, 51), f32s(ug * ug, 52), f32s(ug * ug, 53)},
         {i32(pyramid), buf(0), buf(1), buf(2), i32(grid), i32(grid), i32(pyramid), i32(pyramid), f32(0.5f),
          f32(1.5f), f32(1.5f), f32(40.0f), f32(0.001f)},
         true, {1, ug * ug - 1, ug * ug - 1, {lb * block + l, lb * block + l, 0}}, "", kItem4, "",
         "issue 24 item 4: the loop's `if (i == iteration - 1) break;` before its second barrier leaves "
         "`computed` false in every work-item on PoCL 3.1, so temp_dst is never written"});
  }
  {  // nw: BLOCK_SIZE 16, (cols-1) = 32 s, the diagonal blk = 2 of the upper-left pass
    const int cols = static_cast<int>(32 * s + 1), blk = 2, block = 16;
    const auto uc = static_cast<size_t>(cols);
    // The largest reference index: block (0, 1), tx 15, ty 15.
    const uint64_t top = static_cast<uint64_t>(cols) * block * (blk - 1) + 15 + (cols + 1) + cols * 15;
    add({"rodinia", "nw", "nw_kernel1", {static_cast<uint32_t>(blk)}, {static_cast<uint32_t>(block)},
         {i32s(uc * uc, 54), i32s(uc * uc, 55), i32s(1, 56)},
         {buf(0), buf(1), buf(2), local(4 * (block + 1) * (block + 1)), local(4 * block * block), i32(cols), i32(10),
          i32(blk), i32((cols - 1) / block), i32(cols - 1), i32(0), i32(0)},
         true, {0, top, top, {15, 0, 0}},
         "", ""});  // item 7 (zex orders the blocks) and item 4 (zex-cpu's single exit) landed: it runs
  }
  {  // backprop: in = 16 * blocks input units, hid = 16 hidden units
    const int blocks = static_cast<int>(2 * s), in = 16 * blocks, hid = 16;
    const auto ui = static_cast<size_t>(in), uh = static_cast<size_t>(hid);
    const auto gy = static_cast<uint32_t>(blocks);
    add({"rodinia", "backprop_kernel", "bpnn_layerforward_ocl", {1, gy}, {16, 16},
         {f32s(ui + 1, 57), f32s(uh + 1, 58), f32s((ui + 1) * (uh + 1), 59), f32s(static_cast<size_t>(blocks) * uh, 60)},
         {buf(0), buf(1), buf(2), buf(3), local(4 * 16), local(4 * 16 * 16), i32(in), i32(hid)}, true,
         // input_cuda[in] is loaded by tx 0 of the last row of the last block only
         {0, ui, ui, {0, 16 * static_cast<uint64_t>(blocks) - 1, 0}}, "", ""});  // item 4 landed: runs
    const uint64_t top = (uh + 1) * 16 * (gy - 1) + (uh + 1) * 15 + 15 + 1 + (uh + 1);
    add({"rodinia", "backprop_kernel", "bpnn_adjust_weights_ocl", {1, gy}, {16, 16},
         {f32s(uh + 1, 61), f32s(ui + 1, 62), f32s((ui + 1) * (uh + 1), 63), f32s((ui + 1) * (uh + 1), 64)},
         {buf(0), i32(hid), buf(1), i32(in), buf(2), buf(3)}, true,
         {2, top, top, {15, 16 * static_cast<uint64_t>(blocks) - 1, 0}}, ""});
  }
  return v;
}

}  // namespace corpus
