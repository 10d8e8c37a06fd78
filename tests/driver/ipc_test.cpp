// Memory IPC: a device allocation exported with zeMemGetIpcHandle and opened with zeMemOpenIpcHandle, in
// this process and in another one. The other process is this test binary again (posix_spawn of
// /proc/self/exe), running one of the IpcChild tests, which skip unless ZEX_IPC_TEST_MODE is set.
#include "l0_fixture.hpp"

#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

extern char** environ;

namespace {

constexpr size_t kBytes = size_t{1} << 20;
constexpr uint32_t kInts = kBytes / sizeof(int);

std::string to_hex(const ze_ipc_mem_handle_t& h) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (char c : h.data) {
    s += d[(static_cast<unsigned char>(c) >> 4) & 0xf];
    s += d[static_cast<unsigned char>(c) & 0xf];
  }
  return s;
}

bool from_hex(const std::string& s, ze_ipc_mem_handle_t* h) {
  if (s.size() != 2 * sizeof h->data) return false;
  for (size_t i = 0; i < sizeof h->data; ++i) h->data[i] = static_cast<char>(std::stoi(s.substr(2 * i, 2), nullptr, 16));
  return true;
}

/// Runs this binary again with `filter` and the extra environment; returns its exit status (-1: not run).
int run_child(const std::string& filter, const std::vector<std::string>& extra_env) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
  for (const auto& e : extra_env) env_strings.push_back(e);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string exe = "/proc/self/exe", arg = "--gtest_filter=" + filter;
  char* argv[] = {exe.data(), arg.data(), nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, envp.data()) != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/// A one-byte message with room for one fd in SCM_RIGHTS.
struct FdMessage {
  char byte = 'f';
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  FdMessage() {
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
  }
  FdMessage(const FdMessage&) = delete;
  FdMessage& operator=(const FdMessage&) = delete;
};

bool send_fd(int sock, int fd) {
  FdMessage m;
  cmsghdr* c = CMSG_FIRSTHDR(&m.msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  return sendmsg(sock, &m.msg, 0) == 1;
}

int receive_fd(int sock) {
  FdMessage m;
  if (recvmsg(sock, &m.msg, 0) != 1) return -1;
  cmsghdr* c = CMSG_FIRSTHDR(&m.msg);
  if (c == nullptr || c->cmsg_type != SCM_RIGHTS) return -1;
  int fd = -1;
  std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
  return fd;
}

const char* env(const char* name) { return std::getenv(name); }

class Ipc : public L0Test {
 protected:
  /// A device allocation holding 0, 1, 2, ... and its handle.
  int* exported(ze_ipc_mem_handle_t* h) {
    auto* p = static_cast<int*>(alloc_device(kBytes));
    if (p == nullptr) return nullptr;
    for (uint32_t i = 0; i < kInts; ++i) p[i] = static_cast<int>(i);  // zex-cpu: device memory is host memory
    EXPECT_ZE_OK(zeMemGetIpcHandle(context, p, h));
    return p;
  }
};
using IpcChild = Ipc;

}  // namespace

TEST_F(Ipc, TheDriverOffersMemoryIpc) {
  ze_driver_ipc_properties_t p = {ZE_STRUCTURE_TYPE_DRIVER_IPC_PROPERTIES, nullptr, 0};
  ZE_OK(zeDriverGetIpcProperties(driver, &p));
  EXPECT_TRUE(p.flags & ZE_IPC_PROPERTY_FLAG_MEMORY);
  EXPECT_FALSE(p.flags & ZE_IPC_PROPERTY_FLAG_EVENT_POOL) << "event pool IPC answers UNSUPPORTED_FEATURE";
}

TEST_F(Ipc, OpenedInTheSameProcessItIsTheSameMemoryAtAnotherAddress) {
  ze_ipc_mem_handle_t h{};
  int* p = exported(&h);
  ASSERT_NE(p, nullptr);
  int* q = nullptr;
  int* r = nullptr;
  ZE_OK(zeMemOpenIpcHandle(context, device, h, 0, reinterpret_cast<void**>(&q)));
  ZE_OK(zeMemOpenIpcHandle(context, device, h, ZE_IPC_MEMORY_FLAG_BIAS_UNCACHED, reinterpret_cast<void**>(&r)));
  EXPECT_NE(q, p);
  EXPECT_NE(q, r) << "each open gives its own pointer (the specification)";
  // The memfd sits at the top of the fd budget (a quarter of the soft limit, at most 4096), not among
  // the low numbers the application uses.
  rlimit lim{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &lim), 0);
  const rlim_t soft = lim.rlim_cur == RLIM_INFINITY ? rlim_t{1} << 20 : lim.rlim_cur;
  const rlim_t lowest = std::min<rlim_t>(16384, soft - std::min<rlim_t>(4096, soft / 4));
  int fd = -1;
  std::memcpy(&fd, h.data, sizeof fd);
  EXPECT_GE(static_cast<rlim_t>(fd), lowest);
  EXPECT_EQ(q[12345], 12345);
  q[7] = -7;
  EXPECT_EQ(p[7], -7);
  EXPECT_EQ(r[7], -7);
  ze_memory_allocation_properties_t props = {ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES, nullptr, ZE_MEMORY_TYPE_UNKNOWN, 0, 0};
  ze_device_handle_t owner = nullptr;
  ZE_OK(zeMemGetAllocProperties(context, q + 3, &props, &owner));
  EXPECT_EQ(props.type, ZE_MEMORY_TYPE_DEVICE);
  EXPECT_EQ(owner, device);
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeMemFree(context, q)) << "opened memory is closed, not freed";
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeMemCloseIpcHandle(context, p)) << "not opened: nothing is freed";
  EXPECT_EQ(p[7], -7);
  EXPECT_ZE_OK(zeMemCloseIpcHandle(context, q));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeMemCloseIpcHandle(context, q)) << "closed already";
  EXPECT_ZE_OK(zeMemCloseIpcHandle(context, r));
}

// Alignments above a page: the memfd is mapped at an aligned address inside a larger reservation whose
// rest is given back; the allocation is aligned, whole, and exports like any other.
TEST_F(Ipc, OverAlignedDeviceAllocationsAreAlignedAndExported) {
  for (size_t align : {size_t{64} << 10, size_t{2} << 20}) {
    auto* p = static_cast<char*>(alloc_device(kBytes, align));
    ASSERT_NE(p, nullptr) << align;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % align, 0u) << align;
    p[0] = 1;
    p[kBytes - 1] = 2;
    ze_ipc_mem_handle_t h{};
    ZE_OK(zeMemGetIpcHandle(context, p, &h));
    char* q = nullptr;
    ZE_OK(zeMemOpenIpcHandle(context, device, h, 0, reinterpret_cast<void**>(&q)));
    EXPECT_EQ(q[0], 1);
    EXPECT_EQ(q[kBytes - 1], 2);
    EXPECT_ZE_OK(zeMemCloseIpcHandle(context, q));
  }
}

TEST_F(Ipc, AnInteriorPointerExportsTheWholeAllocation) {
  auto* p = static_cast<int*>(alloc_device(kBytes));
  ASSERT_NE(p, nullptr);
  p[0] = 99;
  ze_ipc_mem_handle_t h{};
  ZE_OK(zeMemGetIpcHandle(context, p + 1000, &h));
  int* q = nullptr;
  ZE_OK(zeMemOpenIpcHandle(context, device, h, 0, reinterpret_cast<void**>(&q)));
  EXPECT_EQ(q[0], 99) << "the importer gets the base, as with NEO";
  void* base = nullptr;
  size_t size = 0;
  ZE_OK(zeMemGetAddressRange(context, q + 5, &base, &size));
  EXPECT_EQ(base, q);
  EXPECT_EQ(size, kBytes);
  EXPECT_ZE_OK(zeMemCloseIpcHandle(context, q));
}

TEST_F(Ipc, WhatCannotBeExportedOrOpenedIsRefused) {
  ze_ipc_mem_handle_t h{};
  void* host = alloc_host(4096);
  EXPECT_ZE(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, zeMemGetIpcHandle(context, host, &h)) << "host allocations";
  void* shared = alloc_shared(4096);
  EXPECT_ZE(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, zeMemGetIpcHandle(context, shared, &h)) << "shared allocations";
  void* small = alloc_device(4096);
  EXPECT_ZE(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, zeMemGetIpcHandle(context, small, &h))
      << "device allocations below 64 KiB are SVM (no fd, no mapping of their own)";
  int stack = 0;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeMemGetIpcHandle(context, &stack, &h)) << "not an allocation";
  void* q = nullptr;
  ze_ipc_mem_handle_t zeros{};
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeMemOpenIpcHandle(context, device, zeros, 0, &q)) << "not a handle";
  if (!zt::under_validation()) {
    EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ENUMERATION, zeMemOpenIpcHandle(context, device, zeros, 0x4, &q));
  }
  // A handle of a freed allocation: its fd number may name another memfd by now; the inode check refuses it.
  ze_device_mem_alloc_desc_t dd = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
  void* gone = nullptr;
  ZE_OK(zeMemAllocDevice(context, &dd, kBytes, 64, device, &gone));
  ZE_OK(zeMemGetIpcHandle(context, gone, &h));
  ZE_OK(zeMemFree(context, gone));
  void* reuse = alloc_device(kBytes);  // likely takes the freed fd number
  ASSERT_NE(reuse, nullptr);
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeMemOpenIpcHandle(context, device, h, 0, &q));
  // Opened memory is not exported again.
  ze_ipc_mem_handle_t h2{};
  int* p = exported(&h2);
  ASSERT_NE(p, nullptr);
  ZE_OK(zeMemOpenIpcHandle(context, device, h2, 0, &q));
  EXPECT_ZE(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, zeMemGetIpcHandle(context, q, &h));
  EXPECT_ZE_OK(zeMemCloseIpcHandle(context, q));
}

// Out of file descriptors, a device allocation falls back to the SVM heap: it works, only its export is
// refused (and says so with UNSUPPORTED_FEATURE rather than failing the allocation).
TEST_F(Ipc, ADeviceAllocationMadeWithoutAFreeFdWorksButIsNotExported) {
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
  const int lowest = dup(0);  // the number the driver's memfd_create would get
  ASSERT_GE(lowest, 0);
  close(lowest);
  rlimit low = old;
  low.rlim_cur = static_cast<rlim_t>(lowest);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  ze_device_mem_alloc_desc_t dd = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
  void* p = nullptr;
  // A length no other test frees, so that no freed memfd of the driver's reuse cache serves it.
  const size_t odd = 5 * (size_t{64} << 10) + 12288;
  ze_result_t r = zeMemAllocDevice(context, &dd, odd, 64, device, &p);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
  ZE_OK(r);
  static_cast<char*>(p)[odd - 1] = 5;
  EXPECT_EQ(static_cast<char*>(p)[odd - 1], 5);
  ze_ipc_mem_handle_t h{};
  EXPECT_ZE(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, zeMemGetIpcHandle(context, p, &h));
  EXPECT_ZE_OK(zeMemFree(context, p));
}

// The two-process test the issue asks for: the child opens the parent's allocation (fetching the memfd
// itself with pidfd_getfd, as NEO's importer does), checks what the parent wrote, runs a kernel on it.
TEST_F(Ipc, AnotherProcessOpensTheAllocationAndItsKernelWritesIt) {
  ze_ipc_mem_handle_t h{};
  int* p = exported(&h);
  ASSERT_NE(p, nullptr);
  int status = run_child("IpcChild.OpensThePeersAllocation",
                         {"ZEX_IPC_TEST_MODE=open", "ZEX_IPC_TEST_HANDLE=" + to_hex(h)});
  ASSERT_EQ(status, 0) << "the child failed (its output is above)";
  for (uint32_t i = 0; i < kInts; i += 251) ASSERT_EQ(p[i], static_cast<int>(i) + 7) << i;
}

// As above, with the fd moved by the application over a Unix socket (SCM_RIGHTS) and written into the
// handle's first bytes, the way applications pass NEO's legacy handles.
TEST_F(Ipc, AnotherProcessOpensItWithAnFdSentOverASocket) {
  ze_ipc_mem_handle_t h{};
  int* p = exported(&h);
  ASSERT_NE(p, nullptr);
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  int child_end = dup(sv[1]);  // without CLOEXEC: the child inherits it
  close(sv[1]);
  int fd = 0;
  std::memcpy(&fd, h.data, sizeof fd);
  ASSERT_TRUE(send_fd(sv[0], fd));
  int status = run_child("IpcChild.OpensThePeersAllocation",
                         {"ZEX_IPC_TEST_MODE=socket", "ZEX_IPC_TEST_HANDLE=" + to_hex(h),
                          "ZEX_IPC_TEST_SOCKET=" + std::to_string(child_end)});
  close(child_end);
  close(sv[0]);
  ASSERT_EQ(status, 0) << "the child failed (its output is above)";
  for (uint32_t i = 0; i < kInts; i += 251) ASSERT_EQ(p[i], static_cast<int>(i) + 7) << i;
}

// A handle whose exporter has exited names nothing: opening it is refused, not a crash or a stale map.
TEST_F(Ipc, AHandleOfAProcessThatHasExitedIsRefused) {
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  int status = run_child("IpcChild.ExportsAndExits",
                         {"ZEX_IPC_TEST_MODE=export", "ZEX_IPC_TEST_PIPE=" + std::to_string(pipefd[1])});
  close(pipefd[1]);
  char buf[2 * ZE_MAX_IPC_HANDLE_SIZE + 1] = {};
  ssize_t n = read(pipefd[0], buf, sizeof buf - 1);
  close(pipefd[0]);
  ASSERT_EQ(status, 0);
  ze_ipc_mem_handle_t h{};
  ASSERT_TRUE(n > 0 && from_hex(std::string(buf, static_cast<size_t>(n)), &h));
  void* q = nullptr;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeMemOpenIpcHandle(context, device, h, 0, &q));
}

TEST_F(IpcChild, OpensThePeersAllocation) {
  const char* mode = env("ZEX_IPC_TEST_MODE");
  if (mode == nullptr || std::string(mode) == "export")
    GTEST_SKIP() << "runs only as the child process of Ipc.AnotherProcess* (ZEX_IPC_TEST_MODE=open|socket)";
  ze_ipc_mem_handle_t h{};
  ASSERT_TRUE(env("ZEX_IPC_TEST_HANDLE") && from_hex(env("ZEX_IPC_TEST_HANDLE"), &h));
  if (std::string(mode) == "socket") {
    int fd = receive_fd(std::atoi(env("ZEX_IPC_TEST_SOCKET")));
    ASSERT_GE(fd, 0);
    std::memcpy(h.data, &fd, sizeof fd);
  }
  int* q = nullptr;
  ZE_OK(zeMemOpenIpcHandle(context, device, h, 0, reinterpret_cast<void**>(&q)));
  for (uint32_t i = 0; i < kInts; i += 251) ASSERT_EQ(q[i], static_cast<int>(i)) << i;
  add_value(q, kInts, 7);
  EXPECT_ZE_OK(zeMemCloseIpcHandle(context, q));
}

TEST_F(IpcChild, ExportsAndExits) {
  const char* mode = env("ZEX_IPC_TEST_MODE");
  if (mode == nullptr || std::string(mode) != "export")
    GTEST_SKIP() << "runs only as the child process of Ipc.AHandleOfAProcessThatHasExitedIsRefused";
  ze_ipc_mem_handle_t h{};
  ASSERT_NE(exported(&h), nullptr);
  std::string hex = to_hex(h);
  int fd = std::atoi(env("ZEX_IPC_TEST_PIPE"));
  ASSERT_EQ(write(fd, hex.data(), hex.size()), static_cast<ssize_t>(hex.size()));
  close(fd);
}
