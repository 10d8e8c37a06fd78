/* abi.h compiled as C11: its _Static_asserts run here, and the C compiler's view of the layout is
   returned to abi_test.cpp, which compares it with C++'s. */
#include <zex/abi.h>

#include <stddef.h>

size_t zex_abi_c_layout(size_t* out, size_t capacity);

size_t zex_abi_c_layout(size_t* out, size_t capacity) {
  const size_t values[] = {
      sizeof(zex_state_t),
      _Alignof(zex_state_t),
      offsetof(zex_state_t, report),
      offsetof(zex_state_t, claim),
      offsetof(zex_state_t, launch_id),
      sizeof(zex_frame_t),
      _Alignof(zex_frame_t),
      offsetof(zex_frame_t, function),
      offsetof(zex_frame_t, file),
      offsetof(zex_frame_t, line),
      offsetof(zex_frame_t, reserved),
      sizeof(zex_report_t),
      _Alignof(zex_report_t),
      offsetof(zex_report_t, status),
      offsetof(zex_report_t, debug_level),
      offsetof(zex_report_t, launch_id),
      offsetof(zex_report_t, name),
      offsetof(zex_report_t, reason),
      offsetof(zex_report_t, global_id),
      offsetof(zex_report_t, group_id),
      offsetof(zex_report_t, local_id),
      offsetof(zex_report_t, frame_count),
      offsetof(zex_report_t, abi_version),
      offsetof(zex_report_t, frames),
      offsetof(zex_report_t, values),
      offsetof(zex_report_t, value_count),
      offsetof(zex_report_t, value_kind),
      offsetof(zex_report_t, site),
      offsetof(zex_report_t, reserved),
  };
  size_t n = sizeof(values) / sizeof(values[0]);
  for (size_t i = 0; i < n && i < capacity; ++i)
    out[i] = values[i];
  return n;
}
