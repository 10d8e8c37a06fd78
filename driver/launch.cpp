// A kernel launch captured at append time (kernel.hpp: the specification says arguments are captured
// then) and its execution on a worker's in-order OpenCL queue.
#include "device_loss.hpp"
#include "kernel.hpp"
#include "module_objects.hpp"

#include <algorithm>

namespace zexcpu {
namespace {

ze_result_t cl_to_ze(cl_int e) {
  switch (e) {
    case CL_SUCCESS: return ZE_RESULT_SUCCESS;
    case CL_OUT_OF_HOST_MEMORY: return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    case CL_OUT_OF_RESOURCES:
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
    case CL_INVALID_WORK_GROUP_SIZE:
    case CL_INVALID_WORK_ITEM_SIZE: return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
    case CL_INVALID_KERNEL_ARGS: return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    default: return ZE_RESULT_ERROR_UNKNOWN;
  }
}

class Launch final : public LaunchCommand {
 public:
  Launch(ze_kernel_handle_t k, const ze_group_count_t& groups, const ze_group_count_t* indirect = nullptr,
         const uint32_t* count = nullptr, uint32_t index = 0)
      : cl_(k->cl), layout_(k->layout), blob_(k->blob), groups_(groups), indirect_(indirect), count_(count),
        index_(index) {
    memcpy(group_, k->group, sizeof group_);
    // The module (its program, layouts and pins) stays alive while an appended launch exists, even if
    // the application destroys the kernel and module after appending to a regular command list.
    cl_->module->refs.fetch_add(1, std::memory_order_relaxed);
  }
  ~Launch() override { release_module(cl_->module); }
  Launch(const Launch&) = delete;
  Launch& operator=(const Launch&) = delete;

  ze_result_t run(cl_command_queue queue) override {
    ze_result_t r = enqueue(queue, nullptr);
    if (r != ZE_RESULT_SUCCESS) return r;
    cl_int err = clFinish(queue);
    if (err != CL_SUCCESS) return cl_to_ze(err);
    completed();
    return ZE_RESULT_SUCCESS;
  }

  ze_result_t enqueue(cl_command_queue queue, cl_event* done) override {
    if (done != nullptr) *done = nullptr;
    // An indirect launch reads its group count now: earlier commands of the list may have written it;
    // the i-th launch of zeCommandListAppendLaunchMultipleKernelsIndirect runs only if i < *count.
    if (count_ != nullptr && index_ >= *count_) return ZE_RESULT_SUCCESS;
    ze_group_count_t groups;
    uint32_t group[3];
    {
      // The sizes as they are now: a mutable list's update writes them under the kernel's lock.
      std::lock_guard<std::mutex> lock(cl_->mu);
      groups = indirect_ ? *indirect_ : groups_;
      memcpy(group, group_, sizeof group);
    }
    if (groups.groupCountX == 0 || groups.groupCountY == 0 || groups.groupCountZ == 0)
      return ZE_RESULT_SUCCESS;  // nothing to run
    if (__builtin_expect(launch_runs_nothing(layout_->info->name.c_str()), 0)) {
      // The device is lost (by this launch or before): the launch completes without running, so that
      // its waiters wake and answer ZE_RESULT_ERROR_DEVICE_LOST (device_loss.hpp).
      return cl_to_ze(clEnqueueMarkerWithWaitList(queue, 0, nullptr, done));
    }
    size_t local[3] = {group[0], group[1], group[2]};
    size_t global[3] = {size_t(groups.groupCountX) * group[0], size_t(groups.groupCountY) * group[1],
                        size_t(groups.groupCountZ) * group[2]};
    // get_work_dim() as Intel's driver computes it.
    cl_uint dims = global[2] > 1 ? 3 : global[1] > 1 ? 2 : 1;
    cl_int err = CL_SUCCESS;
    {
      std::lock_guard<std::mutex> lock(cl_->mu);
      // The first launch with a new group size makes PoCL load a new kernel object (PoCL may do so
      // within clEnqueueNDRangeKernel): note what was loaded before, to pin the new one when the
      // launch has completed (see Module::pinned).
      std::array<uint32_t, 3> g{group[0], group[1], group[2]};
      auto& seen = cl_->seen_group_sizes;
      bool first = std::find(seen.begin(), seen.end(), g) == seen.end();
      if (first) cl_->loaded_before[g] = loaded_kernel_objects(layout_->info->pocl_name);
      err = apply_args();
      if (err == CL_SUCCESS && local_bytes() > limits().local_mem) err = CL_OUT_OF_RESOURCES;
      if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(queue, cl_->kernel, dims, nullptr, global, local, 0, nullptr, done);
      if (err != CL_SUCCESS && done != nullptr) *done = nullptr;  // nothing enqueued, nothing to wait for
      if (first) {
        if (err == CL_SUCCESS) {
          seen.push_back(g);
          pinned_group_ = g;
          pin_.store(true, std::memory_order_relaxed);
        } else {
          cl_->loaded_before.erase(g);
        }
      }
    }
    return cl_to_ze(err);
  }

  void completed() override {
    if (!pin_.exchange(false, std::memory_order_relaxed)) return;
    std::vector<std::string> before;
    {
      std::lock_guard<std::mutex> lock(cl_->mu);
      auto it = cl_->loaded_before.find(pinned_group_);
      if (it != cl_->loaded_before.end()) {
        before = std::move(it->second);
        cl_->loaded_before.erase(it);
      }
    }
    pin_kernel_objects(cl_->module, layout_->info->pocl_name, before);
  }

  bool indirect() const override { return indirect_ != nullptr; }

  ze_result_t check_argument(uint32_t index, size_t size, const void* value) const override {
    if (index >= layout_->slots.size()) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX;
    return encode_argument(layout_->slots[index], size, value, nullptr);
  }

  void set_argument(uint32_t index, size_t size, const void* value) override {
    std::lock_guard<std::mutex> lock(cl_->mu);
    const ArgSlot& s = layout_->slots[index];
    encode_argument(s, size, value, blob_.data() + s.offset);  // checked by check_argument
  }

  ze_result_t check_group_size(uint32_t x, uint32_t y, uint32_t z) const override {
    return zexcpu::check_group_size(*layout_->info, x, y, z);
  }

  void set_group_size(uint32_t x, uint32_t y, uint32_t z) override {
    std::lock_guard<std::mutex> lock(cl_->mu);
    group_[0] = x;
    group_[1] = y;
    group_[2] = z;
  }

  void set_group_count(const ze_group_count_t& groups) override {
    std::lock_guard<std::mutex> lock(cl_->mu);
    groups_ = groups;
  }

 private:
  // The local memory the kernel's local-buffer arguments take together, placed as PoCL places them (in
  // argument order, each starting 128-byte aligned). Each fits on its own (zeKernelSetArgumentValue checks),
  // but PoCL 3.1 aborts the process (an assertion in pthread_utils.c) when they do not fit together; the
  // launch fails instead.
  size_t local_bytes() const {
    size_t end = 0;
    for (const ArgSlot& s : layout_->slots) {
      if (s.kind != ArgKind::Local) continue;
      size_t bytes;
      memcpy(&bytes, blob_.data() + s.offset, sizeof bytes);
      end = (end + 127) / 128 * 128 + bytes;
    }
    return end;
  }

  // Called with cl_->mu held: sets on the cl_kernel only the arguments that differ from what is set.
  cl_int apply_args() {
    bool all = !cl_->applied_valid;
    for (cl_uint i = 0; i < layout_->slots.size(); ++i) {
      const ArgSlot& s = layout_->slots[i];
      const uint8_t* v = blob_.data() + s.offset;
      if (!all && memcmp(cl_->applied.data() + s.offset, v, s.width) == 0) continue;
      cl_int e = CL_SUCCESS;
      switch (s.kind) {
        case ArgKind::Pointer: {
          void* p;
          memcpy(&p, v, sizeof p);
          e = clSetKernelArgSVMPointer(cl_->kernel, i, p);
          break;
        }
        case ArgKind::Local: {
          size_t bytes;
          memcpy(&bytes, v, sizeof bytes);
          e = clSetKernelArg(cl_->kernel, i, bytes, nullptr);
          break;
        }
        case ArgKind::Value: e = clSetKernelArg(cl_->kernel, i, s.size, v); break;
        case ArgKind::Unsupported: e = CL_INVALID_ARG_VALUE; break;
      }
      if (e != CL_SUCCESS) {
        cl_->applied_valid = false;
        return e;
      }
    }
    cl_->applied = blob_;
    cl_->applied_valid = true;
    return CL_SUCCESS;
  }

  std::shared_ptr<ClKernel> cl_;
  const KernelLayout* layout_;
  std::vector<uint8_t> blob_;
  ze_group_count_t groups_;
  const ze_group_count_t* indirect_;
  const uint32_t* count_;  // the multi-kernel form's kernel count, read at execution
  uint32_t index_;
  uint32_t group_[3];
  std::array<uint32_t, 3> pinned_group_{};  // the group size whose first launch this was (pin_)
  std::atomic<bool> pin_{false};
};

}  // namespace

ze_result_t capture_launch(ze_kernel_handle_t hKernel, const ze_group_count_t& groups,
                           std::unique_ptr<LaunchCommand>* out) {
  if (!hKernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_kernel(hKernel)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  ze_kernel_handle_t k = hKernel;
  // Intel's driver launches with whatever the unset arguments hold (zeros); OpenCL refuses to enqueue
  // such a kernel, so zex-cpu reports the mistake at append instead.
  if (k->unset) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  ze_result_t r = check_group_size(*k->layout->info, k->group[0], k->group[1], k->group[2]);
  if (r != ZE_RESULT_SUCCESS) return r;
  try {
    out->reset(new Launch(k, groups));
  } catch (const std::bad_alloc&) {
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  return ZE_RESULT_SUCCESS;
}

ze_result_t capture_launch_indirect(ze_kernel_handle_t hKernel, const ze_group_count_t* groups,
                                    std::unique_ptr<LaunchCommand>* out, const uint32_t* count, uint32_t index) {
  if (!groups || !out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  std::unique_ptr<LaunchCommand> direct;
  ze_result_t r = capture_launch(hKernel, ze_group_count_t{1, 1, 1}, &direct);  // the same checks
  if (r != ZE_RESULT_SUCCESS) return r;
  try {
    out->reset(new Launch(hKernel, ze_group_count_t{0, 0, 0}, groups, count, index));
  } catch (const std::bad_alloc&) {
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  return ZE_RESULT_SUCCESS;
}

}  // namespace zexcpu
