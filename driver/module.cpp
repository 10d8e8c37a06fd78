// Modules and build logs: zeModuleCreate (compile_module, compiler.hpp), zeModuleDynamicLink
// (link_module), native binaries, program-scope variables, kernel names.
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

}  // namespace

ze_result_t ZE_APICALL zeModuleCreate(ze_context_handle_t hContext, ze_device_handle_t hDevice, const ze_module_desc_t* desc,
                            ze_module_handle_t* phModule, ze_module_build_log_handle_t* phBuildLog) {
  ZEXCPU_FAULT_POINT("zeModuleCreate");
  if (phBuildLog) *phBuildLog = nullptr;
  if (!hContext || !hDevice) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_context(hContext) || !is_device(hDevice)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!desc || !desc->pInputModule || !phModule) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->format > ZE_MODULE_FORMAT_NATIVE) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  if (desc->inputSize == 0) return ZE_RESULT_ERROR_INVALID_SIZE;

  auto finish_log = [&](std::string text) {
    if (!phBuildLog) return;
    *phBuildLog = new (std::nothrow) _ze_module_build_log_handle_t{kBuildLogMagic, std::move(text)};
  };
  for (auto* ext = static_cast<const ze_base_desc_t*>(desc->pNext); ext;
       ext = static_cast<const ze_base_desc_t*>(ext->pNext)) {
    if (ext->stype == ZE_STRUCTURE_TYPE_MODULE_PROGRAM_EXP_DESC) {
      finish_log("zex-cpu does not support ze_module_program_exp_desc_t (several input modules); link the "
                 "SPIR-V modules with spirv-link first");
      return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
    }
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
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  if (r != ZE_RESULT_SUCCESS) {
    finish_log(std::move(prog.log));
    return r;
  }
  auto* m = new (std::nothrow) _ze_module_handle_t;
  if (!m) {
    if (prog.program) clReleaseProgram(prog.program);
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  m->native_binary = std::move(prog.native_binary);
  m->build_flags = desc->pBuildFlags ? desc->pBuildFlags : "";
  make_uuid(m->native_binary, "module", m->mid);
  adopt_program(m, &prog);
  finish_log(std::move(prog.log));
  *phModule = m;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeModuleDestroy(ze_module_handle_t hModule) {
  ZEXCPU_FAULT_POINT("zeModuleDestroy");
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
  ZEXCPU_FAULT_POINT("zeModuleDynamicLink");
  if (phLinkLog) *phLinkLog = nullptr;
  if (!phModules) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  for (uint32_t i = 0; i < numModules; ++i) {
    if (!phModules[i]) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!is_module(phModules[i])) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
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
  if (phLinkLog)
    *phLinkLog = new (std::nothrow) _ze_module_build_log_handle_t{kBuildLogMagic, text};
  return result;
}

ze_result_t ZE_APICALL zeModuleBuildLogDestroy(ze_module_build_log_handle_t hModuleBuildLog) {
  ZEXCPU_FAULT_POINT("zeModuleBuildLogDestroy");
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
