/* A do-nothing libcuda for benchmarks/cuda_launch_path_stub.py: every call succeeds at once. */
#include <stddef.h>
#include <string.h>
typedef unsigned long long u64;
static void *current = 0;
int cuInit(unsigned f) { return 0; }
int cuDeviceGetCount(int *n) { *n = 1; return 0; }
int cuDeviceGet(int *d, int o) { *d = o; return 0; }
int cuDeviceGetName(char *n, int l, int d) { strncpy(n, "stub", l); return 0; }
int cuDeviceGetAttribute(int *v, int a, int d) { *v = a == 75 ? 9 : 0; return 0; }
int cuDevicePrimaryCtxRetain(void **c, int d) { *c = (void *)(0x100 + (size_t)d); return 0; }
int cuCtxGetCurrent(void **c) { *c = current; return 0; }
int cuCtxSetCurrent(void *c) { current = c; return 0; }
int cuCtxGetDevice(int *d) { *d = 0; return 0; }
int cuCtxPushCurrent_v2(void *c) { current = c; return 0; }
int cuCtxPopCurrent_v2(void **c) { *c = current; return 0; }
int cuModuleLoadData(void **m, const void *i) { *m = (void *)0x200; return 0; }
int cuModuleGetFunction(void **f, void *m, const char *n) { *f = (void *)0x300; return 0; }
int cuFuncSetAttribute(void *f, int a, int v) { return 0; }
u64 last_size;
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned sh, void *s, void **p, void **extra) { last_size = *(size_t *)extra[3]; return 0; }
int cuPointerGetAttribute(void *d, int a, u64 p) { *(int *)d = 0; return 0; }
int cuMemAlloc_v2(u64 *p, size_t n) { *p = 0x1000; return 0; }
int cuMemFree_v2(u64 p) { return 0; }
int cuMemcpyHtoDAsync_v2(u64 d, const void *h, size_t n, void *s) { return 0; }
int cuMemcpyDtoHAsync_v2(void *h, u64 d, size_t n, void *s) { return 0; }
int cuEventCreate(void **e, unsigned f) { *e = (void *)0x400; return 0; }
int cuEventRecord(void *e, void *s) { return 0; }
int cuEventQuery(void *e) { return 0; }
int cuEventDestroy_v2(void *e) { return 0; }
int cuGetErrorName(int s, const char **n) { *n = "stub"; return 0; }
