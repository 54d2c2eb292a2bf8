/* A stand-in libcuda with no GPU behind it (tests/backends/cuda/test_cuda_ctypes.py,
   benchmarks/cuda_launch_path_stub.py): every call succeeds at once, "device" memory is host
   memory, the current context is per thread, and the last launch is recorded. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
typedef unsigned long long u64;
int cuInit(unsigned f) { return 0; }
int cuDeviceGetCount(int *n) { *n = 1; return 0; }
int cuDeviceGet(int *d, int o) { *d = o; return 0; }
int cuDeviceGetName(char *n, int l, int d) { strncpy(n, "stub", l); return 0; }
int cuDeviceGetAttribute(int *v, int a, int d) { *v = a == 75 ? 9 : 0; return 0; }
int cuDevicePrimaryCtxRetain(void **c, int d) { *c = (void *)(0x100 + (size_t)d); return 0; }
static __thread void *current = 0;  /* per thread, as in the driver */
int cuCtxGetCurrent(void **c) { *c = current; return 0; }
int cuCtxSetCurrent(void *c) { current = c; return 0; }
int cuCtxGetDevice(int *d) { *d = 0; return 0; }
static __thread void *stack[16];
static __thread int depth;
int cuCtxPushCurrent_v2(void *c) { stack[depth++] = current; current = c; return 0; }
int cuCtxPopCurrent_v2(void **c) { *c = current; current = depth ? stack[--depth] : 0; return 0; }
int cuModuleLoadData(void **m, const void *i) { *m = (void *)0x200; return 0; }
int cuModuleGetFunction(void **f, void *m, const char *n) { *f = (void *)0x300; return 0; }
int cuFuncSetAttribute(void *f, int a, int v) { return 0; }
/* the last launch, for tests: argument bytes, grid, block, stream */
size_t last_size;
unsigned char last_args[512];
unsigned last_grid[3], last_block, last_shared;
void *last_stream, *last_context;
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned sh, void *s, void **p, void **extra) {
  if (!current || p || extra[0] != (void *)1 || extra[2] != (void *)2 || extra[4]) return 1;
  last_size = *(size_t *)extra[3];
  memcpy(last_args, extra[1], last_size < sizeof last_args ? last_size : sizeof last_args);
  last_grid[0] = gx; last_grid[1] = gy; last_grid[2] = gz; last_block = bx; last_shared = sh;
  last_stream = s; last_context = current;
  return 0;
}
int cuPointerGetAttribute(void *d, int a, u64 p) { *(int *)d = 0; return 0; }
/* "device" memory is host memory, so tests can read what a kernel would see */
int cuMemAlloc_v2(u64 *p, size_t n) { *p = (u64)malloc(n); return 0; }
int cuMemFree_v2(u64 p) { free((void *)p); return 0; }
int cuMemcpyHtoDAsync_v2(u64 d, const void *h, size_t n, void *s) { memcpy((void *)d, h, n); return 0; }
int cuMemcpyDtoHAsync_v2(void *h, u64 d, size_t n, void *s) { memcpy(h, (void *)d, n); return 0; }
int cuEventCreate(void **e, unsigned f) { *e = (void *)0x400; return 0; }
int cuEventRecord(void *e, void *s) { return 0; }
int cuEventQuery(void *e) { return 0; }
int cuEventDestroy_v2(void *e) { return 0; }
int cuGetErrorName(int s, const char **n) { *n = "stub"; return 0; }
