// The text of zex::KernelException::what(): built once per exception, so out of line.
#include <zex/exception.hpp>

#include <string>

namespace zex {
namespace detail {

namespace {

std::string triple(const std::array<uint64_t, 3>& v) {
  return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ", " + std::to_string(v[2]) + ")";
}

bool starts_with_vowel(const std::string& s) {
  if (s.empty()) return false;
  switch (s[0]) {
    case 'A': case 'E': case 'I': case 'O': case 'U':
    case 'a': case 'e': case 'i': case 'o': case 'u':
      return true;
    default:
      return false;
  }
}

// The file's last path component: the message names the file, the exception keeps the full path
// (build paths are long and differ between machines).
std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of("/\\");
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string values_text(const KernelExceptionInfo& info) {
  const auto& v = info.values;
  if (v.empty()) return {};
  if (info.value_kind == ZEX_VALUES_BOUNDS && v.size() == 2)
    return "index " + std::to_string(v[0]) + ", length " + std::to_string(v[1]);
  if (info.value_kind == ZEX_VALUES_MEMORY && v.size() == 2) {
    // The offset is the address minus the allocation's start, as 64 bits: one "before" it wraps, and
    // no allocation reaches 2^63 bytes, so the upper half reads as negative.
    const std::string offset = v[0] >= (uint64_t(1) << 63) ? "-" + std::to_string(uint64_t(0) - v[0]) + " (before the start)"
                                                           : std::to_string(v[0]);
    return "at byte offset " + offset + " of an allocation of " + std::to_string(v[1]) + " bytes";
  }
  std::string t = v.size() == 1 ? "value " : "values ";
  for (size_t i = 0; i < v.size(); ++i) t += (i ? ", " : "") + std::to_string(v[i]);
  return t;
}

// How the caller picks a debug level, in its own language: the hint must name something the reader
// can type.
const char* level_knob(Language lang) { return launch_names(lang).debug_level; }

void append_stacktrace(std::string& m, const KernelExceptionInfo& info) {
  if (info.frames.empty()) return;
  m += "\nStacktrace:";
  for (size_t i = 0; i < info.frames.size(); ++i) {
    const Frame& f = info.frames[i];
    m += "\n [" + std::to_string(i + 1) + "] " + f.function;
    // Line 0 is what a site table holds for a caller without debug information: say so rather
    // than print a made-up "file:0".
    if (f.line == 0)
      m += " (line unknown: the module has no debug information)";
    else
      m += " at " + f.file + ":" + std::to_string(f.line);
  }
  if (info.frame_depth > info.frames.size())
    m += "\n(" + std::to_string(info.frame_depth) + " frames; the innermost " + std::to_string(info.frames.size()) +
         " are shown)";
}

}  // namespace

// The launch's fields as each language spells them (the hints above, the launch's checks in stream.cpp).
const LaunchNames& launch_names(Language lang) {
  static const LaunchNames cpp{"LaunchConfig::debug_level", "LaunchConfig::groups and group_size",
                               "use {n, 1, 1} for one dimension"};
  static const LaunchNames c{"zex_launch_config_t.debug_level", "zex_launch_config_t.groups and group_size",
                             "use {n, 1, 1} for one dimension"};
  static const LaunchNames python{"the debug_level= keyword of stream.launch(...)",
                                  "the groups and group_size of stream.launch(...)", "an int n is (n, 1, 1)"};
  static const LaunchNames julia{"the debug_level= keyword of the launch", "the groups and group_size of the launch",
                                 "an integer n is (n, 1, 1)"};
  switch (lang) {
    case Language::C: return c;
    case Language::Python: return python;
    case Language::Julia: return julia;
    case Language::Cpp: break;
  }
  return cpp;
}

}  // namespace detail

std::string format_kernel_exception(const KernelExceptionInfo& info, Language lang) {
  using namespace detail;
  std::string where = " in kernel '" + info.kernel_name + "'";
  if (info.launch_site)
    where += " (launched at " + base_name(info.launch_site->file) + ":" + std::to_string(info.launch_site->line) + ")";
  if (info.execution) {
    where += " in execution " + std::to_string(*info.execution) + " of " +
             (info.graph_name.empty() ? std::string("a zex::Graph") : "graph '" + info.graph_name + "'");
    if (info.executions_synchronized > 0)
      where += " (" + std::to_string(info.executions_thrown) + " of " + std::to_string(info.executions_synchronized) +
               (info.executions_synchronized == 1 ? " execution" : " executions") + " threw" +
               (info.executions_thrown > 1 ? "; the first is shown)" : ")");
  }
  where += " on " + info.device_name;
  std::string m = "KernelException: ";
  if (info.abi_version < ZEX_ABI_VERSION_MIN || info.abi_version > ZEX_ABI_VERSION) {
    // docs/abi.md: a host must not interpret a report of a version it does not know.
    return m + "An exception was thrown" + where + ", but its report has ABI version " +
           std::to_string(info.abi_version) + ", which this zex (ABI version " +
           std::to_string(ZEX_ABI_VERSION) + ") cannot read (it reads versions " +
           std::to_string(ZEX_ABI_VERSION_MIN) + " to " + std::to_string(ZEX_ABI_VERSION) + "), so nothing else in it was interpreted.\nHint: the module was linked with "
           "a zex device library of another version; build it with this zex's zex::Module (or link "
           "the device library this zex installs, docs/abi.md).";
  }
  // A numbered throw site names itself at every level (its id is all the device stores): the name,
  // reason and frames are then shown at level 0 too.
  if (info.name.empty()) {
    m += "An exception was thrown" + where;
  } else {
    m += (starts_with_vowel(info.name) ? "An " : "A ") + info.name + " was thrown" + where;
  }
  if (!info.reason.empty()) m += ": " + info.reason;
  if (info.debug_level >= 1 && !info.values.empty())  // a memory check's continues its reason's sentence
    m += (info.value_kind == ZEX_VALUES_MEMORY && info.values.size() == 2 && !info.reason.empty() ? " " : ": ") +
         values_text(info);
  if (info.debug_level >= 1 && info.thrower_count > 1)
    m += "\n" + std::to_string(info.thrower_count) + " work-items threw; the first to claim the report is shown.";
  if (info.debug_level <= 0) {
    append_stacktrace(m, info);
    m += std::string("\nHint: launch with debug_level=1 (") + level_knob(lang) + " or ZEX_DEBUG_LEVEL=1) to see " +
         (info.name.empty() ? "the exception's name and reason." : "its operand values and how many work-items threw.");
  } else if (info.debug_level == 1) {
    append_stacktrace(m, info);
    // Frames of a numbered throw site come at level 1: the hint must not promise them again.
    m += std::string("\nHint: launch with debug_level=2 (") + level_knob(lang) +
         " or ZEX_DEBUG_LEVEL=2) to see the work-item that threw" +
         (info.frames.empty() ? " and a stacktrace." : ".");
  } else {
    if (info.global_id && info.group_id)
      m += "\nThrown by work-item " + triple(*info.global_id) + " in work-group " +
           triple(*info.group_id) + ".";
    else if (info.global_id)
      m += "\nThrown by work-item " + triple(*info.global_id) + ".";
    append_stacktrace(m, info);
  }
  return m;
}

}  // namespace zex
