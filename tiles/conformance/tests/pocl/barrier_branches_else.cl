__kernel __attribute__((reqd_work_group_size(128, 1, 1)))
void k(__global int* c, int n) {
  __local ulong rows[8];
  const int tid = (int)get_local_id(0);
  const int g = (int)get_group_id(0);
  const int col = tid % 16;
  const bool m = col < n;
  __global int* row = c + (g * 8 + tid % 8) * 16;
  if (g % 2 == 0) {
    if (tid < 8) rows[tid] = (ulong)row;
    barrier(CLK_LOCAL_MEM_FENCE);
    __global int* p = (__global int*)rows[tid / 16];
    if (m) p[col] = 1;
  } else {
    if (tid < 8) rows[tid] = (ulong)row;
    barrier(CLK_LOCAL_MEM_FENCE);
    __global int* p = (__global int*)rows[tid / 16];
    if (m) p[col] = 2;
  }
}
