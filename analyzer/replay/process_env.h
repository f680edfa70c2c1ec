/*
 * What the launcher said a process is, read from its process record's
 * environment: shared by every stage that names a process by its rank or
 * session (the run stage's job grouping, `top`, the reports).
 */
#ifndef VRAMTRACE_REPLAY_PROCESS_ENV_H
#define VRAMTRACE_REPLAY_PROCESS_ENV_H

#include "trace_reader.h"

/* Values from a process record's environment, NULL if absent. */
const char *vt_process_env(const struct vt_process_info *p, const char *name);
/* What the launcher said this process is, -1 if it did not: its rank
 * (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID), its rank on the
 * node (LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID,
 * SLURM_LOCALID), the job's size (WORLD_SIZE, OMPI_COMM_WORLD_SIZE,
 * PMI_SIZE, SLURM_NTASKS); the first variable set wins, as the tracer's %r
 * and %l take them. */
long vt_process_rank(const struct vt_process_info *p);
long vt_process_local_rank(const struct vt_process_info *p);
long vt_process_world_size(const struct vt_process_info *p);
/* The argument that names the program a process runs: argv[0], or for a
 * Python interpreter the script or module it runs (past its own options,
 * -W and -X with their values); 0 also where Python runs none (-c, a bare
 * interpreter). */
size_t vt_process_program_arg(const struct vt_process_info *p);
/* Its session id (VRAMTRACE_SESSION), NULL if none. */
const char *vt_process_session(const struct vt_process_info *p);

#endif
