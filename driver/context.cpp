// Contexts: creation, status, the system barrier and residency (which on the CPU only validates).
#include "objects.hpp"

#include <atomic>
#include <new>

namespace zexcpu {
namespace {

// ---------------------------------------------------------------------------------------------
// Contexts

ze_result_t create_context(ze_driver_handle_t hDriver, const ze_context_desc_t* desc, uint32_t numDevices,
                           ze_device_handle_t* phDevices, ze_context_handle_t* phContext) {
  if (hDriver == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (desc == nullptr || phContext == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (!is_driver(hDriver)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (desc->flags & ~ze_context_flags_t(ZE_CONTEXT_FLAG_TBD)) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  if (numDevices > 0 && phDevices == nullptr) return ZE_RESULT_ERROR_INVALID_SIZE;
  for (uint32_t i = 0; i < numDevices; ++i) {
    if (phDevices[i] == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!is_device(phDevices[i])) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  }
  auto* c = new (std::nothrow) _ze_context_handle_t;
  if (c == nullptr) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  *phContext = c;
  return ZE_RESULT_SUCCESS;
}

}  // namespace

/// Errors: INVALID_NULL_HANDLE (hDriver), INVALID_NULL_POINTER (desc, phContext),
/// INVALID_ENUMERATION (desc->flags), INVALID_ARGUMENT (not a zex-cpu driver).
ze_result_t ZE_APICALL zeContextCreate(ze_driver_handle_t hDriver, const ze_context_desc_t* desc,
                                       ze_context_handle_t* phContext) {
  ZEXCPU_FAULT_POINT("zeContextCreate");
  return create_context(hDriver, desc, 0, nullptr, phContext);
}

/// As zeContextCreate, plus INVALID_SIZE (phDevices null with numDevices > 0).
ze_result_t ZE_APICALL zeContextCreateEx(ze_driver_handle_t hDriver, const ze_context_desc_t* desc,
                                         uint32_t numDevices, ze_device_handle_t* phDevices,
                                         ze_context_handle_t* phContext) {
  ZEXCPU_FAULT_POINT("zeContextCreateEx");
  return create_context(hDriver, desc, numDevices, phDevices, phContext);
}

ze_result_t ZE_APICALL zeContextDestroy(ze_context_handle_t hContext) {
  ZEXCPU_DESTROY_POINT("zeContextDestroy", hContext);
  ZEXCPU_CHECK(check_context(hContext));
  release_virtual_memory(hContext);
  hContext->magic = kDeadMagic;
  delete hContext;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeContextGetStatus(ze_context_handle_t hContext) {
  ZEXCPU_FAULT_POINT("zeContextGetStatus");
  ZEXCPU_CHECK(check_context(hContext));
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeContextSystemBarrier(ze_context_handle_t hContext, ze_device_handle_t hDevice) {
  ZEXCPU_FAULT_POINT("zeContextSystemBarrier");
  ZEXCPU_CHECK(check_context(hContext));
  if (hDevice == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_device(hDevice)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return ZE_RESULT_SUCCESS;
}

namespace {

// Residency is a GPU concern; on the CPU everything is always resident, so these only validate.
ze_result_t residency(ze_context_handle_t hContext, ze_device_handle_t hDevice, void* ptr) {
  ZEXCPU_CHECK(check_context(hContext));
  if (hDevice == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (ptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (!is_device(hDevice)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  return ZE_RESULT_SUCCESS;
}

}  // namespace

ze_result_t ZE_APICALL zeContextMakeMemoryResident(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                                   void* ptr, size_t) {
  ZEXCPU_FAULT_POINT("zeContextMakeMemoryResident");
  return residency(hContext, hDevice, ptr);
}

ze_result_t ZE_APICALL zeContextEvictMemory(ze_context_handle_t hContext, ze_device_handle_t hDevice, void* ptr,
                                            size_t) {
  ZEXCPU_FAULT_POINT("zeContextEvictMemory");
  return residency(hContext, hDevice, ptr);
}

}  // namespace zexcpu
