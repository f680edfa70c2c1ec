/*
 * The interface between the hooks (preload/hooks/) and the recorder
 * (preload/record/).
 *
 * preload/record_api/ is the recorder's face: this header (what a hook
 * tells the recorder, and the few services it offers the hooks) and
 * recorder_control.h (start and stop). The hooks get only this folder on
 * their include path, never the recorder's internals; the recorder
 * includes these headers too, and knows nothing of the hooks.
 *
 * A hook calls the real driver function, then describes what happened with
 * one of these calls. Everything here is thread-safe, may be called from any
 * thread, never does I/O or compression on the caller's thread, and never
 * fails in a way the traced program can see: if the recorder is not running
 * (no output file, disk full, tracing disabled) the calls return at once.
 *
 * The recorder takes the timestamp, the thread, and the call stack itself,
 * so a hook only says what the driver did.
 */
#ifndef VRAMTRACE_PRELOAD_RECORDER_H
#define VRAMTRACE_PRELOAD_RECORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "recorded_events.h"
#include "tracer_services.h"
#include "vramtrace/trace_format.h"

/* Symbols the traced program (or the loader) must find carry this; the rest
 * of the library is hidden (-fvisibility=hidden). */
#define VT_EXPORT __attribute__((visibility("default")))

/* True once the recorder is writing a trace. Hooks may use it to skip work
 * (querying device facts, say) when nothing would be recorded. */
bool vt_recorder_active(void);

void vt_record_mem(const struct vt_mem_event *ev);

/* A free, in two steps, so that it takes its place in the trace when it
 * was called: the driver may hand its memory out again to another thread
 * before the free returns, and that allocation, recorded when it returns,
 * must come after the free in the file (docs/internals/ARCHITECTURE.md,
 * "Timestamps"). vt_record_free_begin is called right before the real
 * call, inside the hook's recursion guard (vt_in_tracer is the hook's 1):
 * it reserves and stamps the record, and returns it, or NULL if nothing is
 * recorded (the caller then records the free with vt_record_mem after the
 * call, as before). vt_record_free_end is called once the call returned,
 * always, whatever its result and whether or not the recorder still runs:
 * it fills the record (ev->op is VT_OP_FREE) with the return's time. The
 * writer writes nothing stamped after the free's call until then. */
struct vt_free_slot;
struct vt_free_slot *vt_record_free_begin(void);
void vt_record_free_end(struct vt_free_slot *slot, const struct vt_mem_event *ev);

/* A context's creation, in two steps, so that its time is its call's
 * return and not later: the hook asks what the context cost after the
 * call (the device's free memory, NVML; context_size.c), driver helper
 * calls that must not move the record past them. vt_record_mem_begin is
 * called when the call returned, outside the hook's guard as vt_record_mem
 * is: it stamps the record, takes its stack and returns it (NULL: nothing
 * recorded; then vt_record_mem after, as for any event).
 * vt_record_mem_end fills it, always, once begun: the writer writes
 * nothing stamped after it until then. Between the two the thread records
 * nothing else. */
struct vt_free_slot *vt_record_mem_begin(void);
void vt_record_mem_end(struct vt_free_slot *slot, const struct vt_mem_event *ev);

/* A device seen for the first time. uuid is 16 raw bytes. */
void vt_record_device(int ordinal, const uint8_t uuid[VT_UUID_SIZE],
                      const char *name, uint64_t total_bytes);

/* Phase markers (NVTX and the public vramtrace API). Strings are copied;
 * domain may be NULL (the default domain). */
void vt_record_range_push(const char *domain, const char *name);
void vt_record_range_pop(const char *domain);
void vt_record_range_start(uint64_t range_id, const char *domain, const char *name);
void vt_record_range_end(uint64_t range_id);
void vt_record_mark(const char *domain, const char *name);

/* dtype and name may be NULL; they are copied. */
void vt_record_part(const struct vt_part_event *ev, const char *dtype, const char *name);

/* The trace file this process writes, for files that go beside it (the
 * Python bootstrap's PyTorch snapshots, python/). If events are waiting but
 * the file is not created yet, the writer does a round first (waited for
 * at most a second). NULL when there is none: nothing recorded, tracing
 * off or failed, a vfork child. The string lives as long as the process. */
const char *vt_record_trace_file(void);

/* The set of loaded objects may have changed (after dlopen/dlclose). The
 * recorder re-reads the module map later, off the caller's path. */
void vt_record_modules_changed(void);
/* Objects were unloaded (after dlclose): what the recorder cached about
 * their code (unwind rules) is dropped, and vt_record_modules_changed. */
void vt_record_modules_gone(void);

/* The process is about to exec (exec hooks): no destructor will run, so
 * everything recorded so far is written now (a writer round, waited for
 * a bounded time). Takes no lock; does nothing in a vfork child (whose
 * memory is the parent's). If the exec fails, recording just goes on. */
void vt_record_before_exec(void);

/* The process is about to make a call the kernel refuses to a process of
 * several threads (unshare(CLONE_NEWUSER), setns into a user, mount or
 * time namespace): the tracer's threads end for the call, after writing
 * what they hold, and the trace file is held in the program's table
 * meanwhile. true: they did; then vt_record_after_unthreaded(true) after
 * the call, whatever its result, starts them again. false: there were none
 * (before the process's first event there never are), or this is a vfork
 * child, or the call comes from inside the tracer. Not signal-safe. */
bool vt_record_before_unthreaded(void);
void vt_record_after_unthreaded(bool paused);

/* ---- services the recorder offers the hooks ---- */

/* Walks of the loaded objects under the recorder's fork guard
 * (record/fork_guard.h): dl_iterate_phdr holds the loader's lock, which a
 * fork() in another thread would leave locked in the child, so every walk
 * of the library runs under the guard; the hooks' go through these. The
 * caller holds no lock of the tracer's. A callback must not call dladdr or
 * dlopen: they take the loader's main lock, which a dlopen holds while
 * running constructors that may record (and so wait for a pending fork). */
struct dl_phdr_info;
typedef int (*vt_phdr_callback)(struct dl_phdr_info *info, size_t size, void *data);
/* dl_iterate_phdr(cb, data). */
int vt_guarded_dl_iterate_phdr(vt_phdr_callback cb, void *data);
/* The mapped extent of the object holding addr; *is_main tells whether it
 * is the main executable. Returns 0, or -1 if addr is in no object. */
int vt_guarded_extent_of(const void *addr, uint64_t *start, uint64_t *end, bool *is_main);

/* ---- thread names ---- */

/* The program renamed a thread (pthread_setname_np or prctl(PR_SET_NAME)
 * returned success): each thread re-reads its name at its next event, and
 * only then (record/thread_buffer.h, VT_NAME_CHECK_EVERY). One atomic add:
 * async-signal-safe, no errno change. */
void vt_record_thread_renamed(void);

/* ---- endings and signals ---- */

/* Before _exit or _Exit (no destructor will run): the trace is finished
 * as at exit - last events, trailer, file closed - waited for at most a
 * second. Signal-safe (atomics and a futex). Nothing in a vfork child. */
void vt_record_before_exit(void);

/* The program's sigaction of one of the fatal signals the recorder keeps a
 * handler on (preload/record/fatal_signals.c): false if sig is not one of
 * them (the caller passes the call on); else done as the C library would,
 * from the program's point of view (the tracer's handler stays in under
 * it), with *rc its result and errno as the C library leaves it. */
struct sigaction;
bool vt_record_sigaction(int sig, const struct sigaction *act, struct sigaction *old, int *rc);

#endif
