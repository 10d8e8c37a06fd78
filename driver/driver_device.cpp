// zeInit, the driver and its one device: the PoCL CPU device, described in Level Zero terms.
#include "device_loss.hpp"
#include "objects.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

namespace zexcpu {
namespace {

// Identity of zex-cpu (driverVersion: major.minor.patch packed as NEO does, 8.8.16 bits).
constexpr uint32_t kDriverVersion = (0u << 24) | (1u << 16) | 0u;
constexpr const char* kPoclPlatformName = "Portable Computing Language";

_ze_driver_handle_t g_driver;
// The topology (read by the first successful zeInit): root devices, then each one's sub-devices.
constexpr uint32_t kMaxDevices = 16;
constexpr uint32_t kMaxSubDevices = 2;
_ze_device_handle_t g_roots[kMaxDevices];
_ze_device_handle_t g_subs[kMaxDevices][kMaxSubDevices];
uint32_t g_device_count = 1;
ze_device_type_t g_device_type = ZE_DEVICE_TYPE_CPU;
Platform g_platform;
DeviceInfo g_info;
std::mutex g_init_mutex;
bool g_initialized = false;

std::string cl_platform_string(cl_platform_id p, cl_platform_info what) {
  size_t n = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  clGetPlatformInfo(p, what, n, s.data(), nullptr);
  s.resize(std::strlen(s.c_str()));
  return s;
}

std::string cl_device_string(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  clGetDeviceInfo(d, what, n, s.data(), nullptr);
  s.resize(std::strlen(s.c_str()));
  return s;
}

template <typename T> T cl_device_value(cl_device_id d, cl_device_info what, T fallback = T()) {
  T v{};
  return clGetDeviceInfo(d, what, sizeof(v), &v, nullptr) == CL_SUCCESS ? v : fallback;
}

// FNV-1a, to derive stable UUIDs from names.
uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

uint32_t cpu_max_mhz() {
  std::ifstream f("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");  // kHz
  uint64_t khz = 0;
  if (f >> khz && khz > 0) return static_cast<uint32_t>(khz / 1000);
  return 0;
}

void read_device_info(cl_device_id d, DeviceInfo* info) {
  info->cl_name = cl_device_string(d, CL_DEVICE_NAME);
  info->cl_version = cl_device_string(d, CL_DEVICE_VERSION);
  info->vendor_id = cl_device_value<cl_uint>(d, CL_DEVICE_VENDOR_ID);
  info->compute_units = std::max<cl_uint>(1, cl_device_value<cl_uint>(d, CL_DEVICE_MAX_COMPUTE_UNITS));
  info->clock_mhz = cl_device_value<cl_uint>(d, CL_DEVICE_MAX_CLOCK_FREQUENCY);
  if (info->clock_mhz == 0) info->clock_mhz = cpu_max_mhz();
  info->max_alloc = cl_device_value<cl_ulong>(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  info->global_mem = cl_device_value<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_SIZE);
  info->local_mem = cl_device_value<cl_ulong>(d, CL_DEVICE_LOCAL_MEM_SIZE);
  info->cache_size = cl_device_value<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE);
  info->max_work_group = std::max<size_t>(1, cl_device_value<size_t>(d, CL_DEVICE_MAX_WORK_GROUP_SIZE));
  size_t sizes[3] = {1, 1, 1};
  if (clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof(sizes), sizes, nullptr) == CL_SUCCESS)
    for (int i = 0; i < 3; ++i) info->max_work_item[i] = sizes[i];
  info->max_parameter_size = cl_device_value<size_t>(d, CL_DEVICE_MAX_PARAMETER_SIZE);
  info->printf_buffer_size = cl_device_value<size_t>(d, CL_DEVICE_PRINTF_BUFFER_SIZE);
  info->native_float_width = std::max<cl_uint>(1, cl_device_value<cl_uint>(d, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT));
  std::string ext = cl_device_string(d, CL_DEVICE_EXTENSIONS);
  auto has = [&](const char* e) { return (" " + ext + " ").find(std::string(" ") + e + " ") != std::string::npos; };
  info->fp32_config = cl_device_value<cl_device_fp_config>(d, CL_DEVICE_SINGLE_FP_CONFIG);
  info->fp64_config = has("cl_khr_fp64") ? cl_device_value<cl_device_fp_config>(d, CL_DEVICE_DOUBLE_FP_CONFIG) : 0;
  info->fp16_config = has("cl_khr_fp16") ? cl_device_value<cl_device_fp_config>(d, 0x1033 /* HALF_FP_CONFIG */) : 0;
  info->int64_atomics = has("cl_khr_int64_base_atomics");
  info->svm_caps = cl_device_value<cl_device_svm_capabilities>(d, CL_DEVICE_SVM_CAPABILITIES);
  uint64_t h1 = fnv1a("zex-cpu " + info->cl_name), h2 = fnv1a(info->cl_version, h1);
  std::memcpy(info->uuid, &h1, 8);
  std::memcpy(info->uuid + 8, &h2, 8);
}

/// Finds PoCL among the installed OpenCL platforms and creates the one OpenCL context of zex-cpu.
ze_result_t init_platform() {
  cl_uint n = 0;
  if (clGetPlatformIDs(0, nullptr, &n) != CL_SUCCESS) n = 0;
  std::vector<cl_platform_id> platforms(n);
  if (n > 0 && clGetPlatformIDs(n, platforms.data(), nullptr) != CL_SUCCESS) n = 0;
  cl_platform_id pocl = nullptr;
  for (cl_uint i = 0; i < n; ++i)
    if (cl_platform_string(platforms[i], CL_PLATFORM_NAME) == kPoclPlatformName) pocl = platforms[i];
  if (pocl == nullptr) {
    std::fprintf(stderr,
                 "zex-cpu: no PoCL OpenCL platform (\"%s\") among the %u installed OpenCL platforms; "
                 "install pocl-opencl-icd (apt-get install pocl-opencl-icd)\n",
                 kPoclPlatformName, n);
    return ZE_RESULT_ERROR_UNINITIALIZED;
  }
  cl_device_id device = nullptr;
  cl_uint nd = 0;
  if (clGetDeviceIDs(pocl, CL_DEVICE_TYPE_CPU, 1, &device, &nd) != CL_SUCCESS || nd == 0) {
    std::fprintf(stderr, "zex-cpu: the PoCL OpenCL platform has no CPU device; install pocl-opencl-icd\n");
    return ZE_RESULT_ERROR_UNINITIALIZED;
  }
  cl_int err = CL_SUCCESS;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(pocl), 0};
  cl_context context = clCreateContext(props, 1, &device, nullptr, nullptr, &err);
  if (context == nullptr) {
    std::fprintf(stderr, "zex-cpu: clCreateContext on PoCL failed (OpenCL error %d)\n", err);
    return ZE_RESULT_ERROR_UNINITIALIZED;
  }
  read_device_info(device, &g_info);
  g_platform.platform = pocl;
  g_platform.device = device;
  g_platform.context = context;
  g_platform.device_name = "zex-cpu (PoCL " + g_info.cl_name + ")";
  return ZE_RESULT_SUCCESS;
}

/// ZEX_CPU_DEVICES=<1..16>, ZEX_CPU_SUBDEVICES=<0|2>, ZEX_CPU_DEVICE_TYPE=<cpu|gpu>: a malformed value is
/// printed and makes zeInit fail (a typo must not silently test one device).
bool read_topology(uint32_t* devices, uint32_t* subdevices, ze_device_type_t* type) {
  auto number = [](const char* name, uint32_t lo, uint32_t hi, uint32_t dflt, uint32_t* out) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') {
      *out = dflt;
      return true;
    }
    char* end = nullptr;
    unsigned long n = std::strtoul(v, &end, 10);
    if (*v == '-' || end == v || *end != '\0' || n < lo || n > hi) {
      std::fprintf(stderr, "zex-cpu: %s='%s': expected an integer from %u to %u\n", name, v, lo, hi);
      return false;
    }
    *out = static_cast<uint32_t>(n);
    return true;
  };
  if (!number("ZEX_CPU_DEVICES", 1, kMaxDevices, 1, devices)) return false;
  if (!number("ZEX_CPU_SUBDEVICES", 0, kMaxSubDevices, 0, subdevices)) return false;
  if (*subdevices == 1) {
    std::fprintf(stderr, "zex-cpu: ZEX_CPU_SUBDEVICES=1: expected 0 or 2 (a device with one tile has none)\n");
    return false;
  }
  const char* t = std::getenv("ZEX_CPU_DEVICE_TYPE");
  if (t == nullptr || *t == '\0' || std::strcmp(t, "cpu") == 0) {
    *type = ZE_DEVICE_TYPE_CPU;
  } else if (std::strcmp(t, "gpu") == 0) {
    *type = ZE_DEVICE_TYPE_GPU;
  } else {
    std::fprintf(stderr, "zex-cpu: ZEX_CPU_DEVICE_TYPE='%s': expected cpu or gpu\n", t);
    return false;
  }
  return true;
}

void name_device(_ze_device_handle_t* d, const std::string& name, uint64_t salt) {
  size_t n = std::min(name.size(), size_t(ZE_MAX_DEVICE_NAME) - 1);
  std::memcpy(d->name, name.data(), n);
  d->name[n] = '\0';
  std::memcpy(d->uuid, g_info.uuid, sizeof d->uuid);
  uint64_t h = fnv1a(std::to_string(salt), 1469598103934665603ull);
  for (int i = 0; i < 8; ++i) d->uuid[8 + i] ^= static_cast<uint8_t>(h >> (8 * i));
}

/// Lays out the devices. With one device and no sub-devices, its name and UUID are what they always were.
void build_topology(uint32_t devices, uint32_t subdevices) {
  g_device_count = devices;
  const std::string pocl = "(PoCL " + g_info.cl_name + ")";
  for (uint32_t i = 0; i < devices; ++i) {
    _ze_device_handle_t& d = g_roots[i];
    d.index = i;
    d.sub = -1;
    d.sub_count = subdevices;
    d.subs = subdevices ? g_subs[i] : nullptr;
    if (devices == 1) {
      name_device(&d, g_platform.device_name, 0);
      std::memcpy(d.uuid, g_info.uuid, sizeof d.uuid);
    } else {
      name_device(&d, "zex-cpu " + std::to_string(i) + " " + pocl, 1 + i);
    }
    for (uint32_t s = 0; s < subdevices; ++s) {
      _ze_device_handle_t& t = g_subs[i][s];
      t.index = i;
      t.sub = static_cast<int32_t>(s);
      t.parent = &d;
      name_device(&t, "zex-cpu " + std::to_string(i) + "." + std::to_string(s) + " " + pocl, 1000 + i * 16 + s);
    }
  }
}

// Fills min(*pCount, 1) handles, or reports that there is one; the usual Level Zero count protocol.
template <typename H> ze_result_t one_handle(uint32_t* pCount, H* out, H the_one) {
  if (pCount == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (*pCount == 0 || out == nullptr) {
    *pCount = 1;
    return ZE_RESULT_SUCCESS;
  }
  *pCount = 1;
  out[0] = the_one;
  return ZE_RESULT_SUCCESS;
}

void copy_name(char* dst, const std::string& s) {
  size_t n = std::min(s.size(), size_t(ZE_MAX_DEVICE_NAME) - 1);
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

ze_device_fp_flags_t fp_flags(uint64_t cl) {
  ze_device_fp_flags_t f = 0;
  if (cl & CL_FP_DENORM) f |= ZE_DEVICE_FP_FLAG_DENORM;
  if (cl & CL_FP_INF_NAN) f |= ZE_DEVICE_FP_FLAG_INF_NAN;
  if (cl & CL_FP_ROUND_TO_NEAREST) f |= ZE_DEVICE_FP_FLAG_ROUND_TO_NEAREST;
  if (cl & CL_FP_ROUND_TO_ZERO) f |= ZE_DEVICE_FP_FLAG_ROUND_TO_ZERO;
  if (cl & CL_FP_ROUND_TO_INF) f |= ZE_DEVICE_FP_FLAG_ROUND_TO_INF;
  if (cl & CL_FP_FMA) f |= ZE_DEVICE_FP_FLAG_FMA;
  if (cl & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) f |= ZE_DEVICE_FP_FLAG_ROUNDED_DIVIDE_SQRT;
  if (cl & CL_FP_SOFT_FLOAT) f |= ZE_DEVICE_FP_FLAG_SOFT_FLOAT;
  return f;
}

// ---------------------------------------------------------------------------------------------
// Driver

}  // namespace

/// Errors: ZE_RESULT_ERROR_INVALID_ENUMERATION (unknown flag bits), ZE_RESULT_ERROR_UNINITIALIZED (no
/// PoCL, or VPU_ONLY), ZE_RESULT_ERROR_INVALID_ARGUMENT (malformed ZEX_CPU_FAIL).
ze_result_t ZE_APICALL zeInit(ze_init_flags_t flags) {
  ZEXCPU_FAULT_POINT("zeInit");
  if (fault_injection_error() != nullptr) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (flags & ~ze_init_flags_t(ZE_INIT_FLAG_GPU_ONLY | ZE_INIT_FLAG_VPU_ONLY))
    return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  // zex-cpu stands in for a GPU, so GPU_ONLY keeps it; a VPU-only request does not want it.
  if (flags == ZE_INIT_FLAG_VPU_ONLY) return ZE_RESULT_ERROR_UNINITIALIZED;
  std::lock_guard<std::mutex> lock(g_init_mutex);
  if (g_initialized) return ZE_RESULT_SUCCESS;
  if (!read_loss_config()) return ZE_RESULT_ERROR_INVALID_ARGUMENT;  // malformed ZEX_CPU_LOSE_DEVICE
  uint32_t devices = 1, subdevices = 0;
  if (!read_topology(&devices, &subdevices, &g_device_type)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  ze_result_t r = init_platform();
  if (r == ZE_RESULT_SUCCESS) {
    build_topology(devices, subdevices);
    g_initialized = true;
    // Registered after PoCL and LLVM are loaded and initialized, so it runs before their teardown.
    std::atexit(stop_all_workers);
  }
  return r;
}

ze_result_t ZE_APICALL zeDriverGet(uint32_t* pCount, ze_driver_handle_t* phDrivers) {
  ZEXCPU_FAULT_POINT("zeDriverGet");
  return one_handle(pCount, phDrivers, the_driver());
}

ze_result_t ZE_APICALL zeDriverGetApiVersion(ze_driver_handle_t hDriver, ze_api_version_t* version) {
  ZEXCPU_FAULT_POINT("zeDriverGetApiVersion");
  if (hDriver == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (version == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (!is_driver(hDriver)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  *version = ZE_API_VERSION_CURRENT;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeDriverGetProperties(ze_driver_handle_t hDriver, ze_driver_properties_t* props) {
  ZEXCPU_FAULT_POINT("zeDriverGetProperties");
  if (hDriver == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (props == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (!is_driver(hDriver)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  uint64_t h1 = fnv1a("zex-cpu driver"), h2 = fnv1a(std::to_string(kDriverVersion), h1);
  std::memcpy(props->uuid.id, &h1, 8);
  std::memcpy(props->uuid.id + 8, &h2, 8);
  props->driverVersion = kDriverVersion;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeDriverGetIpcProperties(ze_driver_handle_t hDriver, ze_driver_ipc_properties_t* props) {
  ZEXCPU_FAULT_POINT("zeDriverGetIpcProperties");
  if (hDriver == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (props == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (!is_driver(hDriver)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  props->flags = ZE_IPC_PROPERTY_FLAG_MEMORY;  // device allocations (memory_ipc.cpp); no event pools
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeDriverGetExtensionProperties(ze_driver_handle_t hDriver, uint32_t* pCount,
                                                      ze_driver_extension_properties_t* props) {
  ZEXCPU_FAULT_POINT("zeDriverGetExtensionProperties");
  if (hDriver == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (pCount == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (!is_driver(hDriver)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  // What a client cannot learn from the API version (1.4, the installed headers): every immediate list
  // and queue of zex-cpu runs in order, so it may rely on that (and ZE_COMMAND_QUEUE_FLAG_IN_ORDER of 1.7
  // is accepted) without chaining events between consecutive commands.
  // ZEX_CPU_NO_IN_ORDER=1 withdraws that promise, as a driver that makes none, so that a client's
  // chained path (each command waiting for the previous one's event) can be tested.
  // The Sysman Info Logs extension (spec 1.19) is listed here too: the installed loader has no
  // zesDriverGetExtensionProperties. ZEX_CPU_NO_INFO_LOG=1 withdraws it.
  static const ze_driver_extension_properties_t kInOrder{"ZEX_CPU_in_order_immediate_lists", ZE_MAKE_VERSION(1, 0)};
  static const ze_driver_extension_properties_t kInfoLogs{"ZES_extension_info_logs", ZE_MAKE_VERSION(1, 0)};
  static const bool in_order = [] {
    const char* v = std::getenv("ZEX_CPU_NO_IN_ORDER");
    return v == nullptr || *v == '\0' || std::strcmp(v, "0") == 0;
  }();
  // Spec 1.9's experimental mutable command lists, version 1.0 (mutable_list.cpp);
  // ZEX_CPU_NO_MUTABLE_COMMAND_LIST=1 withdraws them.
  static const ze_driver_extension_properties_t kMutable{"ZE_experimental_mutable_command_list", ZE_MAKE_VERSION(1, 0)};
  const ze_driver_extension_properties_t* offered[3];
  uint32_t n = 0;
  if (in_order) offered[n++] = &kInOrder;
  if (info_log_offered()) offered[n++] = &kInfoLogs;
  if (mutable_lists_offered()) offered[n++] = &kMutable;
  if (*pCount == 0 || props == nullptr) {  // a count query: nothing is written
    *pCount = n;
    return ZE_RESULT_SUCCESS;
  }
  if (*pCount > n) *pCount = n;
  for (uint32_t i = 0; i < *pCount; ++i) props[i] = *offered[i];
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeDriverGetExtensionFunctionAddress(ze_driver_handle_t hDriver, const char* name,
                                                           void** ppFunctionAddress) {
  ZEXCPU_FAULT_POINT("zeDriverGetExtensionFunctionAddress");
  if (hDriver == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (name == nullptr || ppFunctionAddress == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (!is_driver(hDriver)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  void* f = extension_function(name);
  if (f == nullptr) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  *ppFunctionAddress = f;
  return ZE_RESULT_SUCCESS;
}

namespace {

// ---------------------------------------------------------------------------------------------
// Device

#define ZEXCPU_CHECK_DEVICE(h)                                         \
  do {                                                                 \
    if ((h) == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;    \
    if (!is_device(h)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;        \
  } while (0)

}  // namespace

ze_result_t ZE_APICALL zeDeviceGet(ze_driver_handle_t hDriver, uint32_t* pCount, ze_device_handle_t* phDevices) {
  ZEXCPU_FAULT_POINT("zeDeviceGet");
  if (hDriver == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_driver(hDriver)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (pCount == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (*pCount == 0 || phDevices == nullptr) {
    *pCount = g_device_count;
    return ZE_RESULT_SUCCESS;
  }
  *pCount = std::min(*pCount, g_device_count);
  for (uint32_t i = 0; i < *pCount; ++i) phDevices[i] = &g_roots[i];
  return ZE_RESULT_SUCCESS;
}

/// A root device's sub-devices (ZEX_CPU_SUBDEVICES: 0 or 2, as PVC's tiles); a sub-device has none.
ze_result_t ZE_APICALL zeDeviceGetSubDevices(ze_device_handle_t hDevice, uint32_t* pCount, ze_device_handle_t* phSubdevices) {
  ZEXCPU_FAULT_POINT("zeDeviceGetSubDevices");
  ZEXCPU_CHECK_DEVICE(hDevice);
  if (pCount == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  const uint32_t n = hDevice->sub_count;
  if (*pCount == 0 || phSubdevices == nullptr) {
    *pCount = n;
    return ZE_RESULT_SUCCESS;
  }
  *pCount = std::min(*pCount, n);
  for (uint32_t i = 0; i < *pCount; ++i) phSubdevices[i] = &hDevice->subs[i];
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeDeviceGetProperties(ze_device_handle_t hDevice, ze_device_properties_t* p) {
  ZEXCPU_FAULT_POINT("zeDeviceGetProperties");
  ZEXCPU_CHECK_DEVICE(hDevice);
  if (p == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  const DeviceInfo& info = g_info;
  p->type = g_device_type;  // everything else stays truthful: a CPU that shares the host's memory
  p->vendorId = info.vendor_id;
  p->deviceId = 0;
  p->flags = ZE_DEVICE_PROPERTY_FLAG_INTEGRATED | (hDevice->sub >= 0 ? ZE_DEVICE_PROPERTY_FLAG_SUBDEVICE : 0);
  p->subdeviceId = hDevice->sub >= 0 ? static_cast<uint32_t>(hDevice->sub) : 0;
  p->coreClockRate = info.clock_mhz;
  p->maxMemAllocSize = info.max_alloc;
  p->maxHardwareContexts = 64;
  p->maxCommandQueuePriority = 0;
  p->numThreadsPerEU = 1;
  p->physicalEUSimdWidth = info.native_float_width;
  p->numEUsPerSubslice = info.compute_units;
  p->numSubslicesPerSlice = 1;
  p->numSlices = 1;
  // ns for the 1.0 structure; cycles per second when the caller asked for the 1.2 meaning.
  p->timerResolution = p->stype == ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2 ? 1000000000ull : 1ull;
  p->timestampValidBits = 64;
  p->kernelTimestampValidBits = 64;
  std::memcpy(p->uuid.id, hDevice->uuid, sizeof(p->uuid.id));
  copy_name(p->name, hDevice->name);
  fill_mutable_properties(p->pNext);  // ze_mutable_command_list_exp_properties_t, where chained
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeDeviceGetComputeProperties(ze_device_handle_t hDevice, ze_device_compute_properties_t* p) {
  ZEXCPU_FAULT_POINT("zeDeviceGetComputeProperties");
  ZEXCPU_CHECK_DEVICE(hDevice);
  if (p == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  const DeviceInfo& info = g_info;
  auto clamp32 = [](uint64_t v) { return static_cast<uint32_t>(std::min<uint64_t>(v, UINT32_MAX)); };
  p->maxTotalGroupSize = clamp32(info.max_work_group);
  p->maxGroupSizeX = clamp32(std::min(info.max_work_item[0], info.max_work_group));
  p->maxGroupSizeY = clamp32(std::min(info.max_work_item[1], info.max_work_group));
  p->maxGroupSizeZ = clamp32(std::min(info.max_work_item[2], info.max_work_group));
  p->maxGroupCountX = UINT32_MAX;
  p->maxGroupCountY = UINT32_MAX;
  p->maxGroupCountZ = UINT32_MAX;
  p->maxSharedLocalMemory = clamp32(info.local_mem);
  // PoCL's CPU device runs each work-item of a group in turn: one lane per sub-group.
  p->numSubGroupSizes = 1;
  std::memset(p->subGroupSizes, 0, sizeof(p->subGroupSizes));
  p->subGroupSizes[0] = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeDeviceGetModuleProperties(ze_device_handle_t hDevice, ze_device_module_properties_t* p) {
  ZEXCPU_FAULT_POINT("zeDeviceGetModuleProperties");
  ZEXCPU_CHECK_DEVICE(hDevice);
  if (p == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  const DeviceInfo& info = g_info;
  p->spirvVersionSupported = ZE_MAKE_VERSION(1, 4);  // what llvm-spirv-15 reads
  p->flags = 0;
  if (info.fp16_config) p->flags |= ZE_DEVICE_MODULE_FLAG_FP16;
  if (info.fp64_config) p->flags |= ZE_DEVICE_MODULE_FLAG_FP64;
  if (info.int64_atomics) p->flags |= ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS;
  p->fp16flags = fp_flags(info.fp16_config);
  p->fp32flags = fp_flags(info.fp32_config);
  p->fp64flags = fp_flags(info.fp64_config);
  p->maxArgumentsSize = static_cast<uint32_t>(std::min<uint64_t>(info.max_parameter_size, UINT32_MAX));
  p->printfBufferSize = static_cast<uint32_t>(std::min<uint64_t>(info.printf_buffer_size, UINT32_MAX));
  std::memset(p->nativeKernelSupported.id, 0, sizeof(p->nativeKernelSupported.id));
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeDeviceGetCommandQueueGroupProperties(ze_device_handle_t hDevice, uint32_t* pCount,
                                                              ze_command_queue_group_properties_t* p) {
  ZEXCPU_FAULT_POINT("zeDeviceGetCommandQueueGroupProperties");
  ZEXCPU_CHECK_DEVICE(hDevice);
  if (pCount == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (*pCount == 0 || p == nullptr) {
    *pCount = 1;
    return ZE_RESULT_SUCCESS;
  }
  *pCount = 1;
  p[0].flags = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
  p[0].maxMemoryFillPatternSize = kMaxFillPatternSize;
  p[0].numQueues = kNumQueues;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeDeviceGetMemoryProperties(ze_device_handle_t hDevice, uint32_t* pCount,
                                                   ze_device_memory_properties_t* p) {
  ZEXCPU_FAULT_POINT("zeDeviceGetMemoryProperties");
  ZEXCPU_CHECK_DEVICE(hDevice);
  if (pCount == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (*pCount == 0 || p == nullptr) {
    *pCount = 1;
    return ZE_RESULT_SUCCESS;
  }
  *pCount = 1;
  p[0].flags = 0;
  p[0].maxClockRate = 0;  // unknown
  p[0].maxBusWidth = 64;
  p[0].totalSize = g_info.global_mem;
  copy_name(p[0].name, "host memory");
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeDeviceGetMemoryAccessProperties(ze_device_handle_t hDevice,
                                                         ze_device_memory_access_properties_t* p) {
  ZEXCPU_FAULT_POINT("zeDeviceGetMemoryAccessProperties");
  ZEXCPU_CHECK_DEVICE(hDevice);
  if (p == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  constexpr ze_memory_access_cap_flags_t rw = ZE_MEMORY_ACCESS_CAP_FLAG_RW | ZE_MEMORY_ACCESS_CAP_FLAG_CONCURRENT;
  constexpr ze_memory_access_cap_flags_t atomics =
      ZE_MEMORY_ACCESS_CAP_FLAG_ATOMIC | ZE_MEMORY_ACCESS_CAP_FLAG_CONCURRENT_ATOMIC;
  // Host USM without atomics, as Intel DG2 and PVC report it: code tested here must not rely on
  // device atomics to host memory (they would work on the CPU, but not on those GPUs).
  p->hostAllocCapabilities = rw;
  p->deviceAllocCapabilities = rw | atomics;
  p->sharedSingleDeviceAllocCapabilities = rw | atomics;
  p->sharedCrossDeviceAllocCapabilities = 0;
  p->sharedSystemAllocCapabilities = 0;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeDeviceGetCacheProperties(ze_device_handle_t hDevice, uint32_t* pCount,
                                                  ze_device_cache_properties_t* p) {
  ZEXCPU_FAULT_POINT("zeDeviceGetCacheProperties");
  ZEXCPU_CHECK_DEVICE(hDevice);
  if (pCount == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (*pCount == 0 || p == nullptr) {
    *pCount = 1;
    return ZE_RESULT_SUCCESS;
  }
  *pCount = 1;
  p[0].flags = 0;
  p[0].cacheSize = g_info.cache_size;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeDeviceGetImageProperties(ze_device_handle_t hDevice, ze_device_image_properties_t* p) {
  ZEXCPU_FAULT_POINT("zeDeviceGetImageProperties");
  ZEXCPU_CHECK_DEVICE(hDevice);
  if (p == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  // No images: every limit is zero (zeImageCreate answers UNSUPPORTED_FEATURE).
  p->maxImageDims1D = p->maxImageDims2D = p->maxImageDims3D = 0;
  p->maxImageBufferSize = 0;
  p->maxImageArraySlices = 0;
  p->maxSamplers = 0;
  p->maxReadImageArgs = p->maxWriteImageArgs = 0;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeDeviceGetExternalMemoryProperties(ze_device_handle_t hDevice,
                                                           ze_device_external_memory_properties_t* p) {
  ZEXCPU_FAULT_POINT("zeDeviceGetExternalMemoryProperties");
  ZEXCPU_CHECK_DEVICE(hDevice);
  if (p == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  p->memoryAllocationImportTypes = p->memoryAllocationExportTypes = 0;
  p->imageImportTypes = p->imageExportTypes = 0;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeDeviceGetP2PProperties(ze_device_handle_t hDevice, ze_device_handle_t hPeer,
                                                ze_device_p2p_properties_t* p) {
  ZEXCPU_FAULT_POINT("zeDeviceGetP2PProperties");
  ZEXCPU_CHECK_DEVICE(hDevice);
  ZEXCPU_CHECK_DEVICE(hPeer);
  if (p == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  // All memory is host memory: every device reaches every other's allocations, atomics included.
  p->flags = ZE_DEVICE_P2P_PROPERTY_FLAG_ACCESS | ZE_DEVICE_P2P_PROPERTY_FLAG_ATOMICS;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeDeviceCanAccessPeer(ze_device_handle_t hDevice, ze_device_handle_t hPeer, ze_bool_t* value) {
  ZEXCPU_FAULT_POINT("zeDeviceCanAccessPeer");
  ZEXCPU_CHECK_DEVICE(hDevice);
  ZEXCPU_CHECK_DEVICE(hPeer);
  if (value == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *value = true;  // all memory is host memory
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeDeviceGetStatus(ze_device_handle_t hDevice) {
  ZEXCPU_FAULT_POINT("zeDeviceGetStatus");  // answers DEVICE_LOST once the device is lost
  ZEXCPU_CHECK_DEVICE(hDevice);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeDeviceGetGlobalTimestamps(ze_device_handle_t hDevice, uint64_t* hostTimestamp,
                                                   uint64_t* deviceTimestamp) {
  ZEXCPU_FAULT_POINT("zeDeviceGetGlobalTimestamps");
  ZEXCPU_CHECK_DEVICE(hDevice);
  if (hostTimestamp == nullptr || deviceTimestamp == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *hostTimestamp = *deviceTimestamp = now_ns();  // the device clock is the host clock
  return ZE_RESULT_SUCCESS;
}

Platform& platform() { return g_platform; }
const DeviceInfo& device_info() { return g_info; }
ze_driver_handle_t the_driver() { return &g_driver; }
ze_device_handle_t the_device() { return &g_roots[0]; }
uint32_t device_count() { return g_device_count; }
ze_device_handle_t root_device(uint32_t i) { return i < g_device_count ? &g_roots[i] : nullptr; }
ze_device_type_t device_type() { return g_device_type; }

}  // namespace zexcpu
