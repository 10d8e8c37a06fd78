// compile_module and link_module (compiler.hpp): the order of the steps, each in its own file of
// driver/compiler/ (docs/cpu-driver-compiler.md lists them), and zex-cpu's native binary format.
#include "compiler/parts.hpp"
#include "compiler/translation_cache.hpp"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/GlobalValue.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cstring>

namespace zexcpu {
namespace {

constexpr uint32_t kSpirvMagic = 0x07230203;
// zex-cpu's native binary: this tag, then the module's bitcode after translation (before inlining). The
// tag lets zeModuleCreate(ZE_MODULE_FORMAT_NATIVE) reject binaries of other drivers with a clear message.
constexpr char kNativeTag[] = "ZEXCPU-SPIR-BC-1";
constexpr size_t kNativeTagSize = sizeof(kNativeTag) - 1;

std::string hex32(uint32_t v) {
  char buf[16];
  snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// LLVM's default diagnostic handler calls exit(1) on errors (the IR linker reports through it): collect
// the messages instead.
void collect_diagnostics(llvm::LLVMContext& ctx, std::string* sink) {
  ctx.setDiagnosticHandlerCallBack(
      [](const llvm::DiagnosticInfo& di, void* context) {
        auto* text = static_cast<std::string*>(context);
        std::string msg;
        llvm::raw_string_ostream os(msg);
        llvm::DiagnosticPrinterRawOStream printer(os);
        di.print(printer);
        os.flush();
        if (di.getSeverity() == llvm::DS_Error) *text += "error: ";
        else if (di.getSeverity() == llvm::DS_Warning) *text += "warning: ";
        else return;
        *text += msg + "\n";
      },
      sink);
}

std::unique_ptr<llvm::Module> parse_native(llvm::LLVMContext& ctx, const uint8_t* input, size_t size,
                                           std::string* err) {
  if (size < kNativeTagSize || memcmp(input, kNativeTag, kNativeTagSize) != 0) {
    *err = "native binary was not produced by zex-cpu's zeModuleGetNativeBinary (missing the '" +
           std::string(kNativeTag) + "' tag)";
    return nullptr;
  }
  auto buf = llvm::MemoryBuffer::getMemBuffer(
      llvm::StringRef(reinterpret_cast<const char*>(input) + kNativeTagSize, size - kNativeTagSize), "native",
      false);
  auto parsed = llvm::parseBitcodeFile(buf->getMemBufferRef(), ctx);
  if (!parsed) {
    *err = "native binary: invalid bitcode: " + llvm::toString(parsed.takeError());
    return nullptr;
  }
  return std::move(*parsed);
}

// The second half of every build: inline, give program-scope variables their storage, hand the bitcode
// to PoCL. `shared` maps names of variables that another (linked) module owns to that module's storage.
ze_result_t build_for_pocl(llvm::Module& mod, const char* build_flags,
                           const std::map<std::string, void*>& shared, cl_context context, cl_device_id device,
                           CompiledProgram* out) {
  size_t max_group = 4096;
  clGetDeviceInfo(device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof max_group, &max_group, nullptr);
  lower_stop_check_loads(mod);
  std::string group_err;
  if (!define_group_builtins(mod, max_group, &group_err)) {
    out->log += group_err;
    return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
  }
  std::string inline_err;
  if (!inline_everything(mod, &inline_err)) {
    out->log += inline_err;
    return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
  }
  std::string verr;
  llvm::raw_string_ostream vos(verr);
  if (llvm::verifyModule(mod, &vos)) {
    out->log += "internal error: the translated module does not verify: " + vos.str();
    return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
  }

  if (ze_result_t r = assign_global_storage(mod, shared, out); r != ZE_RESULT_SUCCESS) return r;
  // What PoCL 3.1 cannot take as it is: kernels with several exits, undefined phi inputs in kernels with
  // barriers, and long kernel names.
  give_kernels_one_exit(mod);
  define_undefined_phi_inputs(mod);
  give_pocl_names(mod, &out->kernels);
  return build_with_pocl(mod, build_flags, context, device, out);
}

}  // namespace

ze_result_t compile_module(ze_module_format_t format, const uint8_t* input, size_t size,
                           const SpecConstants& constants, const char* build_flags,
                           cl_context context, cl_device_id device, CompiledProgram* out) {
  out->log.clear();
  llvm::LLVMContext ctx;
  // PoCL 3.1 reads SPIR 1.2-style bitcode: typed pointers.
  ctx.setOpaquePointers(false);
  std::string diagnostics;
  collect_diagnostics(ctx, &diagnostics);
  std::unique_ptr<llvm::Module> mod;

  if (format == ZE_MODULE_FORMAT_NATIVE) {
    std::string err;
    mod = parse_native(ctx, input, size, &err);
    if (!mod) {
      out->log = err;
      return ZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
    }
    if (constants.count)
      out->log = "warning: specialization constants are ignored for a native binary (already applied)\n";
  } else {
    if (size % 4 != 0) {
      out->log = "invalid SPIR-V: size " + std::to_string(size) + " is not a multiple of 4";
      return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
    }
    if (size < 20) {
      out->log = "invalid SPIR-V: " + std::to_string(size) + " bytes is shorter than the 20-byte header";
      return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
    }
    uint32_t magic;
    memcpy(&magic, input, 4);
    if (magic != kSpirvMagic) {
      out->log = "invalid SPIR-V: magic number " + hex32(magic) + " (expected " + hex32(kSpirvMagic) + ")";
      return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
    }
    std::string structure_err;
    SpirvFacts facts;
    if (!check_spirv(input, size, &facts, &structure_err)) {
      out->log = "invalid SPIR-V: " + structure_err;
      return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
    }
    const std::map<uint32_t, uint32_t>& spec_sizes = facts.spec_sizes;  // SpecId -> bytes
    std::string bytes(reinterpret_cast<const char*>(input), size);
    const uint32_t version = facts.version;
    if (version > 0x00010400u) {
      // llvm-spirv 15 reads SPIR-V up to 1.4. Modules of later versions that use no later feature (such
      // as a 1.4 module whose version word was raised to link with a 1.5 one) translate as 1.4; a module
      // that does use one fails in the translator, with its message in the log.
      const uint32_t v14 = 0x00010400u;
      memcpy(&bytes[4], &v14, 4);
      out->log += "note: SPIR-V " + std::to_string((version >> 16) & 0xff) + "." +
                  std::to_string((version >> 8) & 0xff) + " module read as SPIR-V 1.4\n";
    }
    if (constants.count) {
      if (!constants.ids || !constants.values) {
        out->log = "ze_module_constants_t: numConstants is " + std::to_string(constants.count) +
                   " but pConstantIds or pConstantValues is null";
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
      }
      for (uint32_t i = 0; i < constants.count; ++i)
        if (!constants.values[i]) {
          out->log = "specialization constant id " + std::to_string(constants.ids[i]) + ": null value pointer";
          return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
        }
    }
    // The constants as the translator will read them (each with its own size), for the cache key.
    std::string applied;
    for (uint32_t i = 0; i < constants.count; ++i) {
      auto it = spec_sizes.find(constants.ids[i]);
      if (it == spec_sizes.end()) {
        // Intel's driver fails the build the same way.
        out->log += "specialization constant id " + std::to_string(constants.ids[i]) +
                    " is not declared by the module";
        return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
      }
      applied.append(reinterpret_cast<const char*>(&constants.ids[i]), 4);
      applied.append(static_cast<const char*>(constants.values[i]), it->second);
    }
    std::string translated, terr;
    TranslationCache& cache = TranslationCache::instance();
    const std::string key = TranslationCache::key(bytes, applied);
    if (!cache.get(key, &translated)) {
      if (!translate_isolated(bytes, constants, &translated, &terr)) {
        out->log += terr;
        return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
      }
      cache.put(key, translated);
    }
    auto buf = llvm::MemoryBuffer::getMemBuffer(translated, "translated", false);
    auto parsed = llvm::parseBitcodeFile(buf->getMemBufferRef(), ctx);
    if (!parsed) {
      out->log += "internal error: the translator's bitcode does not parse: " + llvm::toString(parsed.takeError());
      return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
    }
    mod = std::move(*parsed);
    std::string lerr;
    if (!lower_leftover_builtins(*mod, &lerr)) {
      out->log += lerr;
      return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
    }
  }

  analyze(*mod, out);
  // The native binary is the module before inlining, so that it keeps its exports and imports for
  // zeModuleDynamicLink, and without storage addresses, which belong to this process.
  {
    std::string bitcode;
    llvm::raw_string_ostream os(bitcode);
    llvm::WriteBitcodeToFile(*mod, os);
    os.flush();
    out->native_binary.assign(kNativeTag, kNativeTagSize);
    out->native_binary += bitcode;
  }
  if (!out->imports.empty()) {
    // As on Intel's driver, the module builds; its kernels wait for zeModuleDynamicLink.
    out->log += "note: the module imports";
    for (auto& n : out->imports) out->log += " " + n;
    out->log += "; link it with zeModuleDynamicLink before creating kernels\n";
    return ZE_RESULT_SUCCESS;
  }
  ze_result_t r = build_for_pocl(*mod, build_flags, {}, context, device, out);
  out->log += diagnostics;
  return r;
}

ze_result_t link_module(const std::string& native, const std::vector<LinkInput>& others, const char* build_flags,
                        cl_context context, cl_device_id device, CompiledProgram* out) {
  out->log.clear();
  llvm::LLVMContext ctx;
  ctx.setOpaquePointers(false);
  std::string diagnostics;
  collect_diagnostics(ctx, &diagnostics);
  std::string err;
  auto dest = parse_native(ctx, reinterpret_cast<const uint8_t*>(native.data()), native.size(), &err);
  if (!dest) {
    out->log = err;
    return ZE_RESULT_ERROR_MODULE_LINK_FAILURE;
  }
  std::vector<std::string> wanted = find_imports(*dest);
  std::map<std::string, void*> shared;
  llvm::Linker linker(*dest);
  for (const LinkInput& o : others) {
    auto src = parse_native(ctx, reinterpret_cast<const uint8_t*>(o.native->data()), o.native->size(), &err);
    if (!src) {
      out->log = err;
      return ZE_RESULT_ERROR_MODULE_LINK_FAILURE;
    }
    // Only the definitions this module imports; kernels and everything else of the other module stay
    // there.
    bool exports_any = false;
    for (const std::string& n : wanted) {
      llvm::GlobalValue* gv = src->getNamedValue(n);
      if (gv && !gv->isDeclaration() && !gv->hasLocalLinkage()) exports_any = true;
    }
    if (!exports_any) continue;
    for (const GlobalInfo* g : o.globals)
      if (!g->constant && g->named && g->storage &&
          std::find(wanted.begin(), wanted.end(), g->name) != wanted.end())
        shared[g->name] = g->storage.get();
    if (linker.linkInModule(std::move(src), llvm::Linker::Flags::LinkOnlyNeeded)) {
      out->log = "linking failed:\n" + diagnostics;
      return ZE_RESULT_ERROR_MODULE_LINK_FAILURE;
    }
  }
  std::vector<std::string> missing = find_imports(*dest);
  if (!missing.empty()) {
    out->log = "unresolved imports:";
    for (auto& n : missing) out->log += " " + n;
    return ZE_RESULT_ERROR_MODULE_LINK_FAILURE;
  }
  analyze(*dest, out);
  ze_result_t r = build_for_pocl(*dest, build_flags, shared, context, device, out);
  out->log += diagnostics;
  return r == ZE_RESULT_SUCCESS ? r : ZE_RESULT_ERROR_MODULE_LINK_FAILURE;
}

}  // namespace zexcpu
