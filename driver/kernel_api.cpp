// Kernels: creation from a module, group sizes, arguments (kept in a blob that a launch copies at
// append, launch.cpp), properties.
#include "module_objects.hpp"

#include <new>

namespace zexcpu {

const Limits& limits() {
  static const Limits l = [] {
    Limits x;
    cl_device_id d = platform().device;
    clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof x.max_group, &x.max_group, nullptr);
    clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof x.max_item, x.max_item, nullptr);
    clGetDeviceInfo(d, CL_DEVICE_LOCAL_MEM_SIZE, sizeof x.local_mem, &x.local_mem, nullptr);
    if (!x.max_group) x.max_group = 4096;
    for (auto& m : x.max_item)
      if (!m) m = x.max_group;
    return x;
  }();
  return l;
}

ze_result_t ZE_APICALL zeKernelCreate(ze_module_handle_t hModule, const ze_kernel_desc_t* desc, ze_kernel_handle_t* phKernel) {
  ZEXCPU_FAULT_POINT("zeKernelCreate");
  if (!hModule) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_module(hModule)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!desc || !desc->pKernelName || !phKernel) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->flags > 0x3) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  ze_module_handle_t m = hModule;
  size_t idx = 0;
  while (idx < m->kernels.size() && m->kernels[idx].name != desc->pKernelName) ++idx;
  if (idx == m->kernels.size()) return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
  if (!m->imports.empty() || !m->program) return ZE_RESULT_ERROR_INVALID_MODULE_UNLINKED;

  auto cl = std::make_shared<ClKernel>();
  cl_int err = CL_SUCCESS;
  cl->kernel = clCreateKernel(m->program, m->kernels[idx].pocl_name.c_str(), &err);
  if (!cl->kernel || err != CL_SUCCESS) return err == CL_OUT_OF_HOST_MEMORY ? ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY
                                                                            : ZE_RESULT_ERROR_UNKNOWN;
  cl->module = m;
  auto* k = new (std::nothrow) _ze_kernel_handle_t;
  if (!k) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  k->module = m;
  k->layout = &m->layouts[idx];
  k->cl = std::move(cl);
  k->blob.assign(k->layout->blob_size, 0);
  k->is_set.assign(k->layout->slots.size(), 0);
  k->unset = static_cast<uint32_t>(k->layout->slots.size());
  const KernelInfo& info = *k->layout->info;
  if (info.reqd_group_size[0]) memcpy(k->group, info.reqd_group_size, sizeof k->group);
  m->refs.fetch_add(1, std::memory_order_relaxed);
  *phKernel = k;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeKernelDestroy(ze_kernel_handle_t hKernel) {
  ZEXCPU_DESTROY_POINT("zeKernelDestroy", hKernel);
  if (!hKernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_kernel(hKernel)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  ze_kernel_handle_t k = hKernel;
  ze_module_handle_t m = k->module;
  // Launches still queued hold the ClKernel (and so the cl_kernel and its program) alive; the module's
  // pinned objects outlive them only if the application keeps the module, as the specification asks.
  k->magic = kDeadMagic;
  delete k;
  release_module(m);
  return ZE_RESULT_SUCCESS;
}

ze_result_t check_group_size(const KernelInfo& info, uint32_t x, uint32_t y, uint32_t z) {
  const Limits& l = limits();
  if (x == 0 || y == 0 || z == 0) return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
  if (x > l.max_item[0] || y > l.max_item[1] || z > l.max_item[2]) return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
  if (uint64_t(x) * y * z > l.max_group) return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
  if (info.reqd_group_size[0] &&
      (x != info.reqd_group_size[0] || y != info.reqd_group_size[1] || z != info.reqd_group_size[2]))
    return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeKernelSetGroupSize(ze_kernel_handle_t hKernel, uint32_t groupSizeX, uint32_t groupSizeY,
                                  uint32_t groupSizeZ) {
  ZEXCPU_FAULT_POINT("zeKernelSetGroupSize");
  if (!hKernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_kernel(hKernel)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  ze_kernel_handle_t k = hKernel;
  ze_result_t r = check_group_size(*k->layout->info, groupSizeX, groupSizeY, groupSizeZ);
  if (r != ZE_RESULT_SUCCESS) return r;
  k->group[0] = groupSizeX;
  k->group[1] = groupSizeY;
  k->group[2] = groupSizeZ;
  return ZE_RESULT_SUCCESS;
}

namespace {

// The largest divisor of n that is <= cap.
uint32_t largest_divisor(uint32_t n, uint32_t cap) {
  for (uint32_t d = std::min(n, cap); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

}  // namespace

ze_result_t ZE_APICALL zeKernelSuggestGroupSize(ze_kernel_handle_t hKernel, uint32_t globalSizeX, uint32_t globalSizeY,
                                      uint32_t globalSizeZ, uint32_t* groupSizeX, uint32_t* groupSizeY,
                                      uint32_t* groupSizeZ) {
  ZEXCPU_FAULT_POINT("zeKernelSuggestGroupSize");
  if (!hKernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_kernel(hKernel)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!groupSizeX || !groupSizeY || !groupSizeZ) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (globalSizeX == 0 || globalSizeY == 0 || globalSizeZ == 0) return ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION;
  const KernelInfo& info = *hKernel->layout->info;
  if (info.reqd_group_size[0]) {
    *groupSizeX = info.reqd_group_size[0];
    *groupSizeY = info.reqd_group_size[1];
    *groupSizeZ = info.reqd_group_size[2];
    return ZE_RESULT_SUCCESS;
  }
  // Sizes that divide the global size evenly (Level Zero launches whole groups). PoCL runs a work-group
  // as loops over its work-items on one thread, so a few hundred items amortise the per-group cost while
  // leaving enough groups to spread over the cores.
  const Limits& l = limits();
  uint32_t budget = static_cast<uint32_t>(std::min<size_t>(l.max_group, 256));
  uint32_t x = largest_divisor(globalSizeX, static_cast<uint32_t>(std::min<size_t>(budget, l.max_item[0])));
  budget /= x;
  uint32_t y = largest_divisor(globalSizeY, static_cast<uint32_t>(std::min<size_t>(budget, l.max_item[1])));
  budget /= y;
  uint32_t z = largest_divisor(globalSizeZ, static_cast<uint32_t>(std::min<size_t>(budget, l.max_item[2])));
  *groupSizeX = x;
  *groupSizeY = y;
  *groupSizeZ = z;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeKernelSuggestMaxCooperativeGroupCount(ze_kernel_handle_t hKernel, uint32_t* totalGroupCount) {
  ZEXCPU_FAULT_POINT("zeKernelSuggestMaxCooperativeGroupCount");
  if (!hKernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_kernel(hKernel)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!totalGroupCount) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  // PoCL runs groups on its worker threads, not all at once: only groups that fit at once can wait on
  // each other. One per compute unit is always safe.
  cl_uint cus = 1;
  clGetDeviceInfo(platform().device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cus, &cus, nullptr);
  *totalGroupCount = cus ? cus : 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t encode_argument(const ArgSlot& s, size_t argSize, const void* pArgValue, uint8_t* dst) {
  switch (s.kind) {
    case ArgKind::Pointer:
      if (argSize != sizeof(void*)) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
      if (dst == nullptr) break;
      if (pArgValue)
        memcpy(dst, pArgValue, sizeof(void*));
      else
        memset(dst, 0, sizeof(void*));  // a null pointer
      break;
    case ArgKind::Local:
      // The size is the local buffer's size in bytes; the value is not used.
      if (argSize == 0 || argSize > limits().local_mem) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
      if (dst != nullptr) memcpy(dst, &argSize, sizeof argSize);
      break;
    case ArgKind::Value:
      if (argSize != s.size) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
      if (dst == nullptr) break;
      if (pArgValue)
        memcpy(dst, pArgValue, s.size);
      else
        memset(dst, 0, s.size);
      break;
    case ArgKind::Unsupported:
      return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;  // images, samplers: zex-cpu has none
  }
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeKernelSetArgumentValue(ze_kernel_handle_t hKernel, uint32_t argIndex, size_t argSize,
                                      const void* pArgValue) {
  ZEXCPU_FAULT_POINT("zeKernelSetArgumentValue");
  if (!hKernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_kernel(hKernel)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  ze_kernel_handle_t k = hKernel;
  const auto& slots = k->layout->slots;
  if (argIndex >= slots.size()) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX;
  const ArgSlot& s = slots[argIndex];
  ZEXCPU_CHECK(encode_argument(s, argSize, pArgValue, k->blob.data() + s.offset));
  if (!k->is_set[argIndex]) {
    k->is_set[argIndex] = 1;
    --k->unset;
  }
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeKernelSetIndirectAccess(ze_kernel_handle_t hKernel, ze_kernel_indirect_access_flags_t flags) {
  ZEXCPU_FAULT_POINT("zeKernelSetIndirectAccess");
  if (!hKernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_kernel(hKernel)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (flags > 0x7) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  hKernel->indirect = flags;  // every allocation is always accessible on the CPU
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeKernelGetIndirectAccess(ze_kernel_handle_t hKernel, ze_kernel_indirect_access_flags_t* pFlags) {
  ZEXCPU_FAULT_POINT("zeKernelGetIndirectAccess");
  if (!hKernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_kernel(hKernel)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!pFlags) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *pFlags = hKernel->indirect;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeKernelSetCacheConfig(ze_kernel_handle_t hKernel, ze_cache_config_flags_t flags) {
  ZEXCPU_FAULT_POINT("zeKernelSetCacheConfig");
  if (!hKernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_kernel(hKernel)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (flags > 0x3) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  return ZE_RESULT_SUCCESS;  // a preference; the CPU's caches are not configurable
}

ze_result_t ZE_APICALL zeKernelGetProperties(ze_kernel_handle_t hKernel, ze_kernel_properties_t* pKernelProperties) {
  ZEXCPU_FAULT_POINT("zeKernelGetProperties");
  if (!hKernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_kernel(hKernel)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!pKernelProperties) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  ze_kernel_handle_t k = hKernel;
  const KernelInfo& info = *k->layout->info;
  ze_kernel_properties_t& p = *pKernelProperties;
  p.numKernelArgs = static_cast<uint32_t>(info.args.size());
  p.requiredGroupSizeX = info.reqd_group_size[0];
  p.requiredGroupSizeY = info.reqd_group_size[1];
  p.requiredGroupSizeZ = info.reqd_group_size[2];
  p.requiredNumSubGroups = 0;
  p.requiredSubgroupSize = info.reqd_subgroup_size;
  // PoCL's CPU device runs a work-group's items one after another: a sub-group is one work-item.
  p.maxSubgroupSize = 1;
  p.maxNumSubgroups = static_cast<uint32_t>(limits().max_group);
  cl_ulong local = 0, priv = 0;
  clGetKernelWorkGroupInfo(k->cl->kernel, platform().device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof local, &local, nullptr);
  clGetKernelWorkGroupInfo(k->cl->kernel, platform().device, CL_KERNEL_PRIVATE_MEM_SIZE, sizeof priv, &priv, nullptr);
  p.localMemSize = static_cast<uint32_t>(local);
  p.privateMemSize = static_cast<uint32_t>(priv);
  p.spillMemSize = 0;
  memcpy(p.uuid.mid, k->module->mid, sizeof p.uuid.mid);
  make_uuid(std::string(reinterpret_cast<const char*>(k->module->mid), 16), info.name, p.uuid.kid);
  for (auto* ext = static_cast<ze_base_properties_t*>(p.pNext); ext; ext = static_cast<ze_base_properties_t*>(ext->pNext)) {
    if (ext->stype == ZE_STRUCTURE_TYPE_KERNEL_PREFERRED_GROUP_SIZE_PROPERTIES) {
      size_t multiple = 1;
      clGetKernelWorkGroupInfo(k->cl->kernel, platform().device, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                               sizeof multiple, &multiple, nullptr);
      reinterpret_cast<ze_kernel_preferred_group_size_properties_t*>(ext)->preferredMultiple =
          static_cast<uint32_t>(multiple ? multiple : 1);
    }
  }
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeKernelGetSourceAttributes(ze_kernel_handle_t hKernel, uint32_t* pSize, char** pString) {
  ZEXCPU_FAULT_POINT("zeKernelGetSourceAttributes");
  if (!hKernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_kernel(hKernel)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!pSize) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  const std::string& a = hKernel->layout->info->attributes;
  if (!pString) {  // a size query, as later versions of the specification allow
    *pSize = static_cast<uint32_t>(a.size() + 1);
    return ZE_RESULT_SUCCESS;
  }
  if (!*pString) {
    // This header's form: the string belongs to the kernel object.
    *pString = const_cast<char*>(a.c_str());
    *pSize = static_cast<uint32_t>(a.size() + 1);
    return ZE_RESULT_SUCCESS;
  }
  copy_string(a, pSize, *pString);  // later versions: into the application's buffer of *pSize bytes
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeKernelGetName(ze_kernel_handle_t hKernel, size_t* pSize, char* pName) {
  ZEXCPU_FAULT_POINT("zeKernelGetName");
  if (!hKernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_kernel(hKernel)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!pSize) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  copy_string(hKernel->layout->info->name, pSize, pName);
  return ZE_RESULT_SUCCESS;
}

}  // namespace zexcpu
