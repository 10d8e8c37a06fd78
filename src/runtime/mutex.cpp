// detail::Mutex (include/zex/detail/mutex.hpp): a std::mutex constructed in opaque storage.
#include <zex/detail/mutex.hpp>

#include <mutex>
#include <new>

namespace zex {
namespace detail {

namespace {
static_assert(sizeof(std::mutex) <= 64 && alignof(std::mutex) <= alignof(std::max_align_t),
              "detail::Mutex's storage must hold a std::mutex");
std::mutex& of(unsigned char* storage) { return *std::launder(reinterpret_cast<std::mutex*>(storage)); }
}  // namespace

Mutex::Mutex() noexcept { new (storage_) std::mutex(); }
Mutex::~Mutex() { of(storage_).~mutex(); }
void Mutex::lock() { of(storage_).lock(); }
void Mutex::unlock() noexcept { of(storage_).unlock(); }

}  // namespace detail
}  // namespace zex
