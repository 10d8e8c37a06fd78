// The memory checks' analysis, shared by analyze_memory_accesses (memory_accesses.cpp, which says how a
// pointer is traced) and add_memory_checks (memory_checks.cpp, which rewrites what it finds). Private to
// src/spirv/passes/.
#pragma once

#include "spirv/context.hpp"
#include "spirv/ir.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace zex {
namespace passes {
namespace memory {

// Where a pointer comes from, within one function.
enum class Origin {
  Param,    // the function's parameter `param` (offset by chains and casts)
  Local,    // a Workgroup variable or parameter
  Own,      // the work-item's own memory (a Function/Private variable)
  Loaded,   // loaded from memory
  Integer,  // made from an integer
  Helper,   // (the report only) a helper's parameter, counted on its own
  Other     // different parameters on different paths, a shape the trace does not know
};

struct Trace {
  Origin origin = Origin::Other;
  uint32_t param = 0;  // Origin::Param: the parameter's index; Origin::Local: the variable's id (0: a parameter)
  bool operator==(const Trace& o) const { return origin == o.origin && param == o.param; }
};

// One function's accesses to global or generic memory and its calls, each with its index in
// module().insts at analysis time.
struct Access {
  size_t inst;
  Trace trace;
  bool local = false;  // an access to Workgroup memory (through a __local parameter, when it traces to one)
};
struct Call {
  size_t inst;
  uint32_t callee;
  std::vector<Trace> args;
};
// An access to Workgroup memory through a pointer into one __local variable (a static array).
struct LocalAccess {
  size_t inst;
  uint32_t variable;
};
struct FunctionAccesses {
  std::vector<Access> accesses;  // global and generic accesses, and Workgroup ones through a parameter
  std::vector<LocalAccess> local_accesses;  // Workgroup accesses into a __local variable
  size_t local = 0;  // the other accesses to Workgroup memory (traced to neither)
  std::vector<Call> calls;
};

/// Every defined function's accesses and calls (reads the module only).
std::map<uint32_t, FunctionAccesses> analyze_functions(IRContext& ctx);

}  // namespace memory
}  // namespace passes
}  // namespace zex
