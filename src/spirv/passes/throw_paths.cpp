// number_throw_paths: a throw ends the work-item wherever it happens, and every throw path gets an id.
//
// 1. A throw ends the work-item. OpenCL C cannot leave a kernel from a helper, and ZEX_THROW's `return`
//    leaves only the current function: thrown from a helper, the work-item went on (issue 15, item 3).
//    So every function that may throw (one that calls a zex throw entry point, or calls one that may
//    throw; kernels excepted) returns a flag: `bool` for a void function, `{T, bool}` for one that
//    returns T. Its throw exits return true, its other returns false, and every call to it is followed
//    by a branch, predicted not taken, to a block that returns "thrown" (or, in a kernel, returns).
//    The flag travels in the return value, never in memory: a Function-storage flag would be private
//    memory wherever Intel's compiler does not inline. A throw exit is any edge out of a block that
//    calls a throw entry point (zex_throw, zex_throw_site, the three-call protocol's blocks), and out of
//    blocks reached only through such edges; an exit edge into a block that also lies on a normal path
//    goes to the function's "thrown" return block instead (in a kernel, only if that block does more
//    than return).
// 2. Throw-path ids. Every zex_throw whose name, reason, function and file are constant strings and
//    whose line, value count and kind are constants becomes zex_throw_site(zex, id, a, b): the id names the
//    whole path, kernel -> ... -> throw site, and the table the pass returns holds its name, reason
//    and frames (innermost first). Paths are numbered per kernel in call order; a function reached by
//    one path only knows its ids as constants; a function reached by several gets the path's base as
//    a hidden last parameter (each caller passes its own base plus the call site's offset), so the
//    id is exact, never "one of several callers". Frames come from the debug information where there
//    is some (DebugScope/DebugInlinedAt of OpenCL.DebugInfo.100: functions the front end inlined keep
//    their frames and lines; OpLine gives a call's line) and from the call graph and OpName otherwise
//    (line 0: unknown).
//
// A kernel called as a function is called through a copy (kernel_calls.cpp). Left alone (the module is
// returned unchanged): a module with recursion (OpenCL C has none), and anything malformed. docs/spirv-passes.md has the order.
//
// The parts, one concern each, are listed in throw_paths.hpp.
#include "spirv/passes/passes.hpp"
#include "spirv/passes/throw_paths.hpp"

#include <map>
#include <string>
#include <utility>

namespace zex {
namespace passes {

namespace {

bool run(IRContext& ctx, const std::map<uint32_t, std::string>& renamed, detail::SiteTable* out) {
  using namespace throw_paths;
  CallGraph g;
  if (!g.build(ctx)) return false;
  bool any = false;
  for (Function& f : g.fns) any = any || f.may_throw || g.has_throw_call(f);
  if (!any) return false;
  const SiteReader reader(ctx, g, renamed);
  Numbering n;
  if (out) number_paths(g, reader, out, &n);
  Rewriter rewriter(ctx, g, n);
  const bool changed = rewriter.run();
  // A table whose ids no site stores (zex_throw_site could not be declared) would also make
  // zex::Module set a spec constant the module does not declare, which a driver refuses.
  if (out && !rewriter.stores_site_ids()) out->clear();
  return changed;
}

}  // namespace

Status number_throw_paths(IRContext& ctx, detail::SiteTable* out) {
  if (out) out->clear();
  // A kernel that another function calls: the calls go to a copy the pass can flag (kernel_calls.cpp),
  // kept only if the pass changes the module.
  Module cloned;
  std::map<uint32_t, std::string> names;
  if (!clone_called_kernels(ctx.module(), &cloned, &names)) return changed_if(run(ctx, {}, out));
  IRContext copy(std::move(cloned));
  if (!run(copy, names, out)) return Status::Unchanged;
  ctx.module() = copy.release();
  return Status::Changed;
}

}  // namespace passes
}  // namespace zex
