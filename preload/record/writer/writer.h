/*
 * The writer thread: turns the threads' raw events into a trace file.
 *
 * Every flush interval (or when a hook's buffer fills) it takes a cutoff
 * time, gathers the pending events of every thread, merges those up to the
 * cutoff in time order, encodes them (stack trie, interned strings, ids
 * defined before first use), compresses them as one chunk and writes it.
 * All file I/O and compression of the recorder happen here, on a thread
 * with every signal blocked.
 */
#ifndef VRAMTRACE_PRELOAD_WRITER_H
#define VRAMTRACE_PRELOAD_WRITER_H

#include <stdbool.h>
#include <stdint.h>

#include "trace_encoder.h"

/* Prepares the writer; its thread starts at the process's first event
 * (vt_writer_launch): until then the process has no thread of the
 * tracer's (a process of one thread may enter a user namespace), and the
 * events wait in the threads' buffers as they always do between rounds.
 * The file is created (trace_file.h: new, 0600, never
 * through a symlink, a numbered name if path is taken) when the first event
 * arrives, with the preamble, the process record and the module map; a
 * process without events leaves no file. facts is encoded at once (need not
 * outlive the call). verbose: say the path when the file is created.
 * Times are written in units of time_unit_ns (trace_format.h), with
 * time_slack_ns of slack (vt_encoder_set_time_slack). api_name
 * names api ids (vt_recorder_links.api_name; NULL: "api#<id>").
 * Returns 0, or ENOMEM (nothing prepared). */
int vt_writer_start(const char *path, uint64_t flush_ms, uint64_t time_unit_ns,
                    uint64_t time_slack_ns, bool verbose,
                    const struct vt_process_info *facts, const char *(*api_name)(unsigned api));
/* Whether the thread was started (or could not be). One relaxed load. */
bool vt_writer_launched(void);
/* Starts the thread, once (the caller whose first event comes first; the
 * others return 0 at once); it does not wait for the thread to run.
 * Returns 0, or the errno of pthread_create: EAGAIN when the thread cannot
 * be made (its stack under an address-space limit) - recording must stop
 * then. */
int vt_writer_launch(void);
/* Before a fork (atfork prepare, before the fork guard's): waits, bounded,
 * until a thread just started runs writer_main (writer.c says why). */
void vt_writer_before_fork(void);
/* The thread ends for a while, so that the process may be of one thread
 * (unshare(CLONE_NEWUSER), setns): it writes what it holds, as a round
 * does, the file moves into the program's table (file_keeper.h:
 * vt_keeper_hand_out), and it ends; returns once the kernel no longer
 * counts it, nor its keeper. false: there was no thread to stop. Where the
 * file cannot move, the trace ends there (trailer, one line) and
 * recording stops. Not from the writer thread. */
bool vt_writer_pause(void);
/* After vt_writer_pause: the thread starts again and takes the file back
 * into a table of its own. Returns 0, or the errno of pthread_create
 * (recording has stopped then: the trace is what was written). */
int vt_writer_resume(void);
/* The file actually created (path or a numbered alternative), NULL while
 * none is. */
const char *vt_writer_created_path(void);
/* Final flush: writes every pending event and the trailer, closes the file
 * and joins the thread. Hooks must have been stopped (vt_tb_active = 0). */
void vt_writer_stop(void);
/* Wake the writer now (a buffer filled). */
void vt_writer_wake(void);
/* The module map must be read again. */
void vt_writer_modules_changed(void);
/* From a fatal signal handler (async-signal-safe): has the writer write
 * everything pending and waits for it at most timeout_ms. */
void vt_writer_emergency_flush(int timeout_ms);
/* Has the writer do a round now and waits, at most timeout_ms, until one
 * that started after the call has written everything recorded before it
 * (before exec: the new image would lose it). No lock is taken. */
void vt_writer_flush_now(int timeout_ms);
/* Before _exit (no destructor will run): the final round, the trailer and
 * the file closed, as vt_writer_stop does, but without joining or freeing
 * anything - signal-safe on the caller's side (atomics and a futex), waited
 * for at most timeout_ms. The writer thread is then done. */
void vt_writer_finish(int timeout_ms);
/* In a forked child: forget the parent's writer (its thread does not exist
 * here; its file is the parent's). */
void vt_writer_after_fork_child(void);
/* The writer gave up (write error): tracing has stopped. */
bool vt_writer_failed(void);

#endif
