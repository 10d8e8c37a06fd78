// Modules and build logs: zeModuleCreate (compile_module, compiler.hpp), zeModuleDynamicLink
// (link_module), native binaries, program-scope variables, kernel names.
#include "device_loss.hpp"
#include "module_objects.hpp"

#include <new>

namespace zexcpu {
namespace {

void fnv(const void* data, size_t n, uint64_t* h) {
  auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) {
    *h ^= p[i];
    *h *= 0x100000001b3ull;
  }
}

// Takes a built (or linked) program's results into the module and registers its storage.
void adopt_program(ze_module_handle_t m, CompiledProgram* prog) {
  m->program = prog->program;
  prog->program = nullptr;
  m->imports = std::move(prog->imports);
  m->kernels = std::move(prog->kernels);
  m->globals = std::move(prog->globals);
  m->blocks = std::move(prog->blocks);
  m->layouts.clear();
  m->layouts.resize(m->kernels.size());
  for (size_t i = 0; i < m->kernels.size(); ++i) {
    KernelLayout& l = m->layouts[i];
    l.info = &m->kernels[i];
    size_t off = 0;
    for (const ArgInfo& a : m->kernels[i].args) {
      size_t width = a.kind == ArgKind::Value ? a.size : sizeof(void*);
      l.slots.push_back(ArgSlot{a.kind, a.size, off, width});
      off += (width + 7) & ~size_t(7);
    }
    l.blob_size = off;
  }
  register_module_storage(m);
}

/// Writes *out, if the caller asked for a log, a new build log with `text`; null only if no log can be
/// allocated.
void write_log(ze_module_build_log_handle_t* out, std::string text) {
  if (out != nullptr) *out = new (std::nothrow) _ze_module_build_log_handle_t{kBuildLogMagic, std::move(text)};
}

/// Why `entry` refused with `r` before looking at its arguments (should_fail): a lost device, or a
/// failure injected by ZEX_CPU_FAIL.
std::string refused(const char* entry, ze_result_t r) {
  const char* name = result_name(r);
  std::string what = std::string(entry) + " failed with " + (name ? name : std::to_string(int(r)));
  if (device_lost()) return what + ": the device is lost, nothing can be built on it (zesDeviceGetState says why)";
  return what + ", injected by ZEX_CPU_FAIL";
}

}  // namespace

// zeModuleCreate and zeModuleDynamicLink write their log out-parameter on every return, failures included
// (docs/cpu-driver.md "Build logs"): a log that says what went wrong, as Intel's driver creates the log
// before anything can fail. Callers read the log of a failed build; it must never be an uninitialized
// handle. So their injected failures (and a lost device's) are checked here, not by ZEXCPU_FAULT_POINT.

/// On failure *phModule is null (Intel's driver leaves it as it was) and *phBuildLog says why.
ze_result_t ZE_APICALL zeModuleCreate(ze_context_handle_t hContext, ze_device_handle_t hDevice, const ze_module_desc_t* desc,
                            ze_module_handle_t* phModule, ze_module_build_log_handle_t* phBuildLog) {
  auto fail = [&](ze_result_t r, std::string why) {
    if (phModule) *phModule = nullptr;
    write_log(phBuildLog, std::move(why));
    return r;
  };
  ze_result_t injected;
  if (should_fail("zeModuleCreate", &injected)) return fail(injected, refused("zeModuleCreate", injected));
  if (!hContext) return fail(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, "zeModuleCreate: hContext is null");
  if (!hDevice) return fail(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, "zeModuleCreate: hDevice is null");
  if (!is_context(hContext))
    return fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
                "zeModuleCreate: hContext is not a zex-cpu context (destroyed, or a handle of another kind)");
  if (!is_device(hDevice))
    return fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
                "zeModuleCreate: hDevice is not a zex-cpu device (a handle of another kind)");
  if (!desc) return fail(ZE_RESULT_ERROR_INVALID_NULL_POINTER, "zeModuleCreate: desc is null");
  if (!desc->pInputModule)
    return fail(ZE_RESULT_ERROR_INVALID_NULL_POINTER, "zeModuleCreate: desc->pInputModule is null");
  if (!phModule)
    return fail(ZE_RESULT_ERROR_INVALID_NULL_POINTER, "zeModuleCreate: phModule is null: pass where the module goes");
  if (desc->format > ZE_MODULE_FORMAT_NATIVE)
    return fail(ZE_RESULT_ERROR_INVALID_ENUMERATION,
                "zeModuleCreate: desc->format is " + std::to_string(int(desc->format)) +
                    ", neither ZE_MODULE_FORMAT_IL_SPIRV (0) nor ZE_MODULE_FORMAT_NATIVE (1)");
  if (desc->inputSize == 0)
    return fail(ZE_RESULT_ERROR_INVALID_SIZE, "zeModuleCreate: desc->inputSize is 0: pass the module's size in bytes");

  for (auto* ext = static_cast<const ze_base_desc_t*>(desc->pNext); ext;
       ext = static_cast<const ze_base_desc_t*>(ext->pNext)) {
    if (ext->stype == ZE_STRUCTURE_TYPE_MODULE_PROGRAM_EXP_DESC)
      return fail(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE,
                  "zex-cpu does not support ze_module_program_exp_desc_t (several input modules); link the "
                  "SPIR-V modules with spirv-link first");
  }

  SpecConstants sc;
  if (desc->pConstants) {
    sc.count = desc->pConstants->numConstants;
    sc.ids = desc->pConstants->pConstantIds;
    sc.values = desc->pConstants->pConstantValues;
  }
  CompiledProgram prog;
  ze_result_t r;
  try {
    r = compile_module(desc->format, static_cast<const uint8_t*>(desc->pInputModule), desc->inputSize, sc,
                       desc->pBuildFlags, platform().context, platform().device, &prog);
  } catch (const std::bad_alloc&) {
    return fail(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY, "zeModuleCreate: out of host memory while building the module");
  }
  if (r != ZE_RESULT_SUCCESS) return fail(r, std::move(prog.log));
  auto* m = new (std::nothrow) _ze_module_handle_t;
  if (!m) {
    if (prog.program) clReleaseProgram(prog.program);
    return fail(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY, "zeModuleCreate: out of host memory");
  }
  m->native_binary = std::move(prog.native_binary);
  m->build_flags = desc->pBuildFlags ? desc->pBuildFlags : "";
  make_uuid(m->native_binary, "module", m->mid);
  adopt_program(m, &prog);
  write_log(phBuildLog, std::move(prog.log));
  *phModule = m;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeModuleDestroy(ze_module_handle_t hModule) {
  ZEXCPU_DESTROY_POINT("zeModuleDestroy", hModule);
  if (!hModule) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_module(hModule)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  ze_module_handle_t m = hModule;
  // The handle dies now; the object lives on while kernels or appended launches still use it.
  m->magic = kDeadMagic;
  unregister_module(m);
  release_module(m);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeModuleDynamicLink(uint32_t numModules, ze_module_handle_t* phModules,
                                 ze_module_build_log_handle_t* phLinkLog) {
  auto fail = [&](ze_result_t r, std::string why) {
    write_log(phLinkLog, std::move(why));
    return r;
  };
  ze_result_t injected;
  if (should_fail("zeModuleDynamicLink", &injected)) return fail(injected, refused("zeModuleDynamicLink", injected));
  if (!phModules) return fail(ZE_RESULT_ERROR_INVALID_NULL_POINTER, "zeModuleDynamicLink: phModules is null");
  for (uint32_t i = 0; i < numModules; ++i) {
    std::string which = "zeModuleDynamicLink: phModules[" + std::to_string(i) + "]";
    if (!phModules[i]) return fail(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, which + " is null");
    if (!is_module(phModules[i]))
      return fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
                  which + " is not a zex-cpu module (destroyed, or a handle of another kind)");
  }
  std::string text;
  ze_result_t result = ZE_RESULT_SUCCESS;
  for (uint32_t i = 0; i < numModules; ++i) {
    ze_module_handle_t m = phModules[i];
    if (m->imports.empty()) continue;  // built complete, or linked before: modules are linked once
    std::vector<LinkInput> others;
    for (uint32_t j = 0; j < numModules; ++j) {
      ze_module_handle_t o = phModules[j];
      if (o == m) continue;
      LinkInput in;
      in.native = &o->native_binary;
      for (const GlobalInfo& g : o->globals) in.globals.push_back(&g);
      others.push_back(std::move(in));
    }
    CompiledProgram prog;
    ze_result_t r;
    try {
      r = link_module(m->native_binary, others, m->build_flags.c_str(), platform().context, platform().device, &prog);
    } catch (const std::bad_alloc&) {
      r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    if (!prog.log.empty()) text += "module " + std::to_string(i) + ": " + prog.log + "\n";
    if (r != ZE_RESULT_SUCCESS) {
      result = r;
      continue;
    }
    adopt_program(m, &prog);
  }
  write_log(phLinkLog, std::move(text));
  return result;
}

ze_result_t ZE_APICALL zeModuleBuildLogDestroy(ze_module_build_log_handle_t hModuleBuildLog) {
  ZEXCPU_DESTROY_POINT("zeModuleBuildLogDestroy", hModuleBuildLog);
  if (!hModuleBuildLog) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_build_log(hModuleBuildLog)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  ze_module_build_log_handle_t log = hModuleBuildLog;
  log->magic = kDeadMagic;
  delete log;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeModuleBuildLogGetString(ze_module_build_log_handle_t hModuleBuildLog, size_t* pSize, char* pBuildLog) {
  ZEXCPU_FAULT_POINT("zeModuleBuildLogGetString");
  if (!hModuleBuildLog) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_build_log(hModuleBuildLog)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!pSize) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  copy_string(hModuleBuildLog->text, pSize, pBuildLog);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeModuleGetNativeBinary(ze_module_handle_t hModule, size_t* pSize, uint8_t* pModuleNativeBinary) {
  ZEXCPU_FAULT_POINT("zeModuleGetNativeBinary");
  if (!hModule) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_module(hModule)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!pSize) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  const std::string& bin = hModule->native_binary;
  if (!pModuleNativeBinary) {
    *pSize = bin.size();
    return ZE_RESULT_SUCCESS;
  }
  if (*pSize < bin.size()) return ZE_RESULT_ERROR_INVALID_SIZE;  // a truncated binary is useless
  memcpy(pModuleNativeBinary, bin.data(), bin.size());
  *pSize = bin.size();
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeModuleGetGlobalPointer(ze_module_handle_t hModule, const char* pGlobalName, size_t* pSize,
                                      void** pptr) {
  ZEXCPU_FAULT_POINT("zeModuleGetGlobalPointer");
  if (!hModule) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_module(hModule)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!pGlobalName) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  for (auto& g : hModule->globals) {
    if (g.name != pGlobalName) continue;
    if (!g.storage) return ZE_RESULT_ERROR_INVALID_GLOBAL_NAME;
    if (pSize) *pSize = g.size;
    if (pptr) *pptr = g.storage.get();
    return ZE_RESULT_SUCCESS;
  }
  return ZE_RESULT_ERROR_INVALID_GLOBAL_NAME;
}

ze_result_t ZE_APICALL zeModuleGetKernelNames(ze_module_handle_t hModule, uint32_t* pCount, const char** pNames) {
  ZEXCPU_FAULT_POINT("zeModuleGetKernelNames");
  if (!hModule) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_module(hModule)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!pCount) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  const auto& ks = hModule->kernels;
  uint32_t n = static_cast<uint32_t>(ks.size());
  if (*pCount == 0 || !pNames) {
    *pCount = n;
    return ZE_RESULT_SUCCESS;
  }
  uint32_t out = std::min(*pCount, n);
  for (uint32_t i = 0; i < out; ++i) pNames[i] = ks[i].name.c_str();
  *pCount = out;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeModuleGetProperties(ze_module_handle_t hModule, ze_module_properties_t* pModuleProperties) {
  ZEXCPU_FAULT_POINT("zeModuleGetProperties");
  if (!hModule) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_module(hModule)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!pModuleProperties) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  pModuleProperties->flags = hModule->imports.empty() ? 0 : ZE_MODULE_PROPERTY_FLAG_IMPORTS;
  return ZE_RESULT_SUCCESS;
}

void make_uuid(const std::string& a, const std::string& b, uint8_t out[16]) {
  uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x84222325cbf29ce4ull;
  fnv(a.data(), a.size(), &h1);
  fnv(b.data(), b.size(), &h1);
  fnv(b.data(), b.size(), &h2);
  fnv(a.data(), a.size(), &h2);
  memcpy(out, &h1, 8);
  memcpy(out + 8, &h2, 8);
}

}  // namespace zexcpu
