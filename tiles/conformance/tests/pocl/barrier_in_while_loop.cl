__kernel __attribute__((reqd_work_group_size(128, 1, 1)))
void k(__global int* c, __global int* out) {
  __local int loc[4];
  const int tid = (int)get_local_id(0);
  const int pid0 = (int)get_group_id(0);
  bool v1 = (tid < 1);
  int v2 = 0;
  if (v1) { v2 = atomic_add((volatile __global int*)c, 0); }
  if (v1) { loc[0] = v2; }
  barrier(CLK_LOCAL_MEM_FENCE);
  int v3 = loc[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  int v5 = 0;
  if (v1) { v5 = atomic_cmpxchg((volatile __global int*)c, v3, v3 + 1); }
  if (v1) { loc[0] = v5; }
  barrier(CLK_LOCAL_MEM_FENCE);
  int v6 = loc[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  int v7 = v3;
  int v8 = v6;
  while (v8 != v7) {
    int v11 = 0;
    if (v1) { v11 = atomic_cmpxchg((volatile __global int*)c, v8, v8 + 1); }
    if (v1) { loc[0] = v11; }
    barrier(CLK_LOCAL_MEM_FENCE);
    int v12 = loc[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    v7 = v8;
    v8 = v12;
  }
  if (tid < 1) { out[pid0] = v7; }
}
