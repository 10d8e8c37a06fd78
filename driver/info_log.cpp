// The Sysman Info Logs extension ("ZES_extension_info_logs", spec 1.19; types from
// <common/zes_newer.hpp>): one device info log in CPER format, whose only records are the ones a
// device loss writes (device_loss.cpp). Newer than the installed loader's DDI tables, so offered through
// zeDriverGetExtensionFunctionAddress (extension_function); ZEX_CPU_NO_INFO_LOG=1 withdraws it. Needs
// Sysman enabled (ZES_ENABLE_SYSMAN=1 at zeInit) like every Sysman call of zex-cpu.
//
// Instances: named ones (isNamedInstanceSupported) and the default one each start collecting at their
// creation, and each has its own read position: reading consumes records for that instance only, peeking
// consumes nothing.
#include "device_loss.hpp"
#include "objects.hpp"

#include "common/zes_newer.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace zn = zex::detail::zes_newer;

struct zex::detail::zes_newer::InfoLogObject {
  uint32_t magic;
};
struct zex::detail::zes_newer::InfoLogInstanceObject {
  uint32_t magic;
  std::string name;
  size_t next = 0;  // index into loss_records() of the next record this instance returns
};

namespace zexcpu {
namespace {

constexpr uint32_t kInfoLogMagic = 0x7a434c49;       // "ILCz"
constexpr uint32_t kInstanceMagic = 0x7a434e49;      // "INCz"
zn::InfoLogObject g_log{kInfoLogMagic};
std::mutex g_mu;  // the instances
// Never destroyed: an instance the application failed to delete stays reachable (not a leak of
// zex-cpu's), and entry points may run during static destruction.
std::vector<zn::InfoLogInstanceObject*>& g_instances = *new std::vector<zn::InfoLogInstanceObject*>;

bool live_instance(zn::zes_info_log_instance_handle_t h) {
  return h != nullptr && std::find(g_instances.begin(), g_instances.end(), h) != g_instances.end() &&
         h->magic == kInstanceMagic;
}

ze_result_t read_records(zn::zes_info_log_instance_handle_t h, uint32_t* pSize, uint8_t* pBuffer,
                         uint32_t* pRecordCount, zn::zes_info_log_metadata_ext_t* pDescriptors,
                         zn::zes_info_log_read_status_ext_t* pReadStatus, bool consume) {
  if (!sysman_enabled()) return ZE_RESULT_ERROR_UNINITIALIZED;
  if (h == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (pSize == nullptr || pRecordCount == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  std::lock_guard<std::mutex> lock(g_mu);
  if (!live_instance(h)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  const std::vector<LossRecord> all = loss_records();
  const size_t from = std::min(h->next, all.size());
  if (*pSize == 0 || *pRecordCount == 0) {  // a query call: totals, nothing written or consumed
    uint64_t bytes = 0;
    for (size_t i = from; i < all.size(); ++i) bytes += all[i].bytes.size();
    *pSize = static_cast<uint32_t>(std::min<uint64_t>(bytes, UINT32_MAX));
    *pRecordCount = static_cast<uint32_t>(all.size() - from);
    if (pReadStatus) {
      pReadStatus->droppedRecordCount = 0;
      pReadStatus->consumedDataSize = 0;
      pReadStatus->hasDataToRead = from < all.size();
    }
    return ZE_RESULT_SUCCESS;
  }
  if (pBuffer == nullptr || pDescriptors == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  uint32_t written = 0, n = 0;
  size_t i = from;
  for (; i < all.size() && n < *pRecordCount; ++i) {
    const auto& rec = all[i].bytes;
    if (rec.size() > *pSize - written) break;  // whole records only
    std::memcpy(pBuffer + written, rec.data(), rec.size());
    zn::zes_info_log_metadata_ext_t& m = pDescriptors[n];
    std::memset(&m.address, 0, sizeof m.address);
    std::memcpy(m.uuid.id, device_info().uuid, sizeof m.uuid.id);
    m.timestamp = all[i].timestamp_ns;
    m.lengthOfData = static_cast<uint32_t>(rec.size());
    m.offset = written;
    m.recordType = zn::ZES_INFO_LOG_RECORD_TYPE_EXT_ERROR_FATAL;  // the CPER header's severity
    written += static_cast<uint32_t>(rec.size());
    ++n;
  }
  if (pReadStatus) {
    pReadStatus->droppedRecordCount = 0;
    pReadStatus->consumedDataSize = consume ? written : 0;
    pReadStatus->hasDataToRead = i < all.size();
  }
  if (consume) h->next = i;
  *pSize = written;
  *pRecordCount = n;
  return ZE_RESULT_SUCCESS;
}

}  // namespace

ze_result_t ZE_APICALL zesDriverEnumInfoLogsExt(zes_driver_handle_t hDriver, uint32_t* pCount,
                                               zn::zes_info_log_handle_t* phInfoLogs) {
  ZEXCPU_FAULT_POINT("zesDriverEnumInfoLogsExt");
  if (!sysman_enabled()) return ZE_RESULT_ERROR_UNINITIALIZED;
  if (hDriver == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_driver(reinterpret_cast<ze_driver_handle_t>(hDriver))) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (pCount == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (*pCount == 0 || phInfoLogs == nullptr) {
    *pCount = 1;
    return ZE_RESULT_SUCCESS;
  }
  *pCount = 1;
  phInfoLogs[0] = &g_log;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zesInfoLogGetPropertiesExt(zn::zes_info_log_handle_t hInfoLog,
                                                 zn::zes_info_log_ext_properties_t* pProperties) {
  ZEXCPU_FAULT_POINT("zesInfoLogGetPropertiesExt");
  if (!sysman_enabled()) return ZE_RESULT_ERROR_UNINITIALIZED;
  if (hInfoLog == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (hInfoLog != &g_log) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (pProperties == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  pProperties->infoLogType = zn::ZES_INFO_LOG_TYPE_EXT_DEVICE;
  pProperties->infoLogFormat = zn::ZES_INFO_LOG_FORMAT_EXT_CPER;
  pProperties->isNamedInstanceSupported = true;
  pProperties->isPeekDataSupported = true;
  return ZE_RESULT_SUCCESS;
}

/// Errors as the specification lists them: HANDLE_OBJECT_IN_USE for a name already in use.
ze_result_t ZE_APICALL zesInfoLogCreateInstanceExt(zn::zes_info_log_handle_t hInfoLog, const char* pInstanceName,
                                                  zn::zes_info_log_instance_ext_desc_t* pDesc,
                                                  zn::zes_info_log_instance_handle_t* phInstance) {
  ZEXCPU_FAULT_POINT("zesInfoLogCreateInstanceExt");
  if (!sysman_enabled()) return ZE_RESULT_ERROR_UNINITIALIZED;
  if (hInfoLog == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (hInfoLog != &g_log) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (pDesc == nullptr || phInstance == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  std::lock_guard<std::mutex> lock(g_mu);
  if (pInstanceName != nullptr)
    for (auto* i : g_instances)
      if (i->name == pInstanceName) return ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE;
  auto* inst = new (std::nothrow) zn::InfoLogInstanceObject{kInstanceMagic, pInstanceName ? pInstanceName : "", 0};
  if (inst == nullptr) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  inst->next = loss_records().size();  // collects from now on
  if (pDesc->pBufferSizeInKb) *pDesc->pBufferSizeInKb = 64;  // what the record store amounts to
  try {
    g_instances.push_back(inst);
  } catch (const std::bad_alloc&) {
    delete inst;
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  *phInstance = inst;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zesInfoLogInstanceReadWithMetadataExt(zn::zes_info_log_instance_handle_t h, uint64_t,
                                                            uint32_t* pSize, uint8_t* pBuffer, uint32_t* pRecordCount,
                                                            zn::zes_info_log_metadata_ext_t* pDescriptors,
                                                            zn::zes_info_log_read_status_ext_t* pReadStatus) {
  ZEXCPU_FAULT_POINT("zesInfoLogInstanceReadWithMetadataExt");
  return read_records(h, pSize, pBuffer, pRecordCount, pDescriptors, pReadStatus, true);
}

ze_result_t ZE_APICALL zesInfoLogInstancePeekWithMetadataExt(zn::zes_info_log_instance_handle_t h, uint64_t,
                                                            uint32_t* pSize, uint8_t* pBuffer, uint32_t* pRecordCount,
                                                            zn::zes_info_log_metadata_ext_t* pDescriptors,
                                                            zn::zes_info_log_read_status_ext_t* pReadStatus) {
  ZEXCPU_FAULT_POINT("zesInfoLogInstancePeekWithMetadataExt");
  return read_records(h, pSize, pBuffer, pRecordCount, pDescriptors, pReadStatus, false);
}

ze_result_t ZE_APICALL zesInfoLogInstanceDeleteExt(zn::zes_info_log_instance_handle_t h) {
  ZEXCPU_FAULT_POINT("zesInfoLogInstanceDeleteExt");
  if (!sysman_enabled()) return ZE_RESULT_ERROR_UNINITIALIZED;
  if (h == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  std::lock_guard<std::mutex> lock(g_mu);
  if (!live_instance(h)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  g_instances.erase(std::find(g_instances.begin(), g_instances.end(), h));
  h->magic = kDeadMagic;
  delete h;
  return ZE_RESULT_SUCCESS;
}

/// The extension's functions by name, unless ZEX_CPU_NO_INFO_LOG=1 (read at zeInit).
bool info_log_function(const char* name, void** out) {
  if (!info_log_offered()) return false;
  struct Entry {
    const char* name;
    void* fn;
  };
  static const Entry kFns[] = {
      {zn::kEnumInfoLogsName, reinterpret_cast<void*>(&zesDriverEnumInfoLogsExt)},
      {zn::kGetPropertiesName, reinterpret_cast<void*>(&zesInfoLogGetPropertiesExt)},
      {zn::kCreateInstanceName, reinterpret_cast<void*>(&zesInfoLogCreateInstanceExt)},
      {zn::kReadName, reinterpret_cast<void*>(&zesInfoLogInstanceReadWithMetadataExt)},
      {zn::kPeekName, reinterpret_cast<void*>(&zesInfoLogInstancePeekWithMetadataExt)},
      {zn::kDeleteName, reinterpret_cast<void*>(&zesInfoLogInstanceDeleteExt)},
  };
  for (const Entry& e : kFns)
    if (std::strcmp(e.name, name) == 0) {
      *out = e.fn;
      return true;
    }
  return false;
}

}  // namespace zexcpu
