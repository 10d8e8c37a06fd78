// What the fault-injection sweep's files share (fault_sweep_test.cpp describes the sweep): what each entry
// point's failure may end in (the table), the child's round and the parent's child processes.
#pragma once

#include "zex_fixture.hpp"

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include <sys/types.h>

namespace fault_sweep {

// ---------------------------------------------------------------------------------------------
// What each entry point's failure may end in (from the code that calls it; docs/reliability.md).

enum Allowed : unsigned {
  kZeError = 1,         // a zex::ZeError with call() == the entry point and result() == the injected one
  kSwallowed = 2,       // no visible change: a destroy or free whose result a destructor ignores, or a
                        // best-effort query with a fallback (zeModuleGetGlobalPointer)
  kNoImmediateAppend = 8,  // Stream::execute refused with UNSUPPORTED_FEATURE: the entry point's lookup failed
  kNameUnreadable = 4,  // the exception is raised with every field right except a string the host had
                        // to read from device memory, shown as "<invalid address 0x...>"
};

struct EntrySpec {
  const char* name;
  ze_result_t result;  // what the rule injects
  unsigned allowed;
  const char* why;  // the documented outcome, for the table
};

constexpr ze_result_t kHost = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
constexpr ze_result_t kLost = ZE_RESULT_ERROR_DEVICE_LOST;

// Every Level Zero function zex calls (SweepList.CoversEveryCallZexMakes keeps this list equal to the
// calls in include/zex and src).
inline constexpr EntrySpec kEntries[] = {
    {"zeInit", kHost, kZeError, "Context(): ZeError(zeInit); at n=1 the loader drops the driver"},
    {"zeDriverGet", kHost, kZeError, "Context(): ZeError(zeDriverGet)"},
    {"zeContextCreate", kHost, kZeError, "Context(): ZeError(zeContextCreate)"},
    {"zeContextDestroy", kLost, kSwallowed, "~ContextState ignores it"},
    {"zeDriverGetApiVersion", kLost, kSwallowed, "Context(): taken as API 1.0; streams wait through events"},
    {"zeDriverGetExtensionFunctionAddress", kLost, kSwallowed | kNoImmediateAppend,
     "Context(): no host synchronize (streams wait through events), or no immediate append (Stream::execute "
     "refused: UNSUPPORTED_FEATURE)"},
    {"zeDriverGetExtensionProperties", kLost, kSwallowed, "Context(): lists not known in order; events"},
    {"zeDeviceGet", kHost, kZeError, "Context(): ZeError"},
    {"zeDeviceGetProperties", kLost, kZeError | kSwallowed,
     "Context(): ZeError; its 2nd call per device (the device-loss watch's UUID): Info Log records not filtered"},
    {"zeDeviceGetCommandQueueGroupProperties", kLost, kZeError, "Context(): ZeError"},
    {"zeMemAllocHost", kHost, kZeError | kNameUnreadable | kSwallowed,
     "report slab: ZeError; string staging buffer: strings unread, or the thrower count unread (shown as 1)"},
    {"zeMemAllocDevice", ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, kZeError, "claim slab: ZeError"},
    {"zeMemFree", kLost, kSwallowed, "destructors ignore it"},
    // Only the C API calls it (zex_context_alloc_shared), which the sweep's C++ workload does not use, so
    // its rules do not fire here; c_api_test checks its failure (ZEX_ERROR_LEVEL_ZERO naming the call).
    {"zeMemAllocShared", kHost, kZeError, "C API only: zex_context_alloc_shared returns ZEX_ERROR_LEVEL_ZERO"},
    {"zeMemGetAddressRange", kLost, kNameUnreadable, "any failure is 'not found': <invalid address>"},
    {"zeCommandListCreateImmediate", kHost, kZeError, "stream or helper list: ZeError"},
    {"zeCommandListDestroy", kLost, kSwallowed, "destructors ignore it"},
    {"zeCommandListCreate", kHost, kZeError, "Graph() or an execution's epilogue list: ZeError"},
    {"zeCommandListClose", kHost, kZeError, "Graph::close(), an epilogue's recording or Graph::update(): ZeError"},
    {"zeCommandQueueCreate", kHost, kZeError, "Queue(): ZeError"},
    {"zeCommandQueueExecuteCommandLists", kLost, kZeError, "Queue::execute(): ZeError, the execution not counted"},
    {"zeCommandQueueSynchronize", kLost, kZeError | kSwallowed,
     "Queue::synchronize(): ZeError, executions kept for the next; ~Queue and ~Graph ignore it"},
    {"zeCommandQueueDestroy", kLost, kSwallowed, "~Queue ignores it"},
    {"zeCommandListHostSynchronize", kLost, kZeError, "list path: synchronize() or ready(): ZeError"},
    // Through the pointer zeDriverGetExtensionFunctionAddress gave (the 1.8 loader does not export it).
    // Mutable command lists (Graph::update in place), also through extension pointers.
    {"zeCommandListGetNextCommandIdExp", kHost, kZeError, "Graph::launch(): ZeError, the recording failed (kept)"},
    {"zeCommandListUpdateMutableCommandsExp", kHost, kZeError, "Graph::update(): ZeError, the graph failed (kept)"},
    {"zeCommandListReset", kHost, kZeError,
     "Graph::update() recording the list again (ZEX_GRAPH_UPDATE=rerecord): ZeError, the graph failed (kept)"},
    {"zeCommandListImmediateAppendCommandListsExp", kLost, kZeError, "Stream::execute(): ZeError, the execution not counted"},
    {"zeCommandListAppendMemoryFill", kHost, kZeError, "slab zeroing or claim reset: ZeError, report kept"},
    {"zeCommandListAppendBarrier", kHost, kZeError | kNameUnreadable | kSwallowed,
     "slab zeroing: ZeError; string read: strings unread; thrower count read: shown as 1"},
    {"zeCommandListAppendMemoryCopy", kHost, kNameUnreadable | kSwallowed,
     "string read: strings unread; thrower count read (ABI 2): the count is shown as 1"},
    {"zeCommandListAppendLaunchKernel", kLost, kZeError, "launch: ZeError"},
    {"zeEventPoolCreate", kHost, kZeError, "stream or helper list: ZeError"},
    {"zeEventPoolDestroy", kLost, kSwallowed, "destructors ignore it"},
    {"zeEventCreate", kHost, kZeError, "stream event or helper list: ZeError"},
    {"zeEventDestroy", kLost, kSwallowed, "destructors ignore it"},
    {"zeEventHostSynchronize", kLost, kZeError | kNameUnreadable | kSwallowed,
     "stream wait or slab zeroing: ZeError; string read: strings unread; thrower count read: shown as 1"},
    {"zeEventHostReset", kLost, kZeError | kNameUnreadable | kSwallowed,
     "stream wait or slab zeroing: ZeError; string read: strings unread; thrower count read: shown as 1"},
    {"zeEventQueryStatus", kLost, kZeError, "Stream::ready(): ZeError"},
    {"zeKernelCreate", kHost, kZeError, "first launch at a level: ZeError"},
    {"zeKernelDestroy", kLost, kSwallowed, "destructors ignore it"},
    {"zeKernelGetProperties", kLost, kZeError, "first launch at a level: ZeError"},
    {"zeKernelSetIndirectAccess", kLost, kZeError, "first launch at a level: ZeError"},
    {"zeKernelSetGroupSize", kLost, kZeError, "launch: ZeError"},
    {"zeKernelSetArgumentValue", kLost, kZeError, "launch: ZeError"},
    {"zeModuleCreate", ZE_RESULT_ERROR_MODULE_BUILD_FAILURE, kZeError, "first launch at a level: ZeError"},
    {"zeModuleDestroy", kLost, kSwallowed, "destructors ignore it"},
    {"zeModuleGetGlobalPointer", kLost, kSwallowed,
     "best effort: that string is read through zeMemGetAddressRange instead"},
    {"zeModuleBuildLogDestroy", kLost, kSwallowed, "ignored (success and failure paths)"},
    {"zeModuleBuildLogGetString", kLost, kSwallowed,
     "only after a real build failure, which the workload has none of"},
    // A device-loss report (src/runtime/device_report.cpp): snapshots at Context(), collection only after a
    // call answered DEVICE_LOST. Every one is best effort: the report says what could not be read. The
    // collection's calls never fire here (no rule loses the device); zex_device_lost_faults injects
    // them during a real loss (tests/runtime/device_lost_test.cpp).
    {"zeDeviceGetStatus", kHost, kSwallowed, "only while collecting a device-loss report: that device is not picked"},
    {"zeDeviceGetSubDevices", kHost, kZeError | kSwallowed,
     "Context(): the watch knows only the device's own UUID; Device::sub_devices(): ZeError (not in the workload)"},
    {"zesDeviceGetState", kHost, kSwallowed, "only while collecting a report: the state says 'unavailable'"},
    {"zesDeviceEnumRasErrorSets", kHost, kSwallowed, "Context(): the report notes the RAS counters as unread"},
    {"zesRasGetProperties", kHost, kSwallowed, "Context(): that RAS set is named by its index"},
    {"zesRasGetState", kHost, kSwallowed, "Context(): that set's snapshot counts from 0"},
    {"zesDriverEnumInfoLogsExt", kHost, kSwallowed, "Context(): the report says why there is no Info Log"},
    {"zesInfoLogGetPropertiesExt", kHost, kSwallowed, "Context(): that info log is skipped"},
    {"zesInfoLogCreateInstanceExt", kHost, kSwallowed, "Context(): the report says why there is no Info Log"},
    {"zesInfoLogInstanceReadWithMetadataExt", kHost, kSwallowed, "only while collecting: the report notes it"},
    {"zesInfoLogInstancePeekWithMetadataExt", kHost, kSwallowed, "zex peeks only at a shared default buffer"},
    {"zesInfoLogInstanceDeleteExt", kLost, kSwallowed, "~ContextState ignores it"},
};

inline std::string result_str(ze_result_t r) {
  const char* n = zex::result_name(r);
  return n ? n : std::to_string(static_cast<unsigned>(r));
}

// ---------------------------------------------------------------------------------------------
// The child (fault_sweep_child.cpp): the workload, in rounds.

struct Round {
  std::string outcome = "ok";  // ok | zeerror | error (an exception zex should not have thrown)
  std::string step;            // where the ZeError or error came from
  std::string call, result;    // of the ZeError
  std::set<std::string> degraded;
  std::vector<std::string> failures;  // checks that did not hold
};

Round run_round(const std::vector<uint8_t>& spirv);
/// `s` with the characters that would break a SWEEP line ('|', newlines) made spaces.
std::string clean(std::string s);
bool log_has_lines(const char* path);

// ---------------------------------------------------------------------------------------------
// The parent (fault_sweep_parent.cpp): one child per rule, a few at a time, each killed after a timeout.

struct Child {
  std::string rule;        // ZEX_CPU_FAIL, empty for the baseline
  const EntrySpec* spec = nullptr;  // nullptr for the baseline
  unsigned n = 0;
  std::string out_path, log_path;
  pid_t pid = -1;
  std::chrono::steady_clock::time_point start;
  bool timed_out = false;
  int status = 0;
  double seconds = 0;
};

struct ParsedRound {
  int round = 0;
  bool fired = false;
  std::string outcome, step, call, result, degraded, failures;
};

std::string read_all(const std::string& path);
std::vector<std::string> split(const std::string& s, char sep);
bool spawn(Child& c);
unsigned env_unsigned(const char* name, unsigned dflt);
void run_all(std::vector<Child>& children, unsigned jobs, unsigned timeout_s);
std::vector<ParsedRound> parse_rounds(const std::string& out);
std::string judge(const Child& c, int* fired_count);

}  // namespace fault_sweep
