/*
 * The facts of the VT_REC_PROCESS record: who this process is (pid, host,
 * command line, the launcher's rank variables) and how it is traced.
 */
#ifndef VRAMTRACE_PRELOAD_PROCESS_INFO_H
#define VRAMTRACE_PRELOAD_PROCESS_INFO_H

#include <stdint.h>

#include "trace_encoder.h"

/* Environment variables worth keeping: they tell ranks, devices and the
 * allocator's configuration apart, and which `vramtrace run` session the
 * process belongs to (VRAMTRACE_SESSION*, docs/internals/FORMAT.md "Sessions"). */
#define VT_PROCESS_ENV_LIST(X) \
    X(RANK) X(LOCAL_RANK) X(WORLD_SIZE) X(LOCAL_WORLD_SIZE) X(GROUP_RANK)          \
    X(MASTER_ADDR) X(MASTER_PORT) X(CUDA_VISIBLE_DEVICES) X(CUDA_DEVICE_ORDER)      \
    X(PYTORCH_CUDA_ALLOC_CONF) X(PYTORCH_ALLOC_CONF) X(PYTORCH_NO_CUDA_MEMORY_CACHING) \
    X(CUDA_LAUNCH_BLOCKING) X(CUDA_MODULE_LOADING) X(NCCL_P2P_DISABLE)               \
    X(SLURM_PROCID) X(SLURM_LOCALID) X(SLURM_JOB_ID) X(SLURM_NTASKS)                \
    X(OMPI_COMM_WORLD_RANK) X(OMPI_COMM_WORLD_LOCAL_RANK) X(OMPI_COMM_WORLD_SIZE)   \
    X(PMI_RANK) X(PMI_SIZE) X(TORCHELASTIC_RUN_ID) X(TORCHELASTIC_RESTART_COUNT)      \
    X(SLURM_NODEID) X(MPI_LOCALRANKID) X(VRAMTRACE_SESSION) X(VRAMTRACE_SESSION_START) \
    X(VRAMTRACE_SESSION_HOST) X(VRAMTRACE_SESSION_COMMAND)

struct vt_process_info_buf {
    struct vt_process_info facts;
    char hostname[256];
    char exe[4096];
    char *cmdline;             /* /proc/self/cmdline, argv points into it */
    const char **argv;
    struct vt_env_var env[64];
};

/* Fills info (start times given by the caller, taken when tracing started).
 * Free with vt_process_info_free. */
void vt_process_info_collect(struct vt_process_info_buf *info, uint64_t start_realtime_ns,
                             uint64_t start_mono_ns, uint64_t stack_depth,
                             uint64_t flush_interval_ms);
void vt_process_info_free(struct vt_process_info_buf *info);

#endif
