// Short kernel names for PoCL (docs/cpu-driver-compiler.md, step 9; docs/cpu-driver.md, "PoCL 3.1's
// limits"). PoCL 3.1 names a kernel's cache directory and object file after the kernel
// (<cache>/<program>/<name>/<group size>/<name>.so, lib/CL/pocl_cache.c) in 1024-byte buffers it only
// assert()s on, so a name over 252 characters (NAME_MAX 255 with ".so") or one that spells a path
// aborts the process at the first launch; SYCL's mangled names are often longer (a sycl::reduction
// kernel's is 718). Intel's driver takes any name. So such a kernel gets a short internal name just
// before PoCL sees the module; KernelInfo keeps the application's name for everything Level Zero
// answers, and PoCL's build log is translated back.
#include "compiler/parts.hpp"

#include <llvm/IR/CallingConv.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <map>

namespace zexcpu {
namespace {

bool identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

}  // namespace

bool pocl_takes_name(const std::string& name) {
  return !name.empty() && name.size() <= kMaxPoclKernelName && std::all_of(name.begin(), name.end(), identifier_char);
}

void give_pocl_names(llvm::Module& m, std::vector<KernelInfo>* kernels) {
  unsigned next = 0;
  for (KernelInfo& k : *kernels) {
    k.pocl_name = k.name;
    if (pocl_takes_name(k.name)) continue;
    llvm::Function* f = m.getFunction(k.name);
    if (!f || f->getCallingConv() != llvm::CallingConv::SPIR_KERNEL) continue;
    std::string internal;
    do internal = "zexcpu_kernel_" + std::to_string(next++);
    while (m.getNamedValue(internal));
    // setName renames the symbol, so calls of this kernel from other kernels follow it.
    f->setName(internal);
    k.pocl_name = f->getName().str();
  }
}

std::string with_user_names(const std::string& log, const std::vector<KernelInfo>& kernels) {
  std::map<std::string, const std::string*> user;
  for (const KernelInfo& k : kernels)
    if (!k.pocl_name.empty() && k.pocl_name != k.name) user[k.pocl_name] = &k.name;
  if (user.empty()) return log;
  // One pass over the identifiers of the log, so that only whole names are replaced (zexcpu_kernel_1 is
  // not the start of zexcpu_kernel_12) and nothing replaced is looked at again.
  std::string out;
  for (size_t at = 0; at < log.size();) {
    size_t end = at;
    while (end < log.size() && identifier_char(log[end])) ++end;
    if (end == at) {
      out += log[at++];
      continue;
    }
    auto it = user.find(log.substr(at, end - at));
    out += it == user.end() ? log.substr(at, end - at) : *it->second;
    at = end;
  }
  return out;
}

}  // namespace zexcpu
