// Sysman, as much as a lost device needs (docs/cpu-driver.md, "A lost device"): the device state with
// its reset reasons, two RAS error sets (correctable, uncorrectable), and the Info Log extension
// (info_log.cpp). As on NEO, Sysman works on core device handles only when ZES_ENABLE_SYSMAN=1 was set
// before zeInit; otherwise every call answers ZE_RESULT_ERROR_UNINITIALIZED.
#include "device_loss.hpp"
#include "objects.hpp"

#include <level_zero/zes_api.h>

#include <cstring>

struct _zes_ras_handle_t {
  uint32_t magic;
  zes_ras_error_type_t type;
};

namespace zexcpu {

namespace {
constexpr uint32_t kRasMagic = 0x7a435352;  // "RSCz"
_zes_ras_handle_t g_ras_sets[2] = {{kRasMagic, ZES_RAS_ERROR_TYPE_CORRECTABLE},
                                   {kRasMagic, ZES_RAS_ERROR_TYPE_UNCORRECTABLE}};

ze_result_t check_sysman_device(zes_device_handle_t h) {
  if (!sysman_enabled()) return ZE_RESULT_ERROR_UNINITIALIZED;
  if (h == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_device(reinterpret_cast<ze_device_handle_t>(h))) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  return ZE_RESULT_SUCCESS;
}

ze_result_t check_ras(zes_ras_handle_t h) {
  if (!sysman_enabled()) return ZE_RESULT_ERROR_UNINITIALIZED;
  if (h == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (h != &g_ras_sets[0] && h != &g_ras_sets[1]) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  return ZE_RESULT_SUCCESS;
}
}  // namespace

/// The reset reasons: none, or WEDGED once the device is lost (NEO reports a wedged GPU so); repair
/// is unsupported.
ze_result_t ZE_APICALL zesDeviceGetState(zes_device_handle_t hDevice, zes_device_state_t* pState) {
  ZEXCPU_FAULT_POINT("zesDeviceGetState");
  ZEXCPU_CHECK(check_sysman_device(hDevice));
  if (pState == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  pState->reset = device_lost() ? ZES_RESET_REASON_FLAG_WEDGED : 0;
  pState->repaired = ZES_REPAIR_STATUS_UNSUPPORTED;
  return ZE_RESULT_SUCCESS;
}

/// Two error sets: correctable and uncorrectable, on the device itself (no sub-devices).
ze_result_t ZE_APICALL zesDeviceEnumRasErrorSets(zes_device_handle_t hDevice, uint32_t* pCount,
                                                 zes_ras_handle_t* phRas) {
  ZEXCPU_FAULT_POINT("zesDeviceEnumRasErrorSets");
  ZEXCPU_CHECK(check_sysman_device(hDevice));
  if (pCount == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (*pCount == 0 || phRas == nullptr) {
    *pCount = 2;
    return ZE_RESULT_SUCCESS;
  }
  if (*pCount > 2) *pCount = 2;
  for (uint32_t i = 0; i < *pCount; ++i) phRas[i] = &g_ras_sets[i];
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zesRasGetProperties(zes_ras_handle_t hRas, zes_ras_properties_t* pProperties) {
  ZEXCPU_FAULT_POINT("zesRasGetProperties");
  ZEXCPU_CHECK(check_ras(hRas));
  if (pProperties == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  pProperties->type = hRas->type;
  pProperties->onSubdevice = false;
  pProperties->subdeviceId = 0;
  return ZE_RESULT_SUCCESS;
}

/// The counters of the set; `clear` resets them (after reading), as the specification says.
ze_result_t ZE_APICALL zesRasGetState(zes_ras_handle_t hRas, ze_bool_t clear, zes_ras_state_t* pState) {
  ZEXCPU_FAULT_POINT("zesRasGetState");
  ZEXCPU_CHECK(check_ras(hRas));
  if (pState == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  uint64_t all[2][7];
  ras_counters(all);
  const int set = hRas->type == ZES_RAS_ERROR_TYPE_CORRECTABLE ? 0 : 1;
  static_assert(ZES_MAX_RAS_ERROR_CATEGORY_COUNT == 7, "zex-cpu keeps 7 categories per set");
  for (int c = 0; c < 7; ++c) pState->category[c] = all[set][c];
  if (clear) clear_ras_counters(set);
  return ZE_RESULT_SUCCESS;
}

}  // namespace zexcpu
