// IPC handles for device memory (zeMemGetIpcHandle, zeMemOpenIpcHandle, zeMemCloseIpcHandle).
#include "kernel.hpp"
#include "memory.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

// ---------------------------------------------------------------------------------------------
// IPC. A handle is laid out as NEO's opaque IPC handle on Linux (compute-runtime's
// IpcOpaqueMemoryData), so code written for Intel's driver reads it the same way: the exporter's memfd
// number at offset 0 and again at 22, the exporter's pid at 16, handle type 0 (fd) at 20, memory type 0
// (device) at 21; zex-cpu's own words sit in NEO's reserved bytes (30..61): "zex-cpu\0", the size, the
// id, and the memfd's inode (so a number reused by another file after a free is refused, not mapped).
// The importer fetches the memfd itself with pidfd_getfd, as NEO does; an application that moved the fd
// itself (SCM_RIGHTS) and wrote its own number at offset 0 is honoured too (the two copies then differ).

namespace zexcpu {
namespace {

constexpr size_t kIpcFd = 0, kIpcPid = 16, kIpcType = 20, kIpcMemType = 21, kIpcFdCopy = 22, kIpcMagic = 30,
                 kIpcSize = 38, kIpcId = 46, kIpcInode = 54;
constexpr char kIpcMagicText[8] = {'z', 'e', 'x', '-', 'c', 'p', 'u', '\0'};

template <typename T> void put(ze_ipc_mem_handle_t* h, size_t off, T v) { std::memcpy(h->data + off, &v, sizeof v); }
template <typename T> T get(const ze_ipc_mem_handle_t& h, size_t off) {
  T v;
  std::memcpy(&v, h.data + off, sizeof v);
  return v;
}

/// An fd of this process for the memfd a handle names, and whether the caller must close it; -1 if none.
int ipc_fd(const ze_ipc_mem_handle_t& h, bool* owned) {
  const int fd = get<int>(h, kIpcFd);
  const int copy = get<int>(h, kIpcFdCopy);
  const auto pid = get<uint32_t>(h, kIpcPid);
  *owned = false;
  if (fd != copy || pid == static_cast<uint32_t>(getpid())) return fd;  // moved by the application, or ours
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
  const int local = pidfd < 0 ? -1 : static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, fd, 0));
  if (pidfd >= 0) close(pidfd);
  *owned = local >= 0;
  // The exporter has exited or may not be read (ptrace rules, a kernel before 5.6): the application may
  // still have moved the fd here under the same number. The caller's inode check tells.
  return local >= 0 ? local : fd;
}

}  // namespace

/// Any pointer into a device allocation (the handle names the whole allocation, as NEO's does). Errors:
/// INVALID_NULL_HANDLE, INVALID_NULL_POINTER, INVALID_ARGUMENT (no allocation holds ptr),
/// UNSUPPORTED_FEATURE (a host or shared allocation, an opened IPC handle, a device allocation below
/// 64 KiB, or one made when the fd budget was spent or no memfd could be had: zex-cpu exports
/// memfd-backed device allocations only; docs/cpu-driver.md, "Memory IPC").
ze_result_t ZE_APICALL zeMemGetIpcHandle(ze_context_handle_t hContext, const void* ptr, ze_ipc_mem_handle_t* pIpcHandle) {
  ZEXCPU_FAULT_POINT("zeMemGetIpcHandle");
  ZEXCPU_CHECK(check_context(hContext));
  if (ptr == nullptr || pIpcHandle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  void* base = nullptr;
  Allocation a{};
  if (!allocations().find(ptr, &base, &a)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (a.backing != Backing::Memfd) return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
  // As NEO: let any process of the user read the fd with pidfd_getfd where Yama restricts ptrace (else
  // this fails harmlessly).
  static const bool ptracer = [] {
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    return true;
  }();
  (void)ptracer;
  if (!allocations().mark_exported(base)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;  // freed meanwhile
  std::memset(pIpcHandle->data, 0, sizeof pIpcHandle->data);
  put<int>(pIpcHandle, kIpcFd, a.fd);
  put<uint32_t>(pIpcHandle, kIpcPid, static_cast<uint32_t>(getpid()));
  put<uint8_t>(pIpcHandle, kIpcType, 0);
  put<uint8_t>(pIpcHandle, kIpcMemType, 0);
  put<int>(pIpcHandle, kIpcFdCopy, a.fd);
  std::memcpy(pIpcHandle->data + kIpcMagic, kIpcMagicText, sizeof kIpcMagicText);
  put<uint64_t>(pIpcHandle, kIpcSize, a.size);
  put<uint64_t>(pIpcHandle, kIpcId, a.id);
  put<uint64_t>(pIpcHandle, kIpcInode, a.inode);  // read when the memfd was made: its fd number may be reused
  return ZE_RESULT_SUCCESS;
}

/// Maps the allocation a handle names (each call a new mapping, as the specification says); close it
/// with zeMemCloseIpcHandle. Errors: INVALID_NULL_HANDLE, INVALID_NULL_POINTER, INVALID_ENUMERATION
/// (flags), INVALID_ARGUMENT (not a zex-cpu handle; the exporter has exited or freed the allocation, or
/// may not be read with pidfd_getfd; the fd is not that memfd), OUT_OF_HOST_MEMORY (mmap).
ze_result_t ZE_APICALL zeMemOpenIpcHandle(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                          ze_ipc_mem_handle_t handle, ze_ipc_memory_flags_t flags, void** pptr) {
  ZEXCPU_FAULT_POINT("zeMemOpenIpcHandle");
  ZEXCPU_CHECK(check_context(hContext));
  if (hDevice == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (pptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (flags > 0x3) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  if (!is_device(hDevice)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (std::memcmp(handle.data + kIpcMagic, kIpcMagicText, sizeof kIpcMagicText) != 0 ||
      get<uint8_t>(handle, kIpcType) != 0 || get<uint8_t>(handle, kIpcMemType) != 0)
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  const auto size = get<uint64_t>(handle, kIpcSize);
  bool owned = false;
  const int fd = ipc_fd(handle, &owned);
  if (fd < 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  struct stat st{};
  const size_t mapped = (size + kPageSize - 1) & ~size_t(kPageSize - 1);
  // Only a memfd answers F_GET_SEALS: a stale or forged number naming some other file is refused.
  const bool ok = size > 0 && mapped >= size && fcntl(fd, F_GET_SEALS) >= 0 && fstat(fd, &st) == 0 &&
                  static_cast<uint64_t>(st.st_ino) == get<uint64_t>(handle, kIpcInode) &&
                  static_cast<uint64_t>(st.st_size) >= mapped;
  void* p = ok ? mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (owned) close(fd);  // the mapping keeps the memory
  if (!ok) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (p == MAP_FAILED) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  madvise(p, mapped, MADV_DONTFORK);
  Allocation a{size, ZE_MEMORY_TYPE_DEVICE, g_next_alloc_id.fetch_add(1), hDevice, hContext, p, Backing::Imported};
  a.mapped = mapped;
  allocations().insert(p, a);
  *pptr = p;
  return ZE_RESULT_SUCCESS;
}

/// Errors: INVALID_NULL_HANDLE, INVALID_NULL_POINTER, INVALID_ARGUMENT (ptr is not what
/// zeMemOpenIpcHandle gave on this context: nothing is freed; NEO would free any allocation here).
ze_result_t ZE_APICALL zeMemCloseIpcHandle(ze_context_handle_t hContext, const void* ptr) {
  ZEXCPU_FAULT_POINT("zeMemCloseIpcHandle");
  ZEXCPU_CHECK(check_context(hContext));
  if (ptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  Allocation a{};
  void* base = const_cast<void*>(ptr);
  if (!allocations().erase(base, true, &a)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  release(a, base);
  return ZE_RESULT_SUCCESS;
}

}  // namespace zexcpu
