// What a launch is given: its extents (Dim3), its configuration (LaunchConfig, and LaunchAt, which
// records the caller's line), __local arguments (zex::local) and run-time arguments (KernelArg) for
// bindings. Plain values; Stream::launch (<zex/stream.hpp>) takes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace zex {

namespace detail {
[[noreturn]] void throw_bad_extent(long long v);
[[noreturn]] void throw_bad_extent(unsigned long long v);
}  // namespace detail

/// Three extents (x, y, z), each at least 0 and below 2^32. Built from any integers, so that
/// `cfg.groups = {n / 256, 1, 1}` compiles with a size_t n; omitted extents are 1 (`{64}` is
/// {64, 1, 1}).
struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;

  constexpr Dim3() = default;
  /// @throws std::invalid_argument if an extent is negative or does not fit in 32 bits
  template <class X, class Y = uint32_t, class Z = uint32_t>
  Dim3(X x_, Y y_ = 1, Z z_ = 1) : x(narrow(x_)), y(narrow(y_)), z(narrow(z_)) {}  // NOLINT: implicit on purpose

  uint32_t& operator[](size_t i) noexcept { return i == 0 ? x : i == 1 ? y : z; }
  uint32_t operator[](size_t i) const noexcept { return i == 0 ? x : i == 1 ? y : z; }
  bool operator==(const Dim3& o) const noexcept { return x == o.x && y == o.y && z == o.z; }
  bool operator!=(const Dim3& o) const noexcept { return !(*this == o); }

 private:
  template <class T>
  static uint32_t narrow(T v) {
    static_assert(std::is_integral<T>::value, "zex::Dim3: extents are integers");
    if constexpr (std::is_signed<T>::value) {
      if (v < 0 || static_cast<unsigned long long>(v) > 0xffffffffull) detail::throw_bad_extent(static_cast<long long>(v));
    } else {
      if (static_cast<unsigned long long>(v) > 0xffffffffull) detail::throw_bad_extent(static_cast<unsigned long long>(v));
    }
    return static_cast<uint32_t>(v);
  }
};

/// How to launch: the number of work-groups and their size in each dimension, the debug level
/// (0, 1 or 2; -1 = the stream's default, from ZEX_DEBUG_LEVEL), and early stop.
struct LaunchConfig {
  Dim3 groups;      ///< work-groups in x, y, z
  Dim3 group_size;  ///< work-items per work-group in x, y, z
  int debug_level = -1;
  /// Early stop (docs/integration.md, "Early stop"): once a work-item has thrown into the stream's
  /// slot (or the graph execution's), the work-groups of this launch that start after it return at
  /// once, and so does this launch if an earlier launch since the last synchronize (in the graph: of
  /// the same execution) threw. A kernel with work-group barriers or other group instructions stops
  /// only for an earlier launch's throw (its work-groups must decide alike). The launch still
  /// completes and the throw is raised as ever. Costs one load of the claim word per work-item when
  /// nothing was thrown, and a second build of the module (per level) on the first such launch.
  bool stop_on_throw = false;
};

/// The LaunchConfig parameter of Stream::launch, with the host line of the call: implicitly built from
/// a LaunchConfig, or from the braced form a LaunchConfig takes (`{{n}, {64}}`, `{g, b, 2}`), its
/// default arguments are evaluated at the caller's line, so `stream.launch(k, cfg, ...)` records where
/// it was called without changing how it is called (C++17 has no std::source_location). The file is a
/// string literal of static storage, so recording it allocates nothing.
struct LaunchAt {
  LaunchConfig cfg;
  const char* file;
  uint32_t line;
  LaunchAt(const LaunchConfig& c, const char* f = __builtin_FILE(),  // NOLINT: implicit on purpose
           uint32_t l = __builtin_LINE()) noexcept
      : cfg(c), file(f), line(l) {}
  /// The braced forms of a LaunchConfig: groups, group size and (optionally) the debug level.
  LaunchAt(Dim3 groups, Dim3 group_size, int debug_level = -1,  // NOLINT: implicit on purpose
           const char* f = __builtin_FILE(), uint32_t l = __builtin_LINE()) noexcept
      : cfg{groups, group_size, debug_level}, file(f), line(l) {}
  /// ... and early stop: `{{n}, {64}, -1, true}`.
  LaunchAt(Dim3 groups, Dim3 group_size, int debug_level, bool stop_on_throw,  // NOLINT: implicit on purpose
           const char* f = __builtin_FILE(), uint32_t l = __builtin_LINE()) noexcept
      : cfg{groups, group_size, debug_level, stop_on_throw}, file(f), line(l) {}
};

/// A __local (work-group local memory) kernel argument of `bytes` bytes: pass zex::local(n).
struct LocalMemory {
  size_t bytes;
};
inline LocalMemory local(size_t bytes) noexcept { return LocalMemory{bytes}; }

/// One argument of Stream::launch_args(): `size` bytes at `value`, or a __local parameter of `size`
/// bytes when `value` is null.
struct KernelArg {
  size_t size = 0;
  const void* value = nullptr;
};

/// The default debug level: ZEX_DEBUG_LEVEL (0, 1 or 2), 1 when unset.
/// @throws std::invalid_argument naming the variable if it holds anything else
int default_debug_level();

}  // namespace zex
