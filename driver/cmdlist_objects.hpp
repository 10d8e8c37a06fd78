// The objects of command lists (immediate and regular) and command queues, and the checks their entry
// points share (command_queue.cpp, command_list.cpp, command_list_copy.cpp). Each owns or is run by a
// Worker (worker.hpp, which describes the execution model).
#pragma once

#include "worker.hpp"

namespace zexcpu {

/// A command of a mutable list that zeCommandListGetNextCommandIdExp named: what may change (flags) and
/// the launch appended after it (null until then, or if that append failed).
struct MutableCommand {
  uint32_t flags = 0;
  Command* command = nullptr;  // owned by the list's `commands`
  bool appended_with_signal = false;  // its signal event may change (NEO: even after one set to null)
};

}  // namespace zexcpu

struct _ze_command_list_handle_t {
  uint32_t magic = zexcpu::kListMagic;
  ze_context_handle_t context = nullptr;
  bool immediate = false;
  bool synchronous = false;  // immediate lists only
  bool closed = false;       // regular lists only
  std::vector<std::unique_ptr<zexcpu::Command>> commands;  // regular lists only
  std::unique_ptr<zexcpu::Worker> worker;                  // immediate lists only
  // ZE_experimental_mutable_command_list (mutable_list.cpp); regular lists created with its descriptor.
  bool mutable_list = false;
  bool updated = false;          // updated since its last close: not executable until closed again
  bool id_pending = false;       // zeCommandListGetNextCommandIdExp's id waits for the next kernel launch
  std::vector<zexcpu::MutableCommand> mutables;  // index: command id - 1
};

struct _ze_command_queue_handle_t {
  uint32_t magic = zexcpu::kQueueMagic;
  ze_context_handle_t context = nullptr;
  bool synchronous = false;
  zexcpu::Worker worker;
};

namespace zexcpu {

inline bool is_list(ze_command_list_handle_t h) { return h != nullptr && h->magic == kListMagic; }

// The in-order flags of Level Zero 1.7 (ze_api.h v1.7: ZE_COMMAND_QUEUE_FLAG_IN_ORDER = ZE_BIT(1), "commands
// appended to the immediate command list are executed in-order"; ZE_COMMAND_LIST_FLAG_IN_ORDER = ZE_BIT(3),
// the same for a regular list). Debian 12's headers are 1.4, so the values live here. zex-cpu runs every list
// and queue in order anyway (one issuing thread, one in-order OpenCL queue): accepting them honours them.
constexpr ze_command_queue_flags_t kQueueFlagInOrder = ze_command_queue_flags_t(1) << 1;
constexpr ze_command_list_flags_t kListFlagInOrder = ze_command_list_flags_t(1) << 3;

constexpr uint32_t kMaxMode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS;
constexpr uint32_t kMaxPriority = ZE_COMMAND_QUEUE_PRIORITY_PRIORITY_HIGH;

inline ze_result_t check_context_device(ze_context_handle_t hContext, ze_device_handle_t hDevice) {
  if (hContext == nullptr || hDevice == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  return ZE_RESULT_SUCCESS;
}

/// INVALID_NULL_HANDLE or INVALID_ARGUMENT unless `h` is a live command list.
inline ze_result_t check_list(ze_command_list_handle_t h) {
  if (h == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_list(h)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  return ZE_RESULT_SUCCESS;
}

// --- command_queue.cpp --------------------------------------------------------------------------------

/// The checks of a queue descriptor shared by zeCommandQueueCreate and zeCommandListCreateImmediate.
ze_result_t check_queue_desc(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                             const ze_command_queue_desc_t* desc);

/// zeCommandQueueExecuteCommandLists's checks of the lists (also zeCommandListImmediateAppendCommandListsExp's).
ze_result_t check_lists_to_execute(uint32_t n, const ze_command_list_handle_t* lists);
ze_result_t ZE_APICALL zeCommandListImmediateAppendCommandListsExp(ze_command_list_handle_t, uint32_t,
                                                                  ze_command_list_handle_t*, ze_event_handle_t,
                                                                  uint32_t, ze_event_handle_t*);

// --- command_list.cpp ---------------------------------------------------------------------------------

/// Checks the list and the events of an append and builds its command (without a body).
/// Errors: INVALID_SIZE (waits null with a count), INVALID_SYNCHRONIZATION_OBJECT (an event that is
/// not a live event), INVALID_ARGUMENT (a closed regular list).
ze_result_t begin_command(ze_command_list_handle_t l, ze_event_handle_t signal, uint32_t numWaits,
                          const ze_event_handle_t* waits, std::unique_ptr<Command>* out);
/// Records a regular list's command, or runs an immediate list's (waiting for it when synchronous).
ze_result_t finish_command(ze_command_list_handle_t l, std::unique_ptr<Command> c);

// --- mutable_list.cpp ---------------------------------------------------------------------------------

/// The mutation flags zex-cpu supports.
constexpr uint32_t kMutableFlagsSupported = 0x1 | 0x2 | 0x4 | 0x10 | 0x20;  // arguments, group count and
                                                                           // size, signal and wait events
/// zeCommandListCreate's pNext: true when it asks for a mutable list (and zex-cpu offers them).
bool wants_mutable_list(const void* pNext);
/// The launch appended to a mutable list after zeCommandListGetNextCommandIdExp: claims the pending id
/// (`c` null: the append failed, and the id names nothing, as in NEO). Indirect launches are refused
/// while an id is pending (UNSUPPORTED_FEATURE, as NEO).
void attach_pending_id(ze_command_list_handle_t l, Command* c);

}  // namespace zexcpu

