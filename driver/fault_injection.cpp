// ZEX_CPU_FAIL: make the n-th call of chosen entry points fail with a chosen ze_result_t, so that
// reliability tests can exercise error paths of code that runs on zex-cpu.
//
//   ZEX_CPU_FAIL=<entry point>:<n>:<result>[,<entry point>:<n>:<result>...]
//   e.g. ZEX_CPU_FAIL=zeMemAllocHost:3:ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY
//
// Calls are counted per entry point (1-based, across all threads). The failing call returns before it
// changes anything. The variable is parsed once, on first use; a malformed value is reported on stderr
// and makes zeInit fail with ZE_RESULT_ERROR_INVALID_ARGUMENT, so a typo never silently disables a test.
#include "common.hpp"
#include "device_loss.hpp"
#include "fork.hpp"

#include "common/result_names.hpp"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <string>
#include <utility>
#include <unistd.h>
#include <vector>

namespace zexcpu {
namespace {

/// ZEX_CPU_FAIL_LOG=<file>: one line is appended per injected failure, so that a test can tell a rule
/// that fired from one whose n-th call never came (a swallowed failure is otherwise invisible). One
/// write(2) on an O_APPEND descriptor per line: lines of concurrent calls never interleave.
void log_fired(const std::string& entry, uint64_t call, ze_result_t r) {
  const char* path = std::getenv("ZEX_CPU_FAIL_LOG");
  if (path == nullptr || *path == '\0') return;
  int fd = ::open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const char* name = result_name(r);
  std::string line = entry + ":" + std::to_string(call) + ":" + (name ? name : "?") + "\n";
  ssize_t n = ::write(fd, line.data(), line.size());
  (void)n;  // best effort: a test that needs the line fails on its absence
  ::close(fd);
}

/// The rules for one entry point; its calls share one counter.
struct Entry {
  std::string name;
  std::vector<std::pair<uint64_t, ze_result_t>> fail_at;  // (n-th call, result)
  std::atomic<uint64_t> calls{0};
};

struct Config {
  std::vector<std::unique_ptr<Entry>> entries;
  std::string error;  // empty when the variable is absent or well-formed
};

bool valid_entry_name(const std::string& s) {
  if (s.size() < 3 || s.compare(0, 2, "ze") != 0) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
      return false;
  return true;
}

Config* parse(const char* value) {
  auto* cfg = new Config;  // lives for the process: entry points may run during static destruction
  if (value == nullptr || *value == '\0') return cfg;
  std::string all(value);
  size_t pos = 0;
  while (pos <= all.size()) {
    size_t comma = all.find(',', pos);
    std::string item = all.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? all.size() + 1 : comma + 1;
    auto bad = [&](const char* why) {
      cfg->error = "zex-cpu: ZEX_CPU_FAIL: bad item '" + item + "': " + why +
                   " (expected <entry point>:<n>:<result>[,...], e.g. "
                   "zeMemAllocHost:3:ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY)";
    };
    size_t c1 = item.find(':');
    size_t c2 = c1 == std::string::npos ? std::string::npos : item.find(':', c1 + 1);
    if (c1 == std::string::npos || c2 == std::string::npos) {
      bad("it needs three fields separated by ':'");
      break;
    }
    std::string name = item.substr(0, c1), count = item.substr(c1 + 1, c2 - c1 - 1),
                result = item.substr(c2 + 1);
    if (!valid_entry_name(name)) {
      bad("the entry point must be a Level Zero function name such as zeMemAllocHost");
      break;
    }
    char* end = nullptr;
    errno = 0;
    unsigned long long n = count.empty() || count[0] == '-' ? 0 : std::strtoull(count.c_str(), &end, 10);
    if (count.empty() || count[0] == '-' || errno != 0 || end == nullptr || *end != '\0' || n == 0) {
      bad("<n> must be a positive integer (1 = the first call)");
      break;
    }
    ze_result_t r;
    if (!result_from_name(result.c_str(), &r)) {
      bad("<result> must be a ze_result_t name such as ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY");
      break;
    }
    Entry* e = nullptr;
    for (auto& existing : cfg->entries)
      if (existing->name == name) e = existing.get();
    if (e == nullptr) {
      cfg->entries.push_back(std::make_unique<Entry>());
      e = cfg->entries.back().get();
      e->name = name;
    }
    e->fail_at.emplace_back(n, r);
  }
  if (!cfg->error.empty()) {
    std::fprintf(stderr, "%s\n", cfg->error.c_str());
    cfg->entries.clear();  // a malformed variable injects nothing; zeInit reports it instead
  }
  return cfg;
}

Config& config() {
  static Config* cfg = parse(std::getenv("ZEX_CPU_FAIL"));
  return *cfg;
}

bool injected(const char* entry, ze_result_t* result) {
  Config& cfg = config();
  if (cfg.entries.empty()) return false;  // the common case: one branch per entry point
  for (auto& e : cfg.entries) {
    if (e->name != entry) continue;
    uint64_t call = e->calls.fetch_add(1, std::memory_order_relaxed) + 1;
    for (const auto& [n, r] : e->fail_at)
      if (n == call) {
        *result = r;
        log_fired(e->name, call, r);
        injected_failure(entry, call, r);
        return true;
      }
    return false;
  }
  return false;
}

}  // namespace

// The names come from the zex library's one table (common/result_names.hpp).
const char* result_name(ze_result_t r) { return zex::detail::result_name_or_null(r); }

bool result_from_name(const char* name, ze_result_t* r) { return zex::detail::result_from_name(name, r); }

const char* fault_injection_error() {
  const Config& cfg = config();
  return cfg.error.empty() ? nullptr : cfg.error.c_str();
}

bool should_fail(const char* entry, ze_result_t* result) {
  // A fork() child (fork.hpp): the objects it inherited need threads it does not have, so every call
  // fails at once, before it touches anything; destroying releases nothing (the parent owns it all).
  if (__builtin_expect(forked_child(), 0)) {
    *result = ZE_RESULT_ERROR_UNINITIALIZED;
    return true;
  }
  // An injected failure first, so that a test can make a call fail on a lost device too (the calls
  // that collect a device-loss report); then the lost device's gate (device_loss.hpp).
  if (__builtin_expect(injected(entry, result), 0)) {
    // ZEX_CPU_FAIL_LOSES_DEVICE=1 and DEVICE_LOST: the device is lost now (injected_failure), and this
    // call behaves as every call on a lost device: a wait waits for the work before it and then answers
    // DEVICE_LOST (returning at once would let the application free memory a kernel still uses).
    if (*result == ZE_RESULT_ERROR_DEVICE_LOST && injected_loss_mode()) return gated_while_lost(entry);
    return true;
  }
  if (__builtin_expect(device_lost(), 0) && gated_while_lost(entry)) {
    *result = ZE_RESULT_ERROR_DEVICE_LOST;
    return true;
  }
  return false;
}

}  // namespace zexcpu
