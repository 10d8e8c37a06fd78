// The interface between the module/kernel side of zex-cpu (module.cpp, kernel_api.cpp, launch.cpp,
// module_registry.cpp; the compiler in driver/compiler/) and the core (command lists, memory). Owned by
// the module/kernel side; keep these signatures.
#pragma once

#include "common.hpp"

#include <memory>

namespace zexcpu {

/// One kernel launch whose arguments and group size were captured when it was appended (the Level Zero
/// specification says arguments are captured at append time, so later zeKernelSetArgumentValue calls
/// must not change an appended launch).
class LaunchCommand {
 public:
  virtual ~LaunchCommand() = default;
  /// Runs on a command list's or queue's worker thread, in order: enqueues the kernel on `queue`
  /// (an in-order OpenCL queue owned by that worker) and returns when it has finished.
  /// Thread-safe: several workers may run launches of the same kernel at once.
  virtual ze_result_t run(cl_command_queue queue) = 0;
  /// The first half of run(), for workers that pipeline launches: sets the arguments and enqueues the
  /// kernel on `queue` without waiting. With `done`, also returns the kernel's OpenCL event (the caller
  /// releases it), or nullptr when nothing was enqueued (a group count of 0): the worker signals a Level
  /// Zero event once it is complete, without draining the queue. Once the kernel has finished, the
  /// worker calls completed(). Thread-safe like run().
  virtual ze_result_t enqueue(cl_command_queue queue, cl_event* done = nullptr) = 0;
  /// The second half of run(): bookkeeping after a kernel enqueued with enqueue() has finished (pins the
  /// kernel objects that hold the module's constants). Call once per successful enqueue().
  virtual void completed() = 0;

  // Mutable command lists (mutable_list.cpp): what zeCommandListUpdateMutableCommandsExp changes. Each
  // check_* answers as the corresponding append-time call would and changes nothing, so that an update
  // is checked whole before any of it is applied; set_* applies a checked change. Both are thread-safe
  // against enqueue() (the launch's state is read and written under the kernel's lock), but the
  // specification leaves changing a launch that is executing undefined, and so does zex-cpu.
  /// True for the indirect forms, whose group count is read at execution (not mutable, as in NEO).
  virtual bool indirect() const = 0;
  /// Errors: INVALID_KERNEL_ARGUMENT_INDEX, and zeKernelSetArgumentValue's for the value.
  virtual ze_result_t check_argument(uint32_t index, size_t size, const void* value) const = 0;
  virtual void set_argument(uint32_t index, size_t size, const void* value) = 0;
  /// Errors: INVALID_GROUP_SIZE_DIMENSION, as zeKernelSetGroupSize.
  virtual ze_result_t check_group_size(uint32_t x, uint32_t y, uint32_t z) const = 0;
  virtual void set_group_size(uint32_t x, uint32_t y, uint32_t z) = 0;
  virtual void set_group_count(const ze_group_count_t& groups) = 0;
};

/// Captures hKernel's current arguments and group size for a launch of `groups` work-groups (a group
/// count of 0 in any dimension gives a launch that runs nothing).
/// Errors: ZE_RESULT_ERROR_INVALID_NULL_HANDLE (null kernel), ZE_RESULT_ERROR_INVALID_NULL_POINTER (null
/// out), ZE_RESULT_ERROR_INVALID_ARGUMENT (not a live kernel handle, or an argument never set: Intel's
/// driver would launch with zeros, OpenCL cannot), ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION,
/// ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY.
ze_result_t capture_launch(ze_kernel_handle_t hKernel, const ze_group_count_t& groups,
                           std::unique_ptr<LaunchCommand>* out);

/// capture_launch for zeCommandListAppendLaunchKernelIndirect (and the indirect multi-kernel form):
/// the group count is read from `groups` (USM the application fills) when the launch runs, not now.
/// Errors: as capture_launch; ZE_RESULT_ERROR_INVALID_NULL_POINTER for a null `groups`.
ze_result_t capture_launch_indirect(ze_kernel_handle_t hKernel, const ze_group_count_t* groups,
                                    std::unique_ptr<LaunchCommand>* out, const uint32_t* count = nullptr,
                                    uint32_t index = 0);

/// True when `ptr` lies in the storage of a live module's constant surface or program-scope variables
/// (Segment::Constants and Segment::Globals blocks, as NEO registers its `.data.const` and
/// `.data.global` surfaces); *base and *size (either may be null) then describe that whole block. The
/// strings block (NEO's `.data.const.string`, a host pointer there) is not found, nor is any other
/// address (stack, heap, libraries, destroyed modules). With ZEX_CPU_LENIENT_ADDRESS_RANGE=1 (read on
/// each call), the strings blocks and the readable segments of the module's pinned PoCL kernel objects
/// count too, as before zex-cpu followed NEO. Thread-safe.
bool module_constant_range(const void* ptr, void** base, size_t* size);

}  // namespace zexcpu
