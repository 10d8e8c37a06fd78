// Argument encoding for Stream::launch (inline: a launch sets its arguments in the caller): each C++
// argument's parameter kind at compile time, the one-byte check against the kernel's parameter (from
// its SPIR-V), the conversions a C prototype would make, and the checks of a launch's shape (argument
// count, extents). Everything that formats a message is compiled (src/runtime/launch_args.cpp).
#pragma once

#include <zex/detail/param_kind.hpp>
#include <zex/exception.hpp>  // Language: whose names a refusal uses
#include <zex/launch.hpp>

#include <level_zero/ze_api.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace zex {
namespace detail {

struct DeviceInfo;

// Cold paths of a launch, compiled (src/runtime/launch_args.cpp): nothing is formatted unless something
// is wrong.
[[noreturn]] void throw_bad_signature(const std::string& kernel, uint32_t expected, size_t given,
                                     bool takes_state);
[[noreturn]] void throw_arg_error(ze_result_t r, const std::string& kernel, uint32_t index, size_t size);
// `lang`: whose spelling of the launch's fields the message uses (a binding passes its own, as the C API does).
[[noreturn]] void throw_zero_extent(const std::string& kernel, Language lang);
[[noreturn]] void throw_too_many_work_items(const std::string& kernel, const Dim3& groups, const Dim3& group_size);
[[noreturn]] void throw_launch_error(ze_result_t r, const std::string& kernel);
[[noreturn]] void throw_group_size_error(ze_result_t r, const std::string& kernel);
[[noreturn]] void throw_wrong_device(const std::string& kernel, const DeviceInfo& module_device,
                                     const DeviceInfo& stream_device);
// The driver rejected a scalar's size: do what a C call through a prototype does and convert the
// value to the parameter's width, if it fits (a size_t for a uint, a double for a float). The path of
// kernels whose parameter kinds the SPIR-V does not give.
void set_arg_converted(ze_kernel_handle_t k, uint32_t i, const void* v, size_t size, bool is_signed_int,
                       bool is_unsigned_int, bool is_float, ze_result_t r, const std::string& kernel);
// A scalar whose class or size is not its parameter's (`given` and `param` are param_kind bytes):
// an integer converts to an integer parameter if its value fits, a float to a float parameter; any
// other pair is a std::invalid_argument naming the kernel, the index and both types. A parameter of
// unknown kind takes the driver-size path above.
void set_arg_mismatched(ze_kernel_handle_t k, uint32_t i, const void* v, uint8_t given, bool is_signed,
                        uint8_t param, const std::string& kernel);

// The arguments of one launch as the driver was given them (Graph::launch and Graph::update keep them,
// to update a recorded launch or record it again): per argument, its size and bytes (none for a
// zex::local size, whose value the driver ignores).
struct CapturedArgs {
  struct Arg {
    size_t offset;  // into data
    size_t size;
    bool has_value;
  };
  std::vector<Arg> args;
  std::vector<uint8_t> data;
  // Argument i (the next one, or a replacement of what was put for i).
  void put(uint32_t i, size_t size, const void* v);
  const void* value(uint32_t i) const { return args[i].has_value ? data.data() + args[i].offset : nullptr; }
  // Whether argument i is the same in both (both have it).
  bool same(uint32_t i, const CapturedArgs& o) const;
};
// While one lives, the conversions of set_arg's cold paths (set_arg_mismatched, set_arg_converted) put
// what they set into `c`, replacing what capture() put for that argument. One thread's; nests.
class CaptureScope {
 public:
  explicit CaptureScope(CapturedArgs& c) noexcept;
  ~CaptureScope();
  CaptureScope(const CaptureScope&) = delete;
  CaptureScope& operator=(const CaptureScope&) = delete;

 private:
  CapturedArgs* prev_;
};

// The param_kind byte of a C++ argument type, at compile time; kOther (never checked) for pointers,
// structs, enums and bool (OpenCL kernels take no bool; the driver's size check stays theirs).
template <class T>
constexpr uint8_t arg_kind() {
  if constexpr (std::is_integral<T>::value && !std::is_same<T, bool>::value)
    return static_cast<uint8_t>(param_kind::kInt | sizeof(T));
  else if constexpr (std::is_floating_point<T>::value)
    return static_cast<uint8_t>(param_kind::kFloat | (sizeof(T) & param_kind::kSizeMask));
  else
    return param_kind::kOther;
}

template <class T>
inline void set_arg(ze_kernel_handle_t k, uint32_t i, const T& v, uint8_t param, const std::string& kernel) {
  static_assert(std::is_trivially_copyable<T>::value,
                "zex: kernel arguments are copied bytewise; pass pointers, scalars or plain structs");
  constexpr uint8_t given = arg_kind<T>();
  // A scalar costs one byte compare; pointers and structs none (the driver checks their size).
  if constexpr (given != param_kind::kOther) {
    if (__builtin_expect(param != given, 0))
      return set_arg_mismatched(k, i, &v, given, std::is_signed<T>::value, param, kernel);
  }
  ze_result_t r = zeKernelSetArgumentValue(k, i, sizeof(T), &v);
  if (__builtin_expect(r != ZE_RESULT_SUCCESS, 0))
    set_arg_converted(k, i, &v, sizeof(T), std::is_integral<T>::value && std::is_signed<T>::value && !std::is_same<T, bool>::value,
                      std::is_integral<T>::value && std::is_unsigned<T>::value && !std::is_same<T, bool>::value,
                      std::is_floating_point<T>::value, r, kernel);
}
inline void set_arg(ze_kernel_handle_t k, uint32_t i, const LocalMemory& v, uint8_t, const std::string& kernel) {
  ze_result_t r = zeKernelSetArgumentValue(k, i, v.bytes, nullptr);
  if (__builtin_expect(r != ZE_RESULT_SUCCESS, 0)) throw_arg_error(r, kernel, i, v.bytes);
}

// The address a pointer argument carries, for the memory checks' bounds (Stream::set_memory_bounds):
// the bytes of any 8-byte argument (a pointer, a uintptr_t a binding passes for one); 0 otherwise; for
// a zex::local, its size (the bound of a __local parameter).
template <class T>
inline uint64_t arg_address(const T& v) {
  if constexpr (sizeof(T) == sizeof(uint64_t)) {
    uint64_t a;
    std::memcpy(&a, &v, sizeof a);
    return a;
  } else {
    return 0;
  }
}
inline uint64_t arg_address(const LocalMemory& v) { return v.bytes; }

// What set_arg passes the driver when no conversion is needed (a conversion replaces it).
template <class T>
inline void capture(CapturedArgs& c, uint32_t i, const T& v) {
  c.put(i, sizeof(T), &v);
}
inline void capture(CapturedArgs& c, uint32_t i, const LocalMemory& v) { c.put(i, v.bytes, nullptr); }

// The shape of a launch, before any argument is set: `n` arguments for a kernel of `num_args`
// parameters whose last is the zex_state_t (`takes_state`), no zero extent, fewer than 2^64
// work-items (the device ABI counts them in 64 bits: refused, not truncated). Each per-dimension
// product is below 2^64; two overflow-checked multiplies cover the rest.
__attribute__((always_inline)) inline void check_launch_shape(const std::string& kernel, uint32_t num_args,
                                                              bool takes_state, size_t n, const Dim3& g,
                                                              const Dim3& b, Language lang = Language::Cpp) {
  if (__builtin_expect((num_args != n + 1) | !takes_state, 0)) throw_bad_signature(kernel, num_args, n, takes_state);
  if (__builtin_expect((g.x == 0) | (g.y == 0) | (g.z == 0) | (b.x == 0) | (b.y == 0) | (b.z == 0), 0))
    throw_zero_extent(kernel, lang);
  uint64_t items;
  if (__builtin_expect(__builtin_mul_overflow(uint64_t{g.x} * b.x, uint64_t{g.y} * b.y, &items) |
                           __builtin_mul_overflow(items, uint64_t{g.z} * b.z, &items),
                       0))
    throw_too_many_work_items(kernel, g, b);
}

}  // namespace detail
}  // namespace zex
