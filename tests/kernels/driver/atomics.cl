// Atomics among many work-items: exactly one compare-and-swap winner, and an exact counter.

kernel void cas_winner(volatile global int* flag, volatile global int* winners, global int* won) {
  int gid = (int)get_global_id(0);
  int prev = atomic_cmpxchg(flag, 0, gid + 1);
  if (prev == 0) {
    atomic_inc(winners);
    won[gid] = 1;
  } else {
    won[gid] = 0;
  }
}

kernel void count(volatile global int* counter) { atomic_inc(counter); }

kernel void count_add(volatile global long* sum) { atom_add(sum, (long)get_global_id(0)); }
