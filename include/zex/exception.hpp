// zex::KernelException: what the host catches when a work-item threw. The last step of an
// exception's data path (device library -> report, <zex/abi.h> -> src/runtime/decoder.hpp -> here).
#pragma once

#include <zex/abi.h>
#include <zex/error.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace zex {

/// One entry of a kernel exception's stacktrace (debug level 2, or 1 for a numbered throw site).
/// frames()[0] prints as [1].
struct Frame {
  std::string function;  ///< e.g. the kernel's name for ZEX_THROW in a kernel
  std::string file;      ///< empty when the line is not known
  uint32_t line = 0;     ///< 0 = not known (a caller in a module without debug information)
};

/// Where on the host a kernel was launched: the caller of Stream::launch.
struct SourceLocation {
  std::string file;  ///< as the compiler spelled it (__builtin_FILE(): often an absolute path)
  uint32_t line = 0;
  bool operator==(const SourceLocation& o) const { return line == o.line && file == o.file; }
};

/// Everything a decoded report says, before it becomes an exception. Public so that runtimes that
/// check slots themselves (SlabPool::check) and tests can build a KernelException from parts.
struct KernelExceptionInfo {
  int debug_level = 1;           ///< 0, 1 or 2: what the report holds
  std::string name;              ///< e.g. "BoundsError"; empty when not recorded (level 0)
  std::string reason;            ///< e.g. "Out-of-bounds array access"; empty when not recorded
  std::string kernel_name;       ///< the kernel of the launch that threw
  std::string device_name;
  uint64_t launch_id = 0;
  std::optional<std::array<uint64_t, 3>> global_id, group_id, local_id;  ///< level 2 only
  /// At most 16, innermost first: from the site table from level 1 up for a throw site zex numbered
  /// at link time (ABI version 3), else recorded by the device at level 2 only.
  std::vector<Frame> frames;
  /// Frames in the throw's whole call chain: more than frames.size() when the chain was cut at 16;
  /// 0 when not known (device-recorded frames), read as frames.size().
  uint32_t frame_depth = 0;
  /// The report's ABI version. Anything else than ZEX_ABI_VERSION means the report was written by a
  /// device library this zex does not know, and nothing past the version was interpreted.
  uint32_t abi_version = ZEX_ABI_VERSION;
  /// Operand values the throw recorded (level >= 1, ABI version >= 2), e.g. {index, length}; at most 2.
  std::vector<uint64_t> values;
  uint32_t value_kind = ZEX_VALUES_PLAIN;  ///< ZEX_VALUES_*: how the message labels the values
  /// Work-items that threw since the stream's report was last reset (level >= 1; 1 at level 0,
  /// where nothing is counted).
  uint64_t thrower_count = 1;
  /// The host line that launched the kernel (zex::Stream launches; nullopt on SlabPool::check).
  std::optional<SourceLocation> launch_site;
  /// The graph execution that threw, 0-based, counted per zex::Graph since its creation; nullopt for
  /// a stream's launch or a slot a runtime checks.
  std::optional<uint64_t> execution;
  /// Executions that threw among those the raising synchronize waited for, this one included (0 when
  /// not from a graph).
  uint64_t executions_thrown = 0;
  /// Executions that synchronize waited for (0 when not from a graph).
  uint64_t executions_synchronized = 0;
  /// The graph's name; empty when not from a graph or the graph has none.
  std::string graph_name;
};

/// The language a message speaks to: its fix-it hints name the caller's way of choosing a debug
/// level (C++: LaunchConfig::debug_level; C: zex_launch_config_t.debug_level; Python and Julia: the
/// debug_level= keyword of the launch). Bindings pass theirs to format_kernel_exception().
enum class Language { Cpp = 0, C = 1, Python = 2, Julia = 3 };

/// The message of a kernel exception (docs/design.md, "Debug levels and messages"), with the hints in
/// `lang`'s terms; KernelException::what() is this with Language::Cpp. Compiled: src/runtime/exception.cpp.
std::string format_kernel_exception(const KernelExceptionInfo& info, Language lang = Language::Cpp);

namespace detail {
/// How `lang` names a launch's fields: the fix-it hints of a kernel exception and the messages of the
/// launch's own checks (Stream::launch_args, which the C API and Python reach) use the same words.
struct LaunchNames {
  const char* debug_level;    ///< "LaunchConfig::debug_level", "zex_launch_config_t.debug_level", ...
  const char* extents;        ///< "LaunchConfig::groups and group_size", ...
  const char* one_dimension;  ///< how to write a one-dimensional launch
};
const LaunchNames& launch_names(Language lang);

/// The text of KernelException::what() for `info`: format_kernel_exception(info, Language::Cpp).
inline std::string kernel_exception_message(const KernelExceptionInfo& info) {
  return format_kernel_exception(info, Language::Cpp);
}
}  // namespace detail

/// A work-item threw in a kernel launched on a zex::Stream (or on a slot a runtime checks itself).
/// what() is the message of docs/design.md ("Debug levels and messages"): at level 0 that an exception was thrown, in which kernel,
/// on which device, and a hint to use debug_level=1; at level 1 also the exception's name and
/// reason and a hint to use debug_level=2; at level 2 also the work-item, its work-group and the
/// stacktrace. The stream that threw stays usable.
class KernelException : public std::runtime_error, public Error {
 public:
  explicit KernelException(KernelExceptionInfo info)
      : std::runtime_error(detail::kernel_exception_message(info)), info_(std::move(info)) {}
  /// With the reports of other executions that threw in the same synchronize (zex::Queue).
  KernelException(KernelExceptionInfo info, std::vector<KernelExceptionInfo> others)
      : KernelException(std::move(info)) {
    if (!others.empty()) others_ = std::make_shared<const std::vector<KernelExceptionInfo>>(std::move(others));
  }

  /// The exception's name, e.g. "BoundsError"; empty when not recorded (debug level 0).
  const std::string& name() const noexcept { return info_.name; }
  /// The reason, e.g. "Out-of-bounds array access"; empty when not recorded.
  const std::string& reason() const noexcept { return info_.reason; }
  /// The name of the kernel whose launch threw.
  const std::string& kernel_name() const noexcept { return info_.kernel_name; }
  /// The Level Zero device's name.
  const std::string& device_name() const noexcept { return info_.device_name; }
  /// The debug level the throwing module was built for (0, 1 or 2).
  int debug_level() const noexcept { return info_.debug_level; }
  /// The launch id zex gave the launch that threw (counts up from 1 per stream).
  uint64_t launch_id() const noexcept { return info_.launch_id; }
  /// Global id of the work-item that threw; set at debug level 2.
  const std::optional<std::array<uint64_t, 3>>& global_id() const noexcept { return info_.global_id; }
  /// Its work-group id; set at debug level 2.
  const std::optional<std::array<uint64_t, 3>>& group_id() const noexcept { return info_.group_id; }
  /// Its local id within the work-group; set at debug level 2.
  const std::optional<std::array<uint64_t, 3>>& local_id() const noexcept { return info_.local_id; }
  /// The stacktrace, innermost first (frames()[0] is [1] in the message); set at debug level 2, and
  /// from level 1 up for a throw site zex numbered at link time.
  const std::vector<Frame>& frames() const noexcept { return info_.frames; }
  /// Frames in the whole call chain: more than frames().size() when only the innermost 16 were
  /// kept; 0 when not known (then frames().size() is all there is to say).
  uint32_t frame_depth() const noexcept { return info_.frame_depth; }
  /// The ABI version of the report (ZEX_ABI_VERSION unless the report came from an unknown device
  /// library, in which case only the kernel and device names are meaningful).
  uint32_t abi_version() const noexcept { return info_.abi_version; }
  /// Operand values the throw recorded (ZEX_CHECK_BOUNDS: {index, length}; ZEX_THROW_VALUES: {a, b});
  /// empty when none were recorded (level 0, a throw without values, a version-1 report).
  const std::vector<uint64_t>& values() const noexcept { return info_.values; }
  /// How many work-items threw (at least 1): counted on the device from level 1 up, over the launch
  /// that threw and any later launch of the stream before the report was read (docs/integration.md).
  /// The report shown is the first to claim it. Always 1 at level 0.
  uint64_t thrower_count() const noexcept { return info_.thrower_count; }
  /// The file and line of the Stream::launch call whose kernel threw; nullopt when unknown (an
  /// exception raised by SlabPool::check).
  const std::optional<SourceLocation>& launch_site() const noexcept { return info_.launch_site; }
  /// The graph execution that threw (0-based per graph); nullopt for a stream's launch.
  const std::optional<uint64_t>& execution() const noexcept { return info_.execution; }
  /// How many of the executions the synchronize waited for threw (at least 1 for a graph's exception,
  /// 0 for a stream's).
  uint64_t executions_thrown() const noexcept { return info_.executions_thrown; }
  /// The reports of the other executions that threw in the same synchronize, in execution order (at
  /// most Graph::kMaxKept; executions_thrown() counts them all).
  const std::vector<KernelExceptionInfo>& others() const noexcept {
    static const std::vector<KernelExceptionInfo> none;
    return others_ ? *others_ : none;
  }
  /// All of the above in one struct.
  const KernelExceptionInfo& info() const noexcept { return info_; }
  const char* message() const noexcept override { return what(); }

 private:
  KernelExceptionInfo info_;
  std::shared_ptr<const std::vector<KernelExceptionInfo>> others_;  // shared: exceptions are copied when thrown
};

}  // namespace zex
