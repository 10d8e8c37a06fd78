// The cold half of argument encoding (<zex/detail/launch_args.hpp>): the messages of a launch that
// cannot be made, and the conversions of a scalar whose type is not its parameter's (what a C call
// through a prototype does, where the value fits).
#include <zex/detail/launch_args.hpp>

#include <zex/context.hpp>
#include <zex/error.hpp>

#include <climits>
#include <cstring>
#include <string>

namespace zex {

namespace detail {

namespace {
// The capture of the calling thread's Graph::launch or Graph::update (CaptureScope), if any.
thread_local CapturedArgs* t_capture = nullptr;
}  // namespace

CaptureScope::CaptureScope(CapturedArgs& c) noexcept : prev_(t_capture) { t_capture = &c; }
CaptureScope::~CaptureScope() { t_capture = prev_; }

void CapturedArgs::put(uint32_t i, size_t size, const void* v) {
  Arg a{data.size(), size, v != nullptr};
  if (v) data.insert(data.end(), static_cast<const uint8_t*>(v), static_cast<const uint8_t*>(v) + size);
  if (i < args.size())
    args[i] = a;  // a conversion replaces what the launch passed (the old bytes stay unused)
  else
    args.push_back(a);
}

bool CapturedArgs::same(uint32_t i, const CapturedArgs& o) const {
  const Arg& a = args[i];
  const Arg& b = o.args[i];
  if (a.size != b.size || a.has_value != b.has_value) return false;
  return !a.has_value || std::memcmp(data.data() + a.offset, o.data.data() + b.offset, a.size) == 0;
}

namespace {
// What the cold paths below set: the driver's call, and on success the capture's copy of what was set.
ze_result_t set_value(ze_kernel_handle_t k, uint32_t i, size_t size, const void* v) {
  const ze_result_t r = zeKernelSetArgumentValue(k, i, size, v);
  if (r == ZE_RESULT_SUCCESS && t_capture) t_capture->put(i, size, v);
  return r;
}
}  // namespace

void throw_bad_extent(long long v) {
  throw zex::InvalidArgument("zex: a launch extent (" + std::to_string(v) +
                              ") is negative or does not fit in 32 bits");
}
void throw_bad_extent(unsigned long long v) {
  throw zex::InvalidArgument("zex: a launch extent (" + std::to_string(v) +
                              ") is negative or does not fit in 32 bits");
}

void throw_bad_signature(const std::string& kernel, uint32_t expected, size_t given, bool takes_state) {
  if (!takes_state && expected != 0)
    throw zex::InvalidArgument(
        "zex: kernel '" + kernel + "' does not take a zex_state_t as its last parameter (it has " +
        std::to_string(expected) +
        " parameter(s)), so zex cannot pass it the stream's report: declare `zex_state_t zex` as the "
        "kernel's last parameter (OpenCL C: #include <zex/device.h>; other compilers: a by-value struct "
        "of three 64-bit integers, docs/abi.md)");
  if (expected == 0)
    throw zex::InvalidArgument("zex: kernel '" + kernel +
                                "' has no parameters; a kernel launched through zex takes a zex_state_t "
                                "as its last parameter");
  throw zex::InvalidArgument("zex: kernel '" + kernel + "' expects " + std::to_string(expected - 1) +
                              " argument(s) plus the trailing zex_state_t (" + std::to_string(expected) +
                              " parameters in all), but the launch passed " + std::to_string(given) +
                              " argument(s)");
}

void throw_arg_error(ze_result_t r, const std::string& kernel, uint32_t index, size_t size) {
  throw ZeError(r, "zeKernelSetArgumentValue",
                "setting argument " + std::to_string(index) + " (" + std::to_string(size) + " bytes) of kernel '" +
                    kernel + "'");
}

void throw_zero_extent(const std::string& kernel, Language lang) {
  const LaunchNames& names = launch_names(lang);
  throw zex::InvalidArgument("zex: launch of kernel '" + kernel + "': every component of " + names.extents +
                              " must be at least 1 (" + names.one_dimension + ")");
}

void throw_too_many_work_items(const std::string& kernel, const Dim3& g, const Dim3& b) {
  auto dims = [](const Dim3& d) {
    return std::to_string(d.x) + " x " + std::to_string(d.y) + " x " + std::to_string(d.z);
  };
  throw zex::InvalidArgument("zex: launch of kernel '" + kernel + "': " + dims(g) + " work-groups of " + dims(b) +
                              " work-items is 2^64 work-items or more, which zex's device ABI cannot number "
                              "(64-bit work-item ids); launch fewer work-items and let each cover more of "
                              "the data");
}

void throw_launch_error(ze_result_t r, const std::string& kernel) {
  throw ZeError(r, "zeCommandListAppendLaunchKernel", "launching kernel '" + kernel + "'");
}

void throw_wrong_device(const std::string& kernel, const DeviceInfo& module_device, const DeviceInfo& stream_device) {
  throw zex::InvalidArgument("zex: kernel '" + kernel + "' belongs to a zex::Module built for device '" +
                             module_device.name + "', but the stream runs on device '" + stream_device.name +
                             "': build a zex::Module for each device and launch each device's kernels on its "
                             "own streams. Nothing was appended.");
}

void throw_group_size_error(ze_result_t r, const std::string& kernel) {
  throw ZeError(r, "zeKernelSetGroupSize", "setting the group size of kernel '" + kernel + "'");
}

namespace {
// An integer argument of `size` bytes (1, 2, 4; anything else is read as 8), widened to 64 bits as a
// signed and as an unsigned value of its own width would be.
void widen(const void* v, size_t size, int64_t* s, uint64_t* u) {
  switch (size) {
    case 1: { int8_t a; uint8_t b; std::memcpy(&a, v, 1); std::memcpy(&b, v, 1); *s = a; *u = b; return; }
    case 2: { int16_t a; uint16_t b; std::memcpy(&a, v, 2); std::memcpy(&b, v, 2); *s = a; *u = b; return; }
    case 4: { int32_t a; uint32_t b; std::memcpy(&a, v, 4); std::memcpy(&b, v, 4); *s = a; *u = b; return; }
    default: std::memcpy(s, v, 8); std::memcpy(u, v, 8); return;
  }
}
}  // namespace

void set_arg_converted(ze_kernel_handle_t k, uint32_t i, const void* v, size_t size, bool is_signed_int,
                       bool is_unsigned_int, bool is_float, ze_result_t r, const std::string& kernel) {
  if (r == ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE) {
    if (is_signed_int || is_unsigned_int) {
      if (size != 1 && size != 2 && size != 4 && size != 8) throw_arg_error(r, kernel, i, size);
      int64_t s = 0;
      uint64_t u = 0;
      widen(v, size, &s, &u);
      if (size == 8) {
        const bool fits = is_signed_int ? (s >= INT32_MIN && s <= static_cast<int64_t>(UINT32_MAX)) : u <= UINT32_MAX;
        const uint32_t w = static_cast<uint32_t>(is_signed_int ? static_cast<uint64_t>(s) : u);
        if (fits && set_value(k, i, sizeof w, &w) == ZE_RESULT_SUCCESS) return;
      } else {
        const uint64_t w = is_signed_int ? static_cast<uint64_t>(s) : u;
        if (set_value(k, i, sizeof w, &w) == ZE_RESULT_SUCCESS) return;
      }
    } else if (is_float && size == sizeof(double)) {
      double d;
      std::memcpy(&d, v, sizeof d);
      const float f = static_cast<float>(d);
      if (set_value(k, i, sizeof f, &f) == ZE_RESULT_SUCCESS) return;
    } else if (is_float && size == sizeof(float)) {
      float f;
      std::memcpy(&f, v, sizeof f);
      const double d = f;
      if (set_value(k, i, sizeof d, &d) == ZE_RESULT_SUCCESS) return;
    }
  }
  throw_arg_error(r, kernel, i, size);
}

namespace {

namespace pk = param_kind;

// "a double", "a 64-bit signed integer": the C++ side of a mismatch.
std::string given_name(uint8_t given, bool is_signed) {
  const unsigned bytes = given & pk::kSizeMask;
  if ((given & pk::kClassMask) == pk::kFloat)
    return bytes == 4 ? "a float" : bytes == 8 ? "a double" : "a long double";
  return (bytes == 1 ? "an " : "a ") + std::to_string(bytes * 8) + "-bit " + (is_signed ? "signed" : "unsigned") +
         " integer";
}

// "a 32-bit integer (uint or int)": the kernel side, with the OpenCL C names (SPIR-V has no signedness).
std::string param_name(uint8_t param) {
  const unsigned bytes = param & pk::kSizeMask;
  if ((param & pk::kClassMask) == pk::kFloat)
    return bytes == 2 ? "a 16-bit float (half)" : bytes == 4 ? "a 32-bit float (float)" : "a 64-bit float (double)";
  const char* names = bytes == 1 ? "uchar or char" : bytes == 2 ? "ushort or short" : bytes == 4 ? "uint or int" : "ulong or long";
  return (bytes == 1 ? "an " : "a ") + std::to_string(bytes * 8) + "-bit integer (" + names + ")";
}

[[noreturn]] void throw_mismatch(uint32_t i, const std::string& kernel, const std::string& given, uint8_t param,
                                 const char* advice) {
  throw zex::InvalidArgument("zex: argument " + std::to_string(i) + " of kernel '" + kernel + "' is " + given +
                              ", but the kernel's parameter " + std::to_string(i) + " is " + param_name(param) +
                              ": " + advice);
}

void set_or_throw(ze_kernel_handle_t k, uint32_t i, size_t size, const void* v, const std::string& kernel) {
  ze_result_t r = set_value(k, i, size, v);
  if (r != ZE_RESULT_SUCCESS) throw_arg_error(r, kernel, i, size);
}

}  // namespace

void set_arg_mismatched(ze_kernel_handle_t k, uint32_t i, const void* v, uint8_t given, bool is_signed,
                        uint8_t param, const std::string& kernel) {
  const uint8_t given_class = given & pk::kClassMask, param_class = param & pk::kClassMask;
  const size_t given_size = given & pk::kSizeMask, param_size = param & pk::kSizeMask;
  if (param_class != pk::kInt && param_class != pk::kFloat) {
    // Unknown, a pointer (a uintptr_t device address is the user's business), a struct: the driver's
    // size check as before this check existed.
    ze_result_t r = set_value(k, i, given_size, v);
    if (r != ZE_RESULT_SUCCESS)
      set_arg_converted(k, i, v, given_size, given_class == pk::kInt && is_signed,
                        given_class == pk::kInt && !is_signed, given_class == pk::kFloat, r, kernel);
    return;
  }
  if (given_class == pk::kInt && param_class == pk::kInt) {
    // The value widened to 64 bits as its own type would be; it fits the parameter if some integer
    // of the parameter's width, signed or unsigned, holds it (as the kernel may read either).
    int64_t s = 0;
    uint64_t u = 0;
    widen(v, given_size, &s, &u);
    const unsigned bits = static_cast<unsigned>(param_size * 8);
    const uint64_t umax = bits == 64 ? UINT64_MAX : (uint64_t(1) << bits) - 1;
    const int64_t smin = bits == 64 ? INT64_MIN : -(int64_t(1) << (bits - 1));
    const bool fits = is_signed ? (s >= smin && (s < 0 || static_cast<uint64_t>(s) <= umax)) : u <= umax;
    if (!fits)
      throw zex::InvalidArgument("zex: argument " + std::to_string(i) + " of kernel '" + kernel + "' is " +
                                  given_name(given, is_signed) + " whose value " +
                                  (is_signed ? std::to_string(s) : std::to_string(u)) +
                                  " does not fit the kernel's parameter " + std::to_string(i) + ", " +
                                  param_name(param));
    // Little-endian: the low bytes of the two's-complement value are the narrower integer's.
    const uint64_t w = is_signed ? static_cast<uint64_t>(s) : u;
    return set_or_throw(k, i, param_size, &w, kernel);
  }
  if (given_class == pk::kFloat && param_class == pk::kFloat && (param_size == 4 || param_size == 8)) {
    long double x = 0;
    if (given_size == 4) { float f; std::memcpy(&f, v, 4); x = f; }
    else if (given_size == 8) { double d; std::memcpy(&d, v, 8); x = d; }
    else { std::memcpy(&x, v, sizeof x); }
    if (param_size == 4) {
      const float f = static_cast<float>(x);
      return set_or_throw(k, i, 4, &f, kernel);
    }
    const double d = static_cast<double>(x);
    return set_or_throw(k, i, 8, &d, kernel);
  }
  throw_mismatch(i, kernel, given_name(given, is_signed), param,
                 param_class == pk::kInt ? "pass an integer"
                 : param_size == 2       ? "zex does not convert to half: pass its bits as a uint16_t to a ushort parameter"
                                         : "pass a float or a double");
}

}  // namespace detail

}  // namespace zex
