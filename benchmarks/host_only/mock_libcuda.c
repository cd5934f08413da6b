/* A stand-in libcuda.so.1 whose launches cost nothing, so that a benchmark on a machine without a GPU times only
 * jitkernel's own host work per call (argument parsing, array import, plan lookup, packing, output objects).
 * Device memory is host memory (allocations, copies and memsets are real, so arrays round-trip); kernels never
 * run. The device reports itself as a compute capability 9.0 GPU. Only what jitkernel resolves is exported.
 * Every module's __device__ globals are one 64-byte block (checked mode's report slot); a test can have the next
 * launch write a report there (mock_set_next_report), as a checked kernel's out-of-bounds access would, and make
 * each stream synchronisation take a while (mock_set_sync_delay_ms), as waiting for a running kernel does. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

static __thread void* current_ctx = 0;
static char fake_ctx, fake_pool, fake_func;

CUresult cuInit(unsigned int f) { (void)f; return 0; }
CUresult cuDriverGetVersion(int* v) { *v = 13000; return 0; }
CUresult cuGetErrorName(CUresult r, const char** s) { (void)r; *s = "CUDA_ERROR_MOCK"; return 0; }
CUresult cuGetErrorString(CUresult r, const char** s) { (void)r; *s = "mock driver"; return 0; }
CUresult cuDeviceGetCount(int* n) { *n = 1; return 0; }
CUresult cuDeviceGet(int* d, int ordinal) { *d = ordinal; return ordinal == 0 ? 0 : 101; }
CUresult cuDeviceGetName(char* name, int len, int d) { (void)d; strncpy(name, "Mock GPU (no kernels run)", len); return 0; }
CUresult cuDeviceGetAttribute(int* v, int attr, int d) {
  (void)d;
  switch (attr) {
    case 1: case 2: case 3: *v = 1024; break;
    case 4: *v = 64; break;
    case 5: *v = 2147483647; break;
    case 6: case 7: *v = 65535; break;
    case 8: *v = 49152; break;
    case 12: *v = 65536; break;
    case 16: *v = 132; break;
    case 39: *v = 2048; break;
    case 75: *v = 9; break;
    case 76: *v = 0; break;
    case 97: *v = 232448; break;
    case 95: case 115: case 120: *v = 1; break;
    default: *v = 0;
  }
  return 0;
}
CUresult cuDevicePrimaryCtxRetain(void** c, int d) { (void)d; *c = &fake_ctx; return 0; }
CUresult cuDevicePrimaryCtxRelease(int d) { (void)d; return 0; }
CUresult cuCtxGetCurrent(void** c) { *c = current_ctx; return 0; }
CUresult cuCtxSetCurrent(void* c) { current_ctx = c; return 0; }
CUresult cuCtxSynchronize(void) { return 0; }
CUresult cuCtxGetDevice(int* d) { *d = 0; return 0; }
CUresult cuModuleLoadData(void** m, const void* image) { (void)image; *m = malloc(16); return 0; }
CUresult cuModuleLoadDataEx(void** m, const void* image, unsigned n, int* o, void** v) {
  (void)n; (void)o; (void)v; return cuModuleLoadData(m, image);
}
CUresult cuModuleUnload(void* m) { free(m); return 0; }
CUresult cuModuleGetFunction(void** f, void* m, const char* name) { (void)m; (void)name; *f = &fake_func; return 0; }
CUresult cuFuncGetAttribute(int* v, int attr, void* f) {
  (void)f;
  switch (attr) {
    case 0: *v = 1024; break;
    case 4: *v = 16; break;
    case 5: case 6: *v = 90; break;
    default: *v = 0;
  }
  return 0;
}
CUresult cuFuncSetAttribute(void* f, int attr, int v) { (void)f; (void)attr; (void)v; return 0; }
static unsigned char global_block[64], next_report[64];
static int has_next_report;
void mock_set_next_report(const void* report) { memcpy(next_report, report, 64); has_next_report = 1; }
CUresult cuFuncGetModule(void** m, void* f) { (void)f; *m = &fake_ctx; return 0; }
CUresult cuModuleGetGlobal(CUdeviceptr* p, size_t* bytes, void* m, const char* name) {
  (void)m; (void)name; *p = (CUdeviceptr)(uintptr_t)global_block; *bytes = sizeof global_block; return 0;
}
CUresult cuLaunchKernelEx(const void* config, void* f, void** params, void** extra) {
  (void)config; (void)f; (void)params; (void)extra;
  if (has_next_report) memcpy(global_block, next_report, 64);
  has_next_report = 0;
  return 0;
}
CUresult cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned smem, void* stream, void** params, void** extra) {
  (void)f; (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)smem; (void)stream; (void)params;
  (void)extra;
  return 0;
}
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* n, void* f, int b, size_t s) {
  (void)f; (void)b; (void)s; *n = 1; return 0;
}
CUresult cuOccupancyMaxActiveClusters(int* n, void* f, const void* c) { (void)f; (void)c; *n = 1; return 0; }
CUresult cuMemAlloc(CUdeviceptr* p, size_t n) {
  void* m = aligned_alloc(256, (n + 255) / 256 * 256 + 256);
  if (!m) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
  *p = (CUdeviceptr)(uintptr_t)m;
  return 0;
}
CUresult cuMemFree(CUdeviceptr p) { free((void*)(uintptr_t)p); return 0; }
CUresult cuMemAllocAsync(CUdeviceptr* p, size_t n, void* s) { (void)s; return cuMemAlloc(p, n); }
CUresult cuMemFreeAsync(CUdeviceptr p, void* s) { (void)s; return cuMemFree(p); }
CUresult cuDeviceGetDefaultMemPool(void** pool, int d) { (void)d; *pool = &fake_pool; return 0; }
CUresult cuMemPoolSetAttribute(void* pool, int attr, void* v) { (void)pool; (void)attr; (void)v; return 0; }
CUresult cuMemcpyHtoDAsync(CUdeviceptr d, const void* h, size_t n, void* s) {
  (void)s; memcpy((void*)(uintptr_t)d, h, n); return 0;
}
CUresult cuMemcpyDtoHAsync(void* h, CUdeviceptr d, size_t n, void* s) {
  (void)s; memcpy(h, (const void*)(uintptr_t)d, n); return 0;
}
CUresult cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr src, size_t n, void* s) {
  (void)s; memmove((void*)(uintptr_t)d, (const void*)(uintptr_t)src, n); return 0;
}
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, void* s) {
  (void)s; memset((void*)(uintptr_t)d, v, n); return 0;
}
CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, void* s) {
  (void)s; unsigned short* p = (unsigned short*)(uintptr_t)d; for (size_t i = 0; i < n; ++i) p[i] = v; return 0;
}
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, void* s) {
  (void)s; unsigned int* p = (unsigned int*)(uintptr_t)d; for (size_t i = 0; i < n; ++i) p[i] = v; return 0;
}
CUresult cuPointerGetAttribute(void* out, int attr, CUdeviceptr p) {
  (void)p;
  if (attr == 1) *(void**)out = &fake_ctx;
  else if (attr == 2) *(unsigned int*)out = 2; /* CU_MEMORYTYPE_DEVICE */
  else if (attr == 9) *(int*)out = 0;
  else return 1;
  return 0;
}
static volatile int sync_delay_ms;
void mock_set_sync_delay_ms(int ms) { sync_delay_ms = ms; }
CUresult cuStreamSynchronize(void* s) {
  (void)s;
  if (sync_delay_ms > 0) usleep((useconds_t)sync_delay_ms * 1000);
  return 0;
}
CUresult cuStreamQuery(void* s) { (void)s; return 0; }
CUresult cuStreamIsCapturing(void* s, int* status) { (void)s; *status = 0; return 0; }
CUresult cuStreamGetCtx(void* s, void** c) { (void)s; *c = &fake_ctx; return 0; }
CUresult cuEventCreate(void** e, unsigned f) { (void)f; *e = malloc(8); return 0; }
CUresult cuEventRecord(void* e, void* s) { (void)e; (void)s; return 0; }
CUresult cuEventDestroy(void* e) { free(e); return 0; }
CUresult cuStreamWaitEvent(void* s, void* e, unsigned f) { (void)s; (void)e; (void)f; return 0; }
CUresult cuEventSynchronize(void* e) { (void)e; return 0; }
/* Every timed interval lasts 1 ms (autotuning's timer; launches take no time here). */
CUresult cuEventElapsedTime(float* ms, void* a, void* b) { (void)a; (void)b; *ms = 1.0f; return 0; }

#define ENTRY(name) {#name, (void*)name}
static const struct { const char* name; void* fn; } entries[] = {
  ENTRY(cuInit), ENTRY(cuDriverGetVersion), ENTRY(cuGetErrorName), ENTRY(cuGetErrorString),
  ENTRY(cuDeviceGetCount), ENTRY(cuDeviceGet), ENTRY(cuDeviceGetName), ENTRY(cuDeviceGetAttribute),
  ENTRY(cuDevicePrimaryCtxRetain), ENTRY(cuDevicePrimaryCtxRelease), ENTRY(cuCtxGetCurrent), ENTRY(cuCtxSetCurrent),
  ENTRY(cuCtxSynchronize), ENTRY(cuCtxGetDevice), ENTRY(cuModuleLoadData), ENTRY(cuModuleLoadDataEx),
  ENTRY(cuModuleUnload), ENTRY(cuModuleGetFunction), ENTRY(cuFuncGetAttribute), ENTRY(cuFuncSetAttribute),
  ENTRY(cuLaunchKernelEx), ENTRY(cuLaunchKernel), ENTRY(cuOccupancyMaxActiveBlocksPerMultiprocessor), ENTRY(cuOccupancyMaxActiveClusters),
  ENTRY(cuMemAllocAsync), ENTRY(cuMemFreeAsync), ENTRY(cuMemAlloc), ENTRY(cuMemFree), ENTRY(cuDeviceGetDefaultMemPool),
  ENTRY(cuMemPoolSetAttribute), ENTRY(cuMemcpyHtoDAsync), ENTRY(cuMemcpyDtoHAsync), ENTRY(cuMemcpyDtoDAsync),
  ENTRY(cuMemsetD8Async), ENTRY(cuMemsetD16Async), ENTRY(cuMemsetD32Async), ENTRY(cuPointerGetAttribute),
  ENTRY(cuStreamSynchronize), ENTRY(cuStreamQuery), ENTRY(cuStreamIsCapturing), ENTRY(cuStreamGetCtx),
  ENTRY(cuEventCreate), ENTRY(cuEventRecord), ENTRY(cuEventDestroy), ENTRY(cuStreamWaitEvent),
  ENTRY(cuEventSynchronize), ENTRY(cuEventElapsedTime),
  ENTRY(cuFuncGetModule), ENTRY(cuModuleGetGlobal),
};

static void* lookup(const char* symbol) {
  for (size_t i = 0; i < sizeof entries / sizeof entries[0]; ++i)
    if (strcmp(entries[i].name, symbol) == 0) return entries[i].fn;
  return 0;
}

/* NVRTC looks for a loaded driver's private tables; having none is an answer it accepts. */
CUresult cuGetExportTable(const void** table, const void* id) { (void)id; *table = 0; return 801; }

/* The driver's symbol lookup (jitkernel resolves every entry point through it). */
CUresult cuGetProcAddress_v2(const char* symbol, void** fn, int version, uint64_t flags, int* status) {
  (void)version; (void)flags;
  *fn = lookup(symbol);
  if (status) *status = *fn ? 0 : 1; /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
  return *fn ? 0 : 500;
}
CUresult cuGetProcAddress(const char* symbol, void** fn, int version, uint64_t flags) {
  return cuGetProcAddress_v2(symbol, fn, version, flags, 0);
}
