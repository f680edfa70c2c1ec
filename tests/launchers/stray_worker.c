/*
 * A rank that touches a GPU not its own (tests/launchers/check_foreign.py):
 * its own GPU is its LOCAL_RANK's; the rank named by STRAY_CONTEXT_RANK
 * first loads a "checkpoint" on GPU 0 (a context there, 64 MiB allocated
 * and freed again: the context stays until exit, as a stray
 * torch.load(...) leaves it), then works on its own GPU; the rank named by
 * STRAY_ALLOC_RANK works on its own GPU and stages a 32 MiB buffer on GPU 0
 * through cuMemCreate from its own context (no context of its own there).
 * The rank named by STRAY_LATE_RANK stages that buffer on GPU 0 too and
 * then makes its context there (a set_device to GPU 0 from its own GPU's
 * context: no free-memory drop to measure, its cost NVML's figure less the
 * buffer it already holds there).
 * Every rank allocates 256 MiB x (rank + 1) on its own GPU, holds it for
 * STRAY_HOLD_MS (default 300) and exits without freeing.
 * STRAY_OOM_RANK=R: that rank then asks its own GPU for 1 TiB (fails).
 * The truth is the simulated driver's ledger.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MIB ((size_t)1 << 20)

static long env_long(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : -1;
}

static int check(int rc, const char *what)
{
    if (rc != 0)
        fprintf(stderr, "stray_worker: %s failed: %d\n", what, rc);
    return rc;
}

__attribute__((noinline)) static void load_checkpoint(void)
{
    void *p = NULL;
    check(cudaSetDevice(0), "cudaSetDevice(0)");
    check(cudaMalloc(&p, 64 * MIB), "cudaMalloc on GPU 0");
    check(cudaFree(p), "cudaFree on GPU 0");
}

__attribute__((noinline)) static void stage_buffer(void)
{
    CUmemAllocationProp prop = { 0 };
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CUmemGenericAllocationHandle h;
    check(cuMemCreate(&h, 32 * MIB, &prop, 0), "cuMemCreate on GPU 0");
}

__attribute__((noinline)) static void late_context(void)
{
    stage_buffer();
    check(cudaSetDevice(0), "cudaSetDevice(0) after staging");
}

__attribute__((noinline)) static void train(long rank, long own)
{
    void *p = NULL;
    check(cudaSetDevice((int)own), "cudaSetDevice(own)");
    check(cudaMalloc(&p, (size_t)(rank + 1) * 256 * MIB), "cudaMalloc on its own GPU");
}

int main(void)
{
    long rank = env_long("RANK"), local = env_long("LOCAL_RANK");
    if (rank < 0 || local < 0)
        return 2;
    if (rank == env_long("STRAY_CONTEXT_RANK"))
        load_checkpoint();
    train(rank, local);
    if (rank == env_long("STRAY_ALLOC_RANK"))
        stage_buffer();
    if (rank == env_long("STRAY_LATE_RANK"))
        late_context();
    long hold = env_long("STRAY_HOLD_MS");
    hold = hold < 0 ? 300 : hold;
    struct timespec ts = { hold / 1000, (hold % 1000) * 1000000L };
    nanosleep(&ts, NULL);
    if (rank == env_long("STRAY_OOM_RANK")) {
        void *p = NULL;
        cudaMalloc(&p, (size_t)1 << 40);
    }
    return 0;
}
