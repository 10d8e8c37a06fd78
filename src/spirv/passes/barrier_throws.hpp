// converge_throws_at_barriers's parts (barrier_throws.cpp has the whole story), one concern each:
//   barrier_throws.cpp    the pass: which kernels, the module facts it reads (functions, barriers)
//   barrier_converge.cpp  one kernel's control flow: throw regions, where a thrower goes on, the flag
//   barrier_guard.cpp     one block for a thrower: accesses redirected to scratch, skipped calls
//   barrier_module.cpp    new module-level ids (types, constants, scratch variables), the write-back
// Private to src/spirv/passes/.
#pragma once

#include "spirv/context.hpp"
#include "spirv/ir.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace zex {
namespace passes {
namespace barrier_throws {

using Insts = std::vector<Instruction>;

// The scratch words: 64 ulongs, as large as the largest OpenCL C vector (long16, double16) and more.
constexpr uint32_t kScratchWords = 64;

struct Function {
  size_t first = 0, last = 0;  // OpFunction, OpFunctionEnd in m.insts
  uint32_t id = 0;
  Insts head;  // OpFunctionParameters
  std::vector<Block> blocks;
};

inline bool is_barrier_like(uint16_t o) {
  return o == spv::OpControlBarrier || o == spv::OpGroupAsyncCopy || o == spv::OpGroupWaitEvents ||
         (o >= spv::OpGroupAll && o <= spv::OpGroupUMax);
}

// The pass on one module. Until run() ends the module is only read (write_back() writes it).
class Converger {
 public:
  explicit Converger(IRContext& ctx) : ctx_(ctx), m_(ctx.module()), next_(m_.header[3]) {}
  bool run();

 private:
  // ---- module facts ----
  void collect_functions();

  // Functions that run a barrier or a group collective, themselves or through a call.
  void mark_barriers();
  const Instruction* def(uint32_t id) const;
  uint32_t type_of(uint32_t id) const;

  // The storage class of pointer type `t`, or UINT32_MAX if `t` is not a pointer type.
  uint32_t storage_of(uint32_t t) const;
  bool barrier_at(const Instruction& i) const;

  // ---- the kernel ----
  bool converge(Function& f);

  // True if block `b` defines a value used outside it and outside `region`.
  static bool defines_live_out(const Function& f, const std::map<uint32_t, size_t>& at, uint32_t b,
                               const std::set<uint32_t>& region);

  // Redirects the accesses of `b` for a thrower and branches around the calls it skips; `b` may become
  // several blocks (appended to `out`).
  void guard_block(Block b, std::vector<Block>& out);
  bool is_void(uint32_t type) const;

  // What a thrower does not run at all.
  bool needs_skip(const Instruction& i) const;

  // A thrower's access goes to a scratch variable: `ptr` becomes `select(flag, scratch, ptr)`.
  void redirect(Instruction& i, Insts& before, const std::function<uint32_t()>& load_flag);

  // ---- new module-level ids ----
  uint32_t fresh() { return next_++; }
  Insts globals_;
  uint32_t find_global(uint16_t opcode, uint32_t type, const std::vector<uint32_t>& rest);
  uint32_t add_global(Instruction i);
  uint32_t bool_type();
  uint32_t int_type(uint32_t width);
  uint32_t pointer_type(uint32_t sc, uint32_t pointee);
  uint32_t bool_constant(bool v);
  uint32_t uint_constant(uint32_t v);
  uint32_t null_constant(uint32_t type);

  // The value of a skipped call: zero. llvm-spirv-15 takes OpConstantNull only of composites and
  // pointers, so scalars get OpConstant 0 / false, and what is neither an OpUndef.
  uint32_t zero_value(uint32_t type);
  uint32_t scratch_array();
  Instruction make_variable(uint32_t ptype, uint32_t id, uint32_t sc, uint32_t init = 0);

  // The scratch variable of a storage class: reads (zeros, never written) or writes (never read).
  uint32_t scratch(uint32_t sc, bool write);
  void set_result(Instruction& i, uint32_t id);
  void write_back();

  IRContext& ctx_;
  Module& m_;
  uint32_t next_;
  std::map<uint32_t, uint32_t> local_types_;
  std::map<uint32_t, std::string> zex_;
  std::vector<Function> fns_;
  std::map<uint32_t, size_t> fn_index_;
  std::set<uint32_t> barrier_fns_;
  std::map<std::pair<uint32_t, bool>, uint32_t> scratch_;
  std::vector<uint32_t> scratch_vars_;
  std::map<uint32_t, uint32_t> split_to_;
  uint32_t scratch_array_ = 0;
  uint32_t thrown_ = 0;
};

}  // namespace barrier_throws
}  // namespace passes
}  // namespace zex
