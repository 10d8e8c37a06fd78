// The Sysman Info Logs extension ("ZES_extension_info_logs", Level Zero specification 1.19), declared
// here because it is newer than every header zex builds against (Debian 12: API 1.4; the newest released
// loader read for this, v1.32.0, has spec 1.17). Names, members, order and values are the
// specification's (scripts/sysman/infoLogs.yml of oneapi-src/level-zero-spec; structure types as the
// loader's pyzes binding uses them), in a namespace of zex's own so that a newer zes_api.h that declares
// them too does not collide. zex never links against these functions: it looks them up at run time
// (the loader's exports, else the driver's extension functions) and says "not offered" when absent.
// zex-cpu implements them (driver/info_log.cpp) from this same header.
#pragma once

#include <level_zero/ze_api.h>
#include <level_zero/zes_api.h>

#include <cstddef>
#include <cstdint>

namespace zex {
namespace detail {
namespace zes_newer {

constexpr const char* kInfoLogsExtName = "ZES_extension_info_logs";  // ZES_INFO_LOGS_EXT_NAME
constexpr uint32_t kInfoLogsExtVersion = (1u << 16) | 0u;            // ZES_INFO_LOGS_EXT_VERSION_1_0

struct InfoLogObject;
struct InfoLogInstanceObject;
using zes_info_log_handle_t = InfoLogObject*;
using zes_info_log_instance_handle_t = InfoLogInstanceObject*;

// zes_structure_type_t values of the extension (not in API 1.4's enumeration: cast).
constexpr uint32_t kStypeInfoLogProperties = 0x00020020;    // ZES_STRUCTURE_TYPE_INFO_LOG_EXT_PROPERTIES
constexpr uint32_t kStypeInfoLogInstanceDesc = 0x00020021;  // ZES_STRUCTURE_TYPE_INFO_LOG_INSTANCE_EXT_DESC
constexpr uint32_t kStypeInfoLogMetadata = 0x00020022;      // ZES_STRUCTURE_TYPE_INFO_LOG_METADATA_EXT
constexpr uint32_t kStypeInfoLogReadStatus = 0x00020023;    // ZES_STRUCTURE_TYPE_INFO_LOG_READ_STATUS_EXT

enum zes_info_log_type_ext_t : uint32_t { ZES_INFO_LOG_TYPE_EXT_DEVICE = 0, ZES_INFO_LOG_TYPE_EXT_FORCE_UINT32 = 0x7fffffff };
enum zes_info_log_format_ext_t : uint32_t { ZES_INFO_LOG_FORMAT_EXT_CPER = 0, ZES_INFO_LOG_FORMAT_EXT_FORCE_UINT32 = 0x7fffffff };
enum zes_info_log_record_type_ext_t : uint32_t {
  ZES_INFO_LOG_RECORD_TYPE_EXT_UNKNOWN = 0,
  ZES_INFO_LOG_RECORD_TYPE_EXT_INFORMATIONAL = 1,
  ZES_INFO_LOG_RECORD_TYPE_EXT_ERROR_CORRECTED = 2,
  ZES_INFO_LOG_RECORD_TYPE_EXT_ERROR_RECOVERABLE = 3,
  ZES_INFO_LOG_RECORD_TYPE_EXT_ERROR_FATAL = 4,
  ZES_INFO_LOG_RECORD_TYPE_EXT_FORCE_UINT32 = 0x7fffffff
};

/// zes_uuid_t (spec 1.7; not in API 1.4).
struct zes_uuid_t {
  uint8_t id[16];
};

struct zes_info_log_ext_properties_t {
  zes_structure_type_t stype;
  void* pNext;
  zes_info_log_type_ext_t infoLogType;
  zes_info_log_format_ext_t infoLogFormat;
  ze_bool_t isNamedInstanceSupported;
  ze_bool_t isPeekDataSupported;
};

struct zes_info_log_instance_ext_desc_t {
  zes_structure_type_t stype;
  const void* pNext;
  uint32_t* pBufferSizeInKb;  // [in,out][optional]
};

struct zes_info_log_metadata_ext_t {
  zes_structure_type_t stype;
  void* pNext;
  zes_pci_address_t address;  // of the device that generated the record; all 0: unknown
  zes_uuid_t uuid;            // of that device; 0: unknown
  uint64_t timestamp;         // ns, reference point the driver's; 0: unknown
  uint32_t lengthOfData;
  uint32_t offset;            // from the start of the returned buffer
  zes_info_log_record_type_ext_t recordType;
};

struct zes_info_log_read_status_ext_t {
  zes_structure_type_t stype;
  void* pNext;
  int64_t droppedRecordCount;  // -1: some, number unknown
  uint64_t consumedDataSize;
  ze_bool_t hasDataToRead;
};

// The layouts as the specification's C declarations have them on LP64 (checked by compiling those).
static_assert(sizeof(zes_info_log_ext_properties_t) == 32, "Info Logs ABI");
static_assert(sizeof(zes_info_log_instance_ext_desc_t) == 24, "Info Logs ABI");
static_assert(sizeof(zes_info_log_metadata_ext_t) == 72 && offsetof(zes_info_log_metadata_ext_t, timestamp) == 48 &&
                  offsetof(zes_info_log_metadata_ext_t, lengthOfData) == 56 &&
                  offsetof(zes_info_log_metadata_ext_t, offset) == 60 &&
                  offsetof(zes_info_log_metadata_ext_t, recordType) == 64,
              "Info Logs ABI");
static_assert(sizeof(zes_info_log_read_status_ext_t) == 40, "Info Logs ABI");

using DriverEnumInfoLogsExtFn = ze_result_t(ZE_APICALL*)(zes_driver_handle_t, uint32_t*, zes_info_log_handle_t*);
using InfoLogGetPropertiesExtFn = ze_result_t(ZE_APICALL*)(zes_info_log_handle_t, zes_info_log_ext_properties_t*);
using InfoLogCreateInstanceExtFn = ze_result_t(ZE_APICALL*)(zes_info_log_handle_t, const char*,
                                                            zes_info_log_instance_ext_desc_t*,
                                                            zes_info_log_instance_handle_t*);
using InfoLogInstanceReadExtFn = ze_result_t(ZE_APICALL*)(zes_info_log_instance_handle_t, uint64_t timeout_ms,
                                                          uint32_t* pSize, uint8_t* pBuffer, uint32_t* pRecordCount,
                                                          zes_info_log_metadata_ext_t*,
                                                          zes_info_log_read_status_ext_t*);
using InfoLogInstanceDeleteExtFn = ze_result_t(ZE_APICALL*)(zes_info_log_instance_handle_t);

// The six entry points (the fault sweep's list of calls finds them by these declarations):
//   zesDriverEnumInfoLogsExt(hDriver, pCount, phInfoLogs)
//   zesInfoLogGetPropertiesExt(hInfoLog, pProperties)
//   zesInfoLogCreateInstanceExt(hInfoLog, pInstanceName, pDesc, phInfoLogInstance)
//   zesInfoLogInstanceReadWithMetadataExt(hInstance, timeout, pSize, pBuffer, pRecordCount, pDescriptors, pReadStatus)
//   zesInfoLogInstancePeekWithMetadataExt(the same; consumes nothing)
//   zesInfoLogInstanceDeleteExt(hInstance)
constexpr const char* kEnumInfoLogsName = "zesDriverEnumInfoLogsExt";
constexpr const char* kGetPropertiesName = "zesInfoLogGetPropertiesExt";
constexpr const char* kCreateInstanceName = "zesInfoLogCreateInstanceExt";
constexpr const char* kReadName = "zesInfoLogInstanceReadWithMetadataExt";
constexpr const char* kPeekName = "zesInfoLogInstancePeekWithMetadataExt";
constexpr const char* kDeleteName = "zesInfoLogInstanceDeleteExt";

/// The six functions, as found at run time (any may be null).
struct InfoLogApi {
  DriverEnumInfoLogsExtFn enumerate = nullptr;
  InfoLogGetPropertiesExtFn properties = nullptr;
  InfoLogCreateInstanceExtFn create = nullptr;
  InfoLogInstanceReadExtFn read = nullptr;
  InfoLogInstanceReadExtFn peek = nullptr;
  InfoLogInstanceDeleteExtFn destroy = nullptr;
};

}  // namespace zes_newer
}  // namespace detail
}  // namespace zex
