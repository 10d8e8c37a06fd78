// What zex knows of a kernel parameter's type, from the module's SPIR-V, in one byte: the class in the
// top three bits, the size in bytes in the low five. A launch compares it with the same byte computed
// from the argument's C++ type at compile time (Stream::launch), so checking a scalar costs one byte
// load and one compare; only a mismatch reaches the compiled cold path (src/runtime/stream.cpp).
#pragma once

#include <cstdint>

namespace zex {
namespace detail {
namespace param_kind {

constexpr uint8_t kOther = 0;         // unknown, a vector, an image, ...: not checked
constexpr uint8_t kInt = 0x20;        // | bytes: OpTypeInt (OpenCL has no signedness in SPIR-V)
constexpr uint8_t kFloat = 0x40;      // | bytes: OpTypeFloat
constexpr uint8_t kPointer = 0x60;    // any storage class: SPIR-V pointers say too little to check
constexpr uint8_t kAggregate = 0x80;  // a by-value struct (llvm-spirv: a ByVal Function pointer)
constexpr uint8_t kClassMask = 0xe0;
constexpr uint8_t kSizeMask = 0x1f;

}  // namespace param_kind
}  // namespace detail
}  // namespace zex
