// Kernels of the pipelining tests: signalled launches retire in order (event_fence_test.cpp), host
// synchronize and in-order flags (cmdlist_test.cpp).

// One work-item per launch: launch i takes the next ticket, so tickets[i] == i exactly when
// the launches ran once each, in order; *counter is how many have run.
kernel void take_ticket(global int* counter, global int* tickets, int i) { tickets[i] = atomic_inc(counter); }

// What a launch sees of another list's progress: dst[i] = *src, read atomically.
kernel void snapshot(global int* src, global int* dst, int i) { dst[i] = atomic_add(src, 0); }

// Says that it runs, then runs until the host sets *go: a kernel certainly running at a moment the host picks.
kernel void wait_for_host(global volatile int* started, global volatile int* go) {
  *started = 1;
  while (*go == 0) {
  }
}

// Two local buffers: given each the device's whole local memory, the launch cannot run (error propagation).
kernel void two_locals(global int* out, local int* a, local int* b) {
  a[0] = 1;
  b[0] = 2;
  barrier(CLK_LOCAL_MEM_FENCE);
  out[get_global_id(0)] = a[0] + b[0];
}
