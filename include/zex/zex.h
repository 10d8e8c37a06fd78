/* zex C API (C99): the objects of <zex/zex.hpp> behind opaque handles, for runtimes and language
 * bindings that cannot use C++ (docs/integration.md, "C API"). Link libzex.so (`pkg-config --libs zex`,
 * SONAME libzex.so.1), which exports only the zex_* names below.
 *
 * Errors: every call that can fail returns a zex_result_t. No C++ exception crosses this boundary. On
 * failure the calling thread's last error is set (zex_last_error_message(), zex_last_ze_result(),
 * zex_last_error_call()); on success it is cleared. NULL handles and NULL out-pointers are
 * ZEX_ERROR_INVALID_ARGUMENT with a message naming the parameter; every destroy function accepts NULL.
 *
 * Lifetimes: a zex_device_t belongs to its zex_context_t and is valid until zex_context_destroy.
 * Modules, kernels, streams, events and slots hold a reference to the context's shared state, so they
 * may be destroyed after their context; a kernel keeps its module's state alive, and a stream keeps the kernels of its
 * pending launches alive. Destroy streams before you free memory their pending launches use.
 *
 * Threads: contexts, devices, modules and kernels may be used from any thread (launches of one kernel
 * are serialized: a Level Zero kernel's arguments are state). A stream is used by one thread at a time:
 * a call from a second thread while one is in progress returns ZEX_ERROR_INVALID_STATE and changes
 * nothing. Exceptions are immutable. An event may be waited on from any thread, but a wait that raises
 * is a use of the event's stream. Slots may be acquired and released from any thread; one slot is
 * used by one thread at a time. The last error is per thread. */
#ifndef ZEX_ZEX_H
#define ZEX_ZEX_H

#include <level_zero/ze_api.h>
#include <zex/abi.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The C API's ABI version: the SONAME is libzex.so.ZEX_C_API_VERSION, raised only by an incompatible
 * change (docs/decisions.md, "libzex.so SONAME"). Additions keep it. */
#define ZEX_C_API_VERSION 1

typedef enum zex_result_t {
  ZEX_SUCCESS = 0,
  ZEX_ERROR_KERNEL_EXCEPTION = 1,   /* synchronize found a thrown exception; the stream stays usable */
  ZEX_ERROR_LEVEL_ZERO = 2,         /* a Level Zero call failed: zex_last_ze_result(), zex_last_error_call() */
  ZEX_ERROR_INVALID_ARGUMENT = 3,   /* misuse detected before anything was done (NULL, bad SPIR-V, counts) */
  ZEX_ERROR_OUT_OF_HOST_MEMORY = 4, /* std::bad_alloc inside zex */
  ZEX_ERROR_INVALID_STATE = 5,      /* zex's logic errors, e.g. two threads on one stream */
  ZEX_ERROR_UNKNOWN = 6             /* anything else caught at the boundary */
} zex_result_t;

typedef struct zex_context_s* zex_context_t;
typedef struct zex_device_s* zex_device_t;
typedef struct zex_module_s* zex_module_t;
typedef struct zex_kernel_s* zex_kernel_t;
typedef struct zex_stream_s* zex_stream_t;
typedef struct zex_exception_s* zex_exception_t;
typedef struct zex_slot_s* zex_slot_t;
typedef struct zex_event_s* zex_event_t;
typedef struct zex_graph_s* zex_graph_t;
typedef struct zex_queue_s* zex_queue_t;

/* Which language a message's fix-it hints speak (zex_exception_message_for). */
typedef enum zex_language_t {
  ZEX_LANGUAGE_CPP = 0,
  ZEX_LANGUAGE_C = 1,
  ZEX_LANGUAGE_PYTHON = 2,
  ZEX_LANGUAGE_JULIA = 3
} zex_language_t;

typedef struct zex_launch_config_t {
  uint32_t groups[3];     /* work-groups in x, y, z; each at least 1 */
  uint32_t group_size[3]; /* work-items per work-group; each at least 1 */
  int debug_level;        /* 0, 1, 2; -1 = the stream's default (ZEX_DEBUG_LEVEL, else 1) */
} zex_launch_config_t;

typedef struct zex_arg_t {
  size_t size;       /* bytes of the argument */
  const void* value; /* NULL = a __local parameter of `size` bytes */
} zex_arg_t;

/* ---- version and errors (thread-local; valid until the next zex call on the same thread) ------------ */
uint32_t zex_c_api_version(void);             /* ZEX_C_API_VERSION of the library loaded */
const char* zex_last_error_message(void);     /* "" when the last call on this thread succeeded */
ze_result_t zex_last_ze_result(void);         /* ZE_RESULT_SUCCESS unless the last error was ZEX_ERROR_LEVEL_ZERO */
const char* zex_last_error_call(void);        /* the Level Zero function that failed, else "" */

/* ---- a lost device (docs/integration.md, "When the device is lost") ------------------------------
   After a call failed with ZEX_ERROR_LEVEL_ZERO and zex_last_ze_result() is ZE_RESULT_ERROR_DEVICE_LOST or
   ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET: what zex collected about the device (zex_last_error_message()
   ends with its summary). Valid like the last error. Each returns 1 and fills its non-NULL outputs, or 0
   (no report; i past the end). Bytes are the record as the driver gave it; formats: "CPER". */
int zex_last_device_report(const char** device, const char** state, uint32_t* counter_count,
                           uint32_t* record_count);
int zex_last_device_counter(uint32_t i, const char** set, const char** category, uint64_t* at_creation,
                            uint64_t* now); /* a RAS counter that changed since the context was created */
int zex_last_device_record(uint32_t i, const char** format, const uint8_t** bytes, size_t* size,
                           const char** summary); /* an Info Log record, decoded in `summary` */
const char* zex_last_device_info_log(void); /* "" if the Info Log was read, else why not; NULL: no report */
const char* zex_last_device_note(uint32_t i); /* what could not be read, and why; NULL past the end */

/* ---- contexts and devices ------------------------------------------------------------------------- */
/* zeInit, the first driver, a new Level Zero context (owned: destroyed with the zex context). */
zex_result_t zex_context_create(zex_context_t* out);
/* Adopts a runtime's driver and context (zeInit already called); zex never destroys them. */
zex_result_t zex_context_adopt(ze_driver_handle_t driver, ze_context_handle_t context, zex_context_t* out);
void zex_context_destroy(zex_context_t context);
zex_result_t zex_device_count(zex_context_t context, uint32_t* out);
/* The device is owned by the context: valid until zex_context_destroy, never destroyed by itself. */
zex_result_t zex_device_get(zex_context_t context, uint32_t index, zex_device_t* out);
/* A device's sub-devices (tiles): none for a sub-device or a device without any. Owned by the context
   like every zex_device_t; streams, modules and slots on a sub-device work as on a device. */
zex_result_t zex_device_sub_device_count(zex_device_t device, uint32_t* out);
zex_result_t zex_device_sub_device_get(zex_device_t device, uint32_t index, zex_device_t* out);
/* The zex device for a raw handle of the context's driver, a device or a sub-device (for runtimes that
   hold their own handles); ZEX_ERROR_INVALID_ARGUMENT when it is neither. */
zex_result_t zex_device_for_handle(zex_context_t context, ze_device_handle_t handle, zex_device_t* out);
/* Shared USM on `device` (NULL: the context's device 0); alignment 0 = the driver's default. */
zex_result_t zex_context_alloc_shared(zex_context_t context, zex_device_t device, size_t size, size_t alignment,
                                      void** out);
zex_result_t zex_context_free(zex_context_t context, void* ptr); /* NULL ptr: nothing */

/* ---- modules and kernels -------------------------------------------------------------------------- */
/* Validates the SPIR-V, runs zex's passes, links the device library (INVALID_ARGUMENT with the
 * validator's diagnostic). The driver builds it per debug level at the first launch at that level. */
zex_result_t zex_module_create(zex_device_t device, const void* spirv, size_t size, zex_module_t* out);
void zex_module_destroy(zex_module_t module);
/* zex_module_create with options: `flags` is 0 or ZEX_MODULE_CHECK_MEMORY (bounds checks on every
 * global access through a kernel's pointer argument, reported as "OutOfBoundsAccess"; ZEX_CHECK_MEMORY=1
 * in the environment sets it for every module). Other bits: INVALID_ARGUMENT. */
#define ZEX_MODULE_CHECK_MEMORY 0x1u
zex_result_t zex_module_create_with_options(zex_device_t device, const void* spirv, size_t size, uint32_t flags,
                                            zex_module_t* out);
/* What a module's memory checks cover (zex::MemoryCheckCounts): global accesses in the module checked and
 * left unchecked by reason; enabled = 0 for a module built without them. */
typedef struct zex_memory_checks_t {
  int enabled;
  size_t checked;
  size_t loaded;       /* unchecked: the pointer was loaded from memory */
  size_t from_integer; /* unchecked: made from an integer */
  size_t untraced;     /* unchecked: another derivation */
  size_t local;        /* unchecked: __local accesses traced to no __local parameter or array of known size */
} zex_memory_checks_t;
zex_result_t zex_module_memory_checks(zex_module_t module, zex_memory_checks_t* out);
/* Forgets the allocation bounds the memory checks cached per kernel argument: call it after freeing
 * memory whose address a new allocation of another size may take (zex::forget_memory_bounds). */
void zex_forget_memory_bounds(void);
/* Builds the module at debug level 1 if needed. *out: "" if it built; else the driver's build log
 * (valid until zex_module_destroy) and ZEX_ERROR_LEVEL_ZERO. */
zex_result_t zex_module_build_log(zex_module_t module, const char** out);
/* The kernel keeps the module's state alive: the module may be destroyed first. INVALID_ARGUMENT
 * listing the module's kernels if there is no kernel `name`. */
zex_result_t zex_kernel_create(zex_module_t module, const char* name, zex_kernel_t* out);
void zex_kernel_destroy(zex_kernel_t kernel);
/* The parameters zex's memory checks added between the kernel's own and its zex_state_t: 1, a by-value
 * struct of two uint64_t (allocation base, allocation end) per zex_kernel_checked_arguments entry, when
 * any argument is checked; else 0. zex_stream_launch sets it. */
zex_result_t zex_kernel_hidden_argument_count(zex_kernel_t kernel, uint32_t* out);
/* Version node ZEX_1.6. The kernel's own arguments the hidden bounds struct covers, ascending: *count
 * gets how many; the first min(capacity, *count) go in indices (NULL if capacity is 0). */
zex_result_t zex_kernel_checked_arguments(zex_kernel_t kernel, uint32_t* indices, uint32_t capacity, uint32_t* count);

/* ---- streams ---------------------------------------------------------------------------------------- */
zex_result_t zex_stream_create(zex_device_t device, zex_stream_t* out);
/* Waits for the stream's work; an exception nobody synchronized for is dropped. */
void zex_stream_destroy(zex_stream_t stream);
/* The language the stream's launch errors speak: a binding passes its own (Python: ZEX_LANGUAGE_PYTHON),
 * so that a bad debug level or a zero extent is named as its caller writes it (the debug_level= keyword,
 * not zex_launch_config_t.debug_level). ZEX_LANGUAGE_C until set; INVALID_ARGUMENT for an unknown value.
 * The checks themselves are the C++ launch's, whatever the language. Version node ZEX_1.1. */
zex_result_t zex_stream_set_language(zex_stream_t stream, zex_language_t language);
/* Sets the arguments (each by size; the driver checks the size), the stream's zex_state_t last, and
 * appends the launch. INVALID_ARGUMENT (naming the kernel and the counts) unless num_args is the
 * kernel's parameter count minus the trailing zex_state_t; nothing is appended then, and `args` is not
 * read at all (a wrong count reads nothing past the caller's array). */
zex_result_t zex_stream_launch(zex_stream_t stream, zex_kernel_t kernel, const zex_launch_config_t* config,
                               uint32_t num_args, const zex_arg_t* args);
/* zex_stream_launch that records `file` and `line` as the launch site a throw reports
 * (zex_exception_launch_site); file NULL: none. The pointer is kept, not copied, until the stream has
 * synchronized past the launch: pass a string literal (__FILE__) or a string that lives that long. */
zex_result_t zex_stream_launch_at(zex_stream_t stream, zex_kernel_t kernel, const zex_launch_config_t* config,
                                  uint32_t num_args, const zex_arg_t* args, const char* file, uint32_t line);
/* A call written zex_stream_launch(...) records its own __FILE__ and __LINE__: the macro below makes it
 * a zex_stream_launch_at call, so C callers get the launch site without changing how they call. The
 * function zex_stream_launch (no site) stays exported: (zex_stream_launch)(...) or its address reach
 * it, and defining ZEX_NO_LAUNCH_SITE before including this header turns the macro off. */
#ifndef ZEX_NO_LAUNCH_SITE
#define zex_stream_launch(stream, kernel, config, num_args, args) \
  zex_stream_launch_at((stream), (kernel), (config), (num_args), (args), __FILE__, (uint32_t)__LINE__)
#endif
/* Early stop (docs/integration.md, "Early stop"): launches made after this call with on != 0 behave as
 * C++'s LaunchConfig::stop_on_throw: once a work-item threw into the stream's slot, their work-groups that
 * start later, and the stream's later such launches until zex_stream_synchronize, return at once (a
 * kernel with barriers stops only for an earlier launch's throw). on == 0 turns it off for later launches.
 * Version node ZEX_1.3. */
zex_result_t zex_stream_set_stop_on_throw(zex_stream_t stream, int on);
/* Waits for everything launched. ZEX_ERROR_KERNEL_EXCEPTION if a work-item threw: *exception_out (if
 * not NULL) receives it, to be destroyed with zex_exception_destroy; the last error message holds its
 * C text. The stream is usable afterwards. *exception_out is NULL otherwise. */
zex_result_t zex_stream_synchronize(zex_stream_t stream, zex_exception_t* exception_out);
/* zex_stream_synchronize that gives up after timeout_ns (UINT64_MAX: never): *done_out 0 if the work
 * has not finished (nothing changed), 1 once it has (with the exception, if one was thrown). */
zex_result_t zex_stream_synchronize_for(zex_stream_t stream, uint64_t timeout_ns, int* done_out,
                                        zex_exception_t* exception_out);

/* ---- events: marks in a stream (docs/integration.md, "Events") -------------------------------------- *
 * zex_stream_record appends one barrier and returns an event signalled once every launch so far has
 * finished. Waiting on it raises a throw of those launches once: whichever of zex_event_synchronize and
 * zex_stream_synchronize sees it first returns ZEX_ERROR_KERNEL_EXCEPTION, and resets the stream's
 * report; a throw of a launch after the mark is left to later waits. An event may outlive its stream
 * (it then only waits) and its context handle; raising through it is a use of its stream (one thread
 * at a time). */
zex_result_t zex_stream_record(zex_stream_t stream, zex_event_t* out);
/* Waits for the launches before the mark. ZEX_ERROR_KERNEL_EXCEPTION with *exception_out (if not NULL)
 * as zex_stream_synchronize if one of them threw and nobody raised it yet; *exception_out NULL otherwise. */
zex_result_t zex_event_synchronize(zex_event_t event, zex_exception_t* exception_out);
/* *ready_out: 1 if every launch before the mark has finished, else 0; never waits, never raises. */
zex_result_t zex_event_ready(zex_event_t event, int* ready_out);
/* Makes every later command of `stream` wait for `event` (recorded on any stream): ordering only,
 * nothing is raised; appends nothing. The stream keeps the event alive until it has waited past it. */
zex_result_t zex_stream_wait_event(zex_stream_t stream, zex_event_t event);
/* The Level Zero event the mark signals (owned by zex: wait on it in your own commands); NULL if event is. */
ze_event_handle_t zex_event_handle(zex_event_t event);
/* Waits for the mark if it is still pending, then frees it. NULL: nothing. */
void zex_event_destroy(zex_event_t event);

/* ---- graphs: launches recorded once, executed many times (zex::Graph, zex::Queue; ZEX_1.2) ----------
 * A graph records launches into a regular command list; a queue executes it any number of times, and
 * zex_queue_synchronize raises a throw of any execution since the last synchronize: the exception says
 * which (zex_exception_execution, zex_exception_executions_thrown; docs/integration.md, 6a). */
/* A graph on `device`; `name` (may be NULL) appears in its exceptions' messages. */
zex_result_t zex_graph_create(zex_device_t device, const char* name, zex_graph_t* out);
/* Wraps a runtime's regular command list, not yet closed (zex appends, closes, never destroys it). */
zex_result_t zex_graph_adopt(zex_device_t device, ze_command_list_handle_t list, const char* name, zex_graph_t* out);
/* What the graph's launch errors name, as zex_stream_set_language: ZEX_LANGUAGE_C until set. */
zex_result_t zex_graph_set_language(zex_graph_t graph, zex_language_t language);
/* Early stop for the graph's launches recorded after this call (on != 0), as Graph::stop_on_throw: in an
 * execution where a launch throws, the launches after it return at once. ZEX_1.3. */
zex_result_t zex_graph_set_stop_on_throw(zex_graph_t graph, int on);
/* Records a launch, arguments as zex_stream_launch (captured now); file/line: its launch site (NULL: none;
 * the pointer is kept as long as the graph). ZEX_ERROR_INVALID_STATE once the graph is closed. */
zex_result_t zex_graph_launch_at(zex_graph_t graph, zex_kernel_t kernel, const zex_launch_config_t* config,
                                 uint32_t num_args, const zex_arg_t* args, const char* file, uint32_t line);
zex_result_t zex_graph_launch(zex_graph_t graph, zex_kernel_t kernel, const zex_launch_config_t* config,
                              uint32_t num_args, const zex_arg_t* args);
#ifndef ZEX_NO_LAUNCH_SITE
#define zex_graph_launch(graph, kernel, config, num_args, args) \
  zex_graph_launch_at((graph), (kernel), (config), (num_args), (args), __FILE__, (uint32_t)__LINE__)
#endif
/* Launches recorded so far: the number of the last one (launches are numbered 1, 2, ... in recording
 * order). 0 if graph is NULL. ZEX_1.4. */
uint64_t zex_graph_launches(zex_graph_t graph);
/* Changes the arguments of launch number `launch` of a closed graph for the executions submitted after
 * this call (zex::Graph::update): all of its arguments again, as zex_graph_launch takes them; only those
 * that differ change. In place on a driver with mutable command lists, else the list is recorded again
 * (ZEX_ERROR_INVALID_STATE for an adopted list, or one whose zex_graph_handle was taken while recording).
 * Waits for the graph's executions in flight on a queue first (their throws are kept for the next
 * zex_queue_synchronize); ZEX_ERROR_INVALID_STATE while in flight on a stream. ZEX_1.4. */
zex_result_t zex_graph_update(zex_graph_t graph, uint64_t launch, uint32_t num_args, const zex_arg_t* args);
/* Ends the recording (idempotent). */
zex_result_t zex_graph_close(zex_graph_t graph);
/* Executions submitted so far (the next one's index); 0 if graph is NULL. */
uint64_t zex_graph_executions(zex_graph_t graph);
/* The regular command list (owned by zex unless adopted); NULL if graph is. */
ze_command_list_handle_t zex_graph_handle(zex_graph_t graph);
/* Waits for the graph's executions in flight, then frees it; their throws are dropped. NULL: nothing. */
void zex_graph_destroy(zex_graph_t graph);
/* A command queue on `device`, or a runtime's own (adopt: never destroyed by zex). */
zex_result_t zex_queue_create(zex_device_t device, zex_queue_t* out);
zex_result_t zex_queue_adopt(zex_device_t device, ze_command_queue_handle_t queue, zex_queue_t* out);
/* Submits one execution of `graph` (closed). ZEX_ERROR_INVALID_STATE if it is not closed or has
 * executions in flight on another queue. */
zex_result_t zex_queue_execute(zex_queue_t queue, zex_graph_t graph);
/* One execution of a closed graph on a stream, in order with its launches (zex::Stream::execute: the
 * driver's immediate append, spec 1.9); zex_stream_synchronize raises its throws after the stream's own.
 * ZEX_ERROR_LEVEL_ZERO with ZE_RESULT_ERROR_UNSUPPORTED_FEATURE when the driver lacks it: use a queue. */
zex_result_t zex_stream_execute(zex_stream_t stream, zex_graph_t graph);
/* Waits for every execution submitted; ZEX_ERROR_KERNEL_EXCEPTION and *exception_out (if not NULL) for
 * the first that threw, as zex_stream_synchronize. */
zex_result_t zex_queue_synchronize(zex_queue_t queue, zex_exception_t* exception_out);
/* zex_queue_synchronize giving up after timeout_ns: *done_out 0 if the work has not finished. */
zex_result_t zex_queue_synchronize_for(zex_queue_t queue, uint64_t timeout_ns, int* done_out,
                                       zex_exception_t* exception_out);
ze_command_queue_handle_t zex_queue_handle(zex_queue_t queue);
/* Waits for what was submitted, then frees the queue (a runtime's adopted queue is not destroyed). */
void zex_queue_destroy(zex_queue_t queue);
/* 1 and *index_out (may be NULL) the 0-based execution, if the exception comes from a graph's execution;
 * else 0. */
int zex_exception_execution(zex_exception_t e, uint64_t* index_out);
/* Executions that threw among those the synchronize waited for (0 for a stream's exception). */
uint64_t zex_exception_executions_thrown(zex_exception_t e);
/* The other executions' reports a queue's synchronize kept besides the one shown (at most 16, oldest
 * first; docs/design.md, "Graphs"): their count (0 for a stream's exception or NULL), and the i-th as a
 * new exception handle to `*out` (the caller's to destroy; INVALID_ARGUMENT if i >= the count). */
uint32_t zex_exception_other_count(zex_exception_t e);
zex_result_t zex_exception_other(zex_exception_t e, uint32_t i, zex_exception_t* out);

/* ---- kernel exceptions (immutable; strings valid until zex_exception_destroy) ---------------------- */
const char* zex_exception_message(zex_exception_t e); /* the message, hints in C terms */
const char* zex_exception_message_for(zex_exception_t e, zex_language_t language);
const char* zex_exception_name(zex_exception_t e);        /* "" at debug level 0 */
const char* zex_exception_reason(zex_exception_t e);      /* "" at debug level 0, unless zex numbered the site */
const char* zex_exception_kernel_name(zex_exception_t e);
int zex_exception_debug_level(zex_exception_t e);
int zex_exception_global_id(zex_exception_t e, uint64_t out[3]); /* 1 if recorded (level 2), else 0 */
int zex_exception_group_id(zex_exception_t e, uint64_t out[3]);
int zex_exception_local_id(zex_exception_t e, uint64_t out[3]);
uint32_t zex_exception_frame_count(zex_exception_t e);
/* Frame i (0 = innermost); 1 if it exists, else 0. Any out-pointer may be NULL. */
int zex_exception_frame(zex_exception_t e, uint32_t i, const char** function, const char** file, uint32_t* line);
/* Frames in the throw's whole call chain: more than zex_exception_frame_count when it was cut at 16
 * (the innermost are kept); 0 when not known. */
uint32_t zex_exception_frame_depth(zex_exception_t e);
/* Operand values the throw recorded (level >= 1): ZEX_CHECK_BOUNDS {index, length}, ZEX_THROW_VALUES
 * {a, b}. Returns how many there are (0 to 2: none at level 0 or for a plain throw) and copies the
 * first min(that, capacity) to `out` (may be NULL when capacity is 0). */
uint32_t zex_exception_values(zex_exception_t e, uint64_t* out, uint32_t capacity);
/* How many work-items threw (at least 1; always 1 at level 0, where nothing is counted). */
uint64_t zex_exception_thrower_count(zex_exception_t e); /* 0 if e is NULL */
/* The launch site: the file and line of the zex_stream_launch call (or zex_stream_launch_at's
 * arguments) whose kernel threw. 1 if recorded, else 0 (a launch without a site, zex_slot_check).
 * Either out-pointer may be NULL; *file is valid until zex_exception_destroy. */
int zex_exception_launch_site(zex_exception_t e, const char** file, uint32_t* line);
void zex_exception_destroy(zex_exception_t e);

/* ---- a kernel exception in one struct: the projection of zex::KernelExceptionInfo ------------------ *
 * zex_exception_info fills a zex_exception_info_t with everything the exception holds: the one C view
 * of a kernel exception (the accessors above read it too, and Python's ctypes reads this struct), so a
 * field zex::KernelExceptionInfo gains reaches C and bindings here (docs/decisions.md, issue 25).
 * Versioned by size: set `size` to sizeof(zex_exception_info_t) before the call. zex copies the first
 * min(size, its own sizeof) bytes of its struct, i.e. the fields a struct of that size holds, leaves the
 * rest of the caller's struct alone, and sets `size` to the bytes it filled: a program built against an older zex.h gets the fields it knows; one built against
 * a newer zex.h, run with an older library, sees a smaller `size` (zero-initialize the struct and read
 * only fields below it). Fields are only ever appended. Pointers are owned by the exception and valid
 * until zex_exception_destroy. ZEX_ERROR_INVALID_ARGUMENT if e or out is NULL or size is smaller than
 * the `size` field itself; *out is not touched then. Exported under the version node ZEX_1.1. */
typedef struct zex_exception_frame_t {
  const char* function; /* e.g. the kernel's name for a throw in the kernel */
  const char* file;     /* "" when the line is not known */
  uint32_t line;        /* 0 = not known (a caller in a module without debug information) */
} zex_exception_frame_t;  /* never grows: a new per-frame field would come as a new array */

typedef struct zex_exception_info_t {
  size_t size;                          /* in: sizeof(zex_exception_info_t); out: the bytes filled */
  int debug_level;                      /* 0, 1 or 2: what the report holds */
  uint32_t abi_version;                 /* the report's ZEX_ABI_VERSION; another value: only the kernel
                                           and device names were interpreted */
  const char* name;                     /* "BoundsError"; "" when not recorded (level 0) */
  const char* reason;                   /* "" when not recorded */
  const char* kernel_name;              /* the kernel of the launch that threw */
  const char* device_name;              /* the Level Zero device's name */
  uint64_t launch_id;                   /* the launch's id (a stream counts from 1; a slot: the caller's) */
  const uint64_t* global_id;            /* 3 values, or NULL when not recorded (level 2 only) */
  const uint64_t* group_id;             /* 3 values, or NULL */
  const uint64_t* local_id;             /* 3 values, or NULL */
  const zex_exception_frame_t* frames;  /* frame_count frames, innermost first; NULL when none */
  uint32_t frame_count;
  uint32_t frame_depth;                 /* frames in the whole chain (> frame_count: cut); 0: not known */
  const uint64_t* values;               /* value_count operands (0 to 2); NULL when none */
  uint32_t value_count;
  uint32_t value_kind;                  /* ZEX_VALUES_*: how the message labels the values */
  uint64_t thrower_count;               /* work-items that threw, at least 1 (1 at level 0) */
  const char* launch_site_file;         /* the launch's file, or NULL when it has no launch site */
  uint32_t launch_site_line;            /* its line; 0 when there is no launch site */
  /* Appended for graphs (zex::Graph, issue 26): a graph execution's throw; 0 / "" for a stream's. */
  uint32_t execution_known;             /* 1 when the exception comes from a graph's execution */
  uint64_t execution_index;             /* that execution, 0-based per graph (0 when not known) */
  uint64_t executions_thrown;           /* executions that threw among those the synchronize waited for */
  uint64_t executions_synchronized;     /* executions that synchronize waited for */
  const char* graph_name;               /* the graph's name; "" when none (or not from a graph) */
} zex_exception_info_t;

zex_result_t zex_exception_info(zex_exception_t e, zex_exception_info_t* out);

/* ---- raw handles for interop (NULL, and the last error set, on failure) ---------------------------- */
ze_context_handle_t zex_context_handle(zex_context_t context);
ze_driver_handle_t zex_driver_handle(zex_context_t context);
ze_device_handle_t zex_device_handle(zex_device_t device);
ze_command_list_handle_t zex_stream_handle(zex_stream_t stream); /* an immediate list; see the guide */
/* The kernel's Level Zero kernel at debug level 1 (building the module if needed), owned by zex. */
ze_kernel_handle_t zex_kernel_handle(zex_kernel_t kernel);

/* ---- the lower-level slot API: runtimes that own their command lists (zex::SlabPool, UniqueSlot) ----
 * A slot is one report and claim word from the device's slab pool. Per launch, pass
 * zex_slot_state(slot, id) as the kernel's last argument (zeKernelSetArgumentValue with
 * sizeof(zex_state_t)) and declare host and device indirect access on the kernel; after your own
 * synchronization, zex_slot_check() turns a throw into a zex_exception_t and resets the slot. Only the
 * first throw is reported until the slot is reset. Different slots may be used from different threads;
 * one slot from one thread at a time. */
/* Acquires a clean slot (grows the pool by one slab when none is free). */
zex_result_t zex_slot_acquire(zex_device_t device, zex_slot_t* out);
/* Returns the slot; no launch may still use it. An unchecked throw is discarded (reset now). */
void zex_slot_release(zex_slot_t slot);
/* The kernel's report argument for a launch with a non-zero id of your choosing. */
zex_result_t zex_slot_state(zex_slot_t slot, uint64_t launch_id, zex_state_t* out);
/* 1 if a work-item threw into the slot (one load; meaningful after its launches completed), else 0. */
int zex_slot_thrown(zex_slot_t slot);
/* Appends the claim word's reset (a 4-byte fill) to `list`, any list of the device; signals `signal`
 * and waits for `wait` if not NULL. zex_slot_check does this for you. */
zex_result_t zex_slot_append_reset(zex_slot_t slot, ze_command_list_handle_t list, ze_event_handle_t signal,
                                   ze_event_handle_t wait);
/* After your synchronization: ZEX_SUCCESS if nothing was thrown; else decodes the report, appends the
 * reset to `reset_list` (NULL: resets now on zex's own list, waited for), clears the report and returns
 * ZEX_ERROR_KERNEL_EXCEPTION with *exception_out (may be NULL). `kernel_name` names the kernel in the
 * message; `launch_level` is the level it was launched at (used if the report's own is corrupt). If
 * the reset cannot be appended: ZEX_ERROR_LEVEL_ZERO and the report is kept. */
zex_result_t zex_slot_check(zex_slot_t slot, const char* kernel_name, ze_command_list_handle_t reset_list,
                            int launch_level, zex_exception_t* exception_out);
/* zex_slot_check for several launches in flight: name_of(user, launch_id) names the kernel (return
 * NULL if unknown; the string is copied before zex_slot_check_with returns). */
typedef const char* (*zex_kernel_name_fn)(void* user, uint64_t launch_id);
zex_result_t zex_slot_check_with(zex_slot_t slot, zex_kernel_name_fn name_of, void* user,
                                 ze_command_list_handle_t reset_list, int launch_level,
                                 zex_exception_t* exception_out);

#ifdef __cplusplus
}
#endif

#endif /* ZEX_ZEX_H */
