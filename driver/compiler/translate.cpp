// SPIR-V -> LLVM bitcode with libLLVMSPIRVLib 15, in a child process (docs/cpu-driver-compiler.md,
// step 2).
//
// libLLVMSPIRVLib 15 reports many errors by printing them and calling std::exit() (its error mode is a
// global that the shared library does not export), and it asserts or crashes on some malformed input.
// A driver must not take the application down for a bad module, so the translation runs in a fork()ed
// child that inherits the loaded libraries (no exec, no reload of LLVM) and
// sends the bitcode back through a pipe. The child touches only its own LLVMContext and the translator,
// and leaves with _exit(), so the parent's other threads (whose locks the child does not own) and its
// atexit handlers never run in it.

#include "compiler/parts.hpp"

#include <LLVMSPIRVLib/LLVMSPIRVLib.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>
#include <utility>

namespace zexcpu {
namespace {

int g_child_status_fd = -1;  // in the child: where to report before an exit the translator forced

void write_all(int fd, const void* data, size_t n) {
  auto* p = static_cast<const char*>(data);
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// Message to the parent: status (0 = bitcode follows, 1 = error text follows), length, payload.
void send(int fd, uint32_t status, const std::string& payload) {
  uint64_t len = payload.size();
  write_all(fd, &status, sizeof status);
  write_all(fd, &len, sizeof len);
  write_all(fd, payload.data(), payload.size());
}

// The translation itself: SPIR-V (+ specialization constants) -> LLVM bitcode.
bool translate(const std::string& bytes, const SpecConstants& constants, std::string* bitcode, std::string* err) {
  llvm::LLVMContext ctx;
  ctx.setOpaquePointers(false);
  SPIRV::TranslatorOpts opts;
  opts.enableAllExtensions();
  // Builtins as OpenCL 1.2 mangled calls (_Z13get_global_idj ...), which PoCL's kernel library has.
  opts.setDesiredBIsRepresentation(SPIRV::BIsRepresentation::OpenCL12);
  if (constants.count) {
    std::vector<llvm::SpecConstInfoTy> info;
    std::istringstream is(bytes);
    if (!llvm::getSpecConstInfo(is, info)) {
      *err = "could not read the module's specialization constants";
      return false;
    }
    for (uint32_t i = 0; i < constants.count; ++i) {
      uint32_t id = constants.ids[i];
      auto it = std::find_if(info.begin(), info.end(), [&](const auto& p) { return p.first == id; });
      if (it == info.end()) {
        // Intel's driver fails the build the same way.
        *err = "specialization constant id " + std::to_string(id) + " is not declared by the module";
        return false;
      }
      uint64_t v = 0;
      memcpy(&v, constants.values[i], std::min<size_t>(it->second, sizeof v));
      opts.setSpecConst(id, v);
    }
  }
  std::istringstream is(bytes);
  llvm::Module* raw = nullptr;
  std::string terr;
  if (!llvm::readSpirv(ctx, opts, is, raw, terr)) {
    delete raw;
    *err = "SPIR-V translation failed: " + (terr.empty() ? std::string("unknown translator error") : terr);
    return false;
  }
  std::unique_ptr<llvm::Module> mod(raw);
  llvm::raw_string_ostream os(*bitcode);
  llvm::WriteBitcodeToFile(*mod, os);
  os.flush();
  return true;
}

[[noreturn]] void child_translate(int fd, const std::string& bytes, const SpecConstants& constants) {
  g_child_status_fd = fd;
  // Registered last, so it runs first when the translator calls std::exit(): no other handler (the
  // application's, the loader's, PoCL's) runs in the child.
  atexit([] {
    send(g_child_status_fd, 1, "");
    _exit(3);
  });
  // A crash or abort is reported through the pipe: no crash handler of the application, no core file.
  for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) signal(sig, SIG_DFL);
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  std::string bitcode, err;
  if (!translate(bytes, constants, &bitcode, &err)) {
    send(fd, 1, err);
    _exit(1);
  }
  send(fd, 0, bitcode);
  _exit(0);
}

}  // namespace

Sanitizer sanitizer_in_process() {
  // ASan first: a dlsym that fails leaves glibc's error record in thread-local storage, which
  // LeakSanitizer (run with use_tls=0 in the tests) reports as a leak; under ASan none fails.
  static const Sanitizer found = [] {
    const std::pair<const char*, Sanitizer> inits[] = {{"__asan_init", Sanitizer::Address},
                                                       {"__hwasan_init", Sanitizer::HwAddress},
                                                       {"__tsan_init", Sanitizer::Thread},
                                                       {"__msan_init", Sanitizer::Memory}};
    for (const auto& [init, which] : inits)
      if (dlsym(RTLD_DEFAULT, init)) return which;
    return Sanitizer::None;
  }();
  return found;
}

// Runs child_translate in a child process. Returns true with the bitcode, or false with a message.
// The fork copies the page tables, and afterwards the parent's first write to each page it had before
// the fork takes a fault (docs/cpu-driver-compiler.md has the cost). ZEX_CPU_TRANSLATE_IN_PROCESS=1
// skips the child (faster in huge processes; a bad module may then terminate the process).
bool translate_isolated(const std::string& bytes, const SpecConstants& constants, std::string* bitcode,
                        std::string* err) {
  static const bool in_process = [] {
    const char* v = getenv("ZEX_CPU_TRANSLATE_IN_PROCESS");
    if (v && *v) return strcmp(v, "0") != 0;
    // A sanitizer's allocator is not fork()-safe: a child forked while another thread holds its lock
    // waits for it forever (g++ 12's ASan, seen in CI as "did not finish within 300 s"; TSan alike).
    // Under a sanitizer, unless the variable says otherwise, the translation runs in this process.
    return sanitizer_in_process() != Sanitizer::None;
  }();
  if (in_process) return translate(bytes, constants, bitcode, err);
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    *err = std::string("pipe failed: ") + strerror(errno);
    return false;
  }
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    *err = std::string("pipe failed: ") + strerror(errno);
    close(out_pipe[0]);
    close(out_pipe[1]);
    return false;
  }
  pid_t pid = fork();
  if (pid < 0) {
    // No child processes allowed (a sandbox, a process limit): translate here, at the translator's risk.
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) close(fd);
    return translate(bytes, constants, bitcode, err);
  }
  if (pid == 0) {
    dup2(err_pipe[1], 2);  // what the translator prints goes to the build log
    // Keep only stdio and the result pipe: descriptors of other threads' pipes (other builds running
    // at the same time) must not stay open here and delay their EOF.
    int keep = out_pipe[1];
    if (keep > 3) syscall(SYS_close_range, 3u, static_cast<unsigned>(keep - 1), 0u);
    syscall(SYS_close_range, static_cast<unsigned>(keep + 1), ~0u, 0u);
    child_translate(keep, bytes, constants);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);

  std::string data, errtext;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  bool timed_out = false;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    int r = poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (r < 0 && errno != EINTR) break;
    for (auto& f : fds) {
      if (f.fd < 0 || !(f.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      ssize_t n = read(f.fd, buf, sizeof buf);
      if (n > 0) {
        (f.fd == out_pipe[0] ? data : errtext).append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(f.fd);
        f.fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  pid_t w;
  do {
    w = waitpid(pid, &status, 0);
  } while (w < 0 && errno == EINTR);
  // (w < 0 with ECHILD: the application reaps children itself; the pipe still says what happened.)

  while (!errtext.empty() && (errtext.back() == '\n' || errtext.back() == '\r')) errtext.pop_back();
  uint32_t st = 1;
  uint64_t len = 0;
  if (!timed_out && data.size() >= sizeof st + sizeof len) {
    memcpy(&st, data.data(), sizeof st);
    memcpy(&len, data.data() + sizeof st, sizeof len);
    if (data.size() == sizeof st + sizeof len + len) {
      std::string payload = data.substr(sizeof st + sizeof len);
      if (st == 0) {
        *bitcode = std::move(payload);
        return true;
      }
      *err = payload.empty() ? "SPIR-V translation failed" : payload;
      if (!errtext.empty() && errtext.find(payload) == std::string::npos) *err += ": " + errtext;
      else if (payload.empty() && !errtext.empty()) *err += ": " + errtext;
      return false;
    }
  }
  if (timed_out) {
    *err = "the SPIR-V translator did not finish within 300 s";
  } else if (w == pid && WIFSIGNALED(status)) {
    *err = "the SPIR-V translator crashed on this module (signal " + std::to_string(WTERMSIG(status)) + ")";
  } else {
    *err = "the SPIR-V translator failed on this module";
  }
  if (!errtext.empty()) *err += ": " + errtext;
  return false;
}

}  // namespace zexcpu
