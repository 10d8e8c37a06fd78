// A stream's record of its launches since the last synchronize: one entry per run of launches of the
// same kernel at the same level, from the same host line, with the same group size. It names the
// kernel of any launch id for the exception (and its launch site, its module's strings and sites, its
// group size), and keeps each kernel (and its module) alive until the stream has synchronized past
// its launches. A loop launching from one line stays one run: a launch costs a few compares and no
// allocation.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace zex {
namespace detail {

/// `KernelState` is zex::Kernel's shared state (private to Kernel; the stream names it).
template <class KernelState>
class LaunchRecord {
 public:
  struct Run {
    uint64_t first_id;
    int level;  // the variant launched (detail::variant_of in <zex/module.hpp>): a level, maybe with early stop
    std::shared_ptr<KernelState> kernel;
    const char* file;  // the launch site (LaunchAt): a string literal, compared by address
    uint32_t line;
    uint32_t group[3];  // the work-group size: a report's group and local ids derive from its global id
  };

  /// True if a launch of `kernel` at `level` from file:line with group size `group` continues the
  /// last run (else it starts one).
  bool continues(const KernelState* kernel, int level, const char* file, uint32_t line,
                 const uint32_t group[3]) const noexcept {
    if (runs_.empty()) return false;
    const Run& r = runs_.back();
    return r.kernel.get() == kernel && r.level == level && r.file == file && r.line == line &&
           r.group[0] == group[0] && r.group[1] == group[1] && r.group[2] == group[2];
  }
  /// Makes room for one more run before the launch is appended, so that recording it after cannot fail.
  /// @throws std::bad_alloc
  void reserve_one() { runs_.reserve(runs_.size() + 1); }
  /// Records a run (after reserve_one(): never throws).
  void start(Run r) noexcept { runs_.push_back(std::move(r)); }

  /// The run of launch `id` (the last one that starts at or before it), or null.
  const Run* find(uint64_t id) const noexcept {
    size_t lo = 0, hi = runs_.size();  // runs are in launch order
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (runs_[mid].first_id <= id) lo = mid + 1;
      else hi = mid;
    }
    return lo == 0 ? nullptr : &runs_[lo - 1];
  }

  bool empty() const noexcept { return runs_.empty(); }
  void clear() noexcept { runs_.clear(); }

 private:
  std::vector<Run> runs_;
};

}  // namespace detail
}  // namespace zex
