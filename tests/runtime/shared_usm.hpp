// Exactly n T of shared USM, aligned to T and zeroed, freed with the object: the buffers of the
// end-to-end suites on kernels without zex code (tests/memory, tests/asserts). Exactly n, so that under
// zex-cpu's guard pages its end is flush against the guard.
#pragma once

#include <zex/zex.hpp>

#include <cstddef>
#include <cstring>

namespace zex_test {

template <class T>
class SharedUsm {
 public:
  SharedUsm(const zex::Context& ctx, const zex::Device& dev, size_t n) : ctx_(ctx.handle()), n_(n) {
    ze_device_mem_alloc_desc_t dd{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
    ze_host_mem_alloc_desc_t hd{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
    void* p = nullptr;
    zex::check(zeMemAllocShared(ctx_, &dd, &hd, n * sizeof(T), sizeof(T), dev.handle(), &p), "zeMemAllocShared");
    p_ = static_cast<T*>(p);
    std::memset(static_cast<void*>(p_), 0, n * sizeof(T));
  }
  ~SharedUsm() { zeMemFree(ctx_, p_); }
  SharedUsm(const SharedUsm&) = delete;
  SharedUsm& operator=(const SharedUsm&) = delete;
  T* get() const { return p_; }
  T& operator[](size_t i) { return p_[i]; }
  size_t bytes() const { return n_ * sizeof(T); }

 private:
  ze_context_handle_t ctx_;
  T* p_ = nullptr;
  size_t n_;
};

}  // namespace zex_test
