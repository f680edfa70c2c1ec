/* `vramtrace simulate` output: see vt_sim_report.h. */
#include "sim_report.h"

#include <inttypes.h>
#include <string.h>

#include "format.h"
#include "json_writer.h"
#include "snapshot.h"
#include "input_files.h"

double vt_sim_deviation_pct(uint64_t model, uint64_t truth)
{
    if (truth == 0)
        return model == 0 ? 0.0 : 100.0;
    return 100.0 * ((double)model - (double)truth) / (double)truth;
}

static const char *bytes(uint64_t v, char *buf)
{
    return vt_format_bytes(v, buf, 32);
}

static const char *capacity_text(uint64_t c, char *buf)
{
    return c ? bytes(c, buf) : "unlimited";
}

struct where {
    FILE *out;
    size_t n, max;
};

static void where_frame(void *ctx, const char *file, const char *name, int64_t line)
{
    struct where *w = ctx;
    if (strstr(file, "/torch/") || (w->max && w->n >= w->max))
        return;
    fprintf(w->out, "%s%s (%s:%" PRId64 ")", w->n++ ? " <- " : "", name, vt_path_base_name(file),
            line);
}

static void print_failure(FILE *out, const struct vt_sim_input *in, size_t run,
                          const struct vt_sim_case *c, const struct vt_sim_report_options *opt)
{
    char b1[32], b2[32], b3[32], b4[32];
    const struct vt_sim_result *r = &c->res;
    if (r->verdict == VT_SIM_START_TOO_BIG) {
        fprintf(out, "  run %zu: the recorded start state alone (%s live in segments of %s) does not fit %s\n",
                run, bytes(r->why.allocated, b1), bytes(r->why.reserved, b2), capacity_text(c->capacity, b3));
        return;
    }
    const struct vt_sim_event *e = &in->ev[r->fail_event];
    if (e->kind == VT_SIM_FAILED_REQUEST)
        fprintf(out, "  run %zu: fails at the request that failed when recorded too (%s %zu): %s\n",
                run, in->from_snapshot ? "trace entry" : "record", e->source_index,
                vt_sim_verdict_name(r->verdict));
    else
        fprintf(out, "  run %zu: fails at allocation %zu of %zu (%s %zu): %s\n", run,
                r->final.mallocs, in->nalloc, in->from_snapshot ? "trace entry" : "record",
                e->source_index, vt_sim_verdict_name(r->verdict));
    fprintf(out, "    tried to allocate %s (rounded %s; a new segment would be %s) on stream %" PRId64 "\n",
            bytes(r->why.requested, b1), bytes(r->why.rounded, b2), bytes(r->why.segment_bytes, b3),
            r->why.stream);
    fprintf(out, "    after the flush: reserved %s, allocated %s, device free %s\n",
            bytes(r->why.reserved, b1), bytes(r->why.allocated, b2), bytes(r->why.device_free, b3));
    fprintf(out, "    free in cached segments %s, largest free block %s (%s in its pool and stream)\n",
            bytes(r->why.free_cached, b1), bytes(r->why.largest_free, b2),
            bytes(r->why.largest_free_same_pool, b4));
    if (r->verdict == VT_SIM_FRAGMENTED)
        fputs("    -> fragmentation: the free bytes exist, but not as one piece\n", out);
    else
        fputs("    -> exhausted: live tensors need more than the device has\n", out);
    if (e->frames) {
        struct where w = {out, 0, opt->text_frames};
        fputs("    at: ", out);
        vt_snap_explaining_frames(e->frames, where_frame, &w);
        if (!w.n)
            fputs("(no Python frames)", out);
        fputc('\n', out);
    } else if (e->stack) {
        fprintf(out, "    at: stack %" PRIu64 " of the trace (vramtrace dump shows it)\n", e->stack);
    }
}

void vt_sim_report_text(const struct vt_sim_input *in, const struct vt_sim_case *cases, size_t n,
                        const struct vt_sim_report_options *opt, FILE *out)
{
    char b1[32], b2[32], b3[32], b4[32];
    fprintf(out, "simulate: %s (%s, device %" PRId64 "): %zu allocations, %zu frees, %zu cache releases",
            in->path, in->from_snapshot ? "PyTorch memory snapshot" : "vramtrace trace", in->device,
            in->nalloc, in->nfree, in->nrelease);
    if (in->nfailed)
        fprintf(out, ", %zu request%s that failed when recorded (each run tries %s)", in->nfailed,
                in->nfailed == 1 ? "" : "s", in->nfailed == 1 ? "it" : "them");
    fputc('\n', out);
    if (in->from_snapshot)
        fprintf(out, "  start state (reconstructed): %zu segments (%s), %zu live blocks\n",
                in->nseed_segments, bytes(in->truth.initial_reserved, b1), in->nseed_blocks);
    if (in->segment_level)
        fputs("  warning: every allocation is a whole multiple of 2 MiB: this trace looks segment-level\n"
              "  (PyTorch's caching allocator underneath); record with PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync\n"
              "  or PYTORCH_NO_CUDA_MEMORY_CACHING=1 for tensor-level events\n",
              out);
    fprintf(out, "\n%-3s %-36s %11s %-13s %12s %12s %8s %7s %12s %6s\n", "run", "allocator", "capacity",
            "result", "peak resv", "peak alloc", "cudaMalloc", "flushes", "largest free", "frag");
    for (size_t k = 0; k < n; k++) {
        const struct vt_sim_case *c = &cases[k];
        const struct vt_sim_result *r = &c->res;
        char result[32];
        if (r->verdict == VT_SIM_OK)
            snprintf(result, sizeof result, "ok");
        else
            snprintf(result, sizeof result, "FAIL:%s", vt_sim_verdict_name(r->verdict));
        fprintf(out, "%-3zu %-36.36s %11s %-13s %12s %12s %8" PRIu64 " %7" PRIu64 " %12s %5.1f%%\n", k + 1,
                c->label, capacity_text(c->capacity, b1), result, bytes(r->peak_reserved, b2),
                bytes(r->peak_allocated, b3), r->final.cuda_mallocs, r->final.flushes,
                bytes(r->largest_free_at_peak, b4), 100.0 * r->fragmentation_at_peak);
    }
    fputs("  (peak resv/alloc: reserved and allocated peaks; largest free and frag: at the reserved peak,\n"
          "   frag = 1 - largest free block / free bytes in segments)\n",
          out);
    bool any = false;
    for (size_t k = 0; k < n; k++)
        if (cases[k].res.verdict != VT_SIM_OK) {
            if (!any)
                fputs("\nfailures:\n", out);
            any = true;
            print_failure(out, in, k + 1, &cases[k], opt);
        }
    for (size_t k = 0; k < n; k++)
        if (cases[k].has_min_capacity) {
            fprintf(out, "\nsmallest capacity that runs it (run %zu, %s): %s\n", k + 1, cases[k].label,
                    cases[k].min_capacity ? bytes(cases[k].min_capacity, b1) : "(search failed)");
        }
    if (in->has_truth) {
        fputs("\ncheck against the snapshot's own segment events (runs with unlimited capacity):\n", out);
        fprintf(out, "  recorded: reserved peak %s, segment_alloc %zu, segment_free %zu, segments at end %zu\n",
                bytes(in->truth.peak_reserved, b1), in->truth.segment_allocs, in->truth.segment_frees,
                in->truth.final_segments);
        for (size_t k = 0; k < n; k++) {
            const struct vt_sim_case *c = &cases[k];
            if (c->capacity)
                continue;
            fprintf(out,
                    "  run %zu: reserved peak %s (%+.2f%%), cudaMalloc %" PRIu64
                    " (%zu of them the same size"
                    " as the recorded segment_alloc in that position), cudaFree %" PRIu64
                    ", segments at end %" PRIu64
                    "; %zu of %zu allocations placed exactly where PyTorch put them\n",
                    k + 1, bytes(c->res.peak_reserved, b1),
                    vt_sim_deviation_pct(c->res.peak_reserved, in->truth.peak_reserved),
                    c->res.final.cuda_mallocs, c->res.segment_sizes_matching,
                    c->res.final.cuda_frees, c->res.final.segments, c->res.placements_matching,
                    in->nalloc);
        }
    }
    if (n && cases[0].res.nsamples) {
        const struct vt_sim_result *r = &cases[0].res;
        uint64_t top = r->peak_reserved ? r->peak_reserved : 1;
        fputs("\nreserved (#) and allocated (=) over the replay, run 1:\n", out);
        for (size_t s = 0; s < r->nsamples; s++) {
            int res_w = (int)(40.0 * (double)r->samples[s].reserved / (double)top);
            int all_w = (int)(40.0 * (double)r->samples[s].allocated / (double)top);
            fprintf(out, "  %8zu %11s %11s |", r->samples[s].first_event,
                    bytes(r->samples[s].reserved, b1), bytes(r->samples[s].allocated, b2));
            for (int x = 0; x < res_w; x++)
                fputc(x < all_w ? '=' : '#', out);
            fputc('\n', out);
        }
    }
}

void vt_sim_report_json(const struct vt_sim_input *in, const struct vt_sim_case *cases, size_t n,
                        FILE *out)
{
    struct vt_json j;
    vt_json_init(&j, out, false);
    vt_json_begin_object(&j);
    vt_json_kv_uint(&j, "vramtrace_simulate", 1);
    vt_json_kv_string(&j, "input", in->path);
    vt_json_kv_string(&j, "kind", in->from_snapshot ? "snapshot" : "trace");
    vt_json_kv_int(&j, "device", in->device);
    vt_json_kv_uint(&j, "allocations", in->nalloc);
    vt_json_kv_uint(&j, "frees", in->nfree);
    vt_json_kv_uint(&j, "cache_releases", in->nrelease);
    vt_json_kv_uint(&j, "failed_requests", in->nfailed);
    vt_json_kv_uint(&j, "seed_segments", in->nseed_segments);
    vt_json_kv_uint(&j, "seed_blocks", in->nseed_blocks);
    vt_json_kv_bool(&j, "segment_level_warning", in->segment_level);
    vt_json_key(&j, "recorded");
    if (in->has_truth) {
        vt_json_begin_object(&j);
        vt_json_kv_uint(&j, "peak_reserved_bytes", in->truth.peak_reserved);
        vt_json_kv_uint(&j, "initial_reserved_bytes", in->truth.initial_reserved);
        vt_json_kv_uint(&j, "final_reserved_bytes", in->truth.final_reserved);
        vt_json_kv_uint(&j, "peak_allocated_bytes", in->truth.peak_allocated);
        vt_json_kv_uint(&j, "segment_allocs", in->truth.segment_allocs);
        vt_json_kv_uint(&j, "segment_frees", in->truth.segment_frees);
        vt_json_kv_uint(&j, "initial_segments", in->truth.initial_segments);
        vt_json_kv_uint(&j, "final_segments", in->truth.final_segments);
        vt_json_end_object(&j);
    } else {
        vt_json_null(&j);
    }
    vt_json_key(&j, "runs");
    vt_json_begin_array(&j);
    for (size_t k = 0; k < n; k++) {
        const struct vt_sim_case *c = &cases[k];
        const struct vt_sim_result *r = &c->res;
        char conf[512];
        vt_alloc_config_format(&c->cfg, conf, sizeof conf);
        vt_json_begin_object(&j);
        vt_json_kv_string(&j, "allocator", c->label);
        vt_json_kv_string(&j, "effective", conf);
        vt_json_key(&j, "capacity_bytes");
        if (c->capacity)
            vt_json_uint(&j, c->capacity);
        else
            vt_json_null(&j);
        vt_json_kv_string(&j, "verdict", vt_sim_verdict_name(r->verdict));
        vt_json_kv_uint(&j, "peak_reserved_bytes", r->peak_reserved);
        vt_json_kv_uint(&j, "peak_allocated_bytes", r->peak_allocated);
        vt_json_kv_uint(&j, "free_at_peak_bytes", r->free_at_peak);
        vt_json_kv_uint(&j, "largest_free_block_at_peak_bytes", r->largest_free_at_peak);
        vt_json_kv_double(&j, "fragmentation_at_peak", r->fragmentation_at_peak);
        vt_json_kv_uint(&j, "cuda_mallocs", r->final.cuda_mallocs);
        vt_json_kv_uint(&j, "cuda_frees", r->final.cuda_frees);
        vt_json_kv_uint(&j, "flushes", r->final.flushes);
        vt_json_kv_uint(&j, "gc_releases", r->final.gc_releases);
        vt_json_kv_uint(&j, "final_reserved_bytes", r->final.reserved);
        vt_json_kv_uint(&j, "final_segments", r->final.segments);
        vt_json_kv_uint(&j, "max_segments", r->max_segments);
        vt_json_kv_uint(&j, "unmatched_frees", r->unmatched_frees);
        vt_json_kv_uint(&j, "failed_requests_served", r->failed_requests_served);
        vt_json_kv_uint(&j, "seed_failures", r->seed_failures);
        vt_json_kv_uint(&j, "segment_sizes_matching", r->segment_sizes_matching);
        vt_json_kv_uint(&j, "placements_matching", r->placements_matching);
        vt_json_key(&j, "failure");
        if (r->verdict == VT_SIM_OK) {
            vt_json_null(&j);
        } else {
            vt_json_begin_object(&j);
            vt_json_kv_uint(&j, "event", r->fail_event);
            vt_json_kv_uint(
                &j, "source_index",
                r->verdict == VT_SIM_START_TOO_BIG ? 0 : in->ev[r->fail_event].source_index);
            vt_json_kv_uint(&j, "requested_bytes", r->why.requested);
            vt_json_kv_uint(&j, "rounded_bytes", r->why.rounded);
            vt_json_kv_uint(&j, "segment_bytes", r->why.segment_bytes);
            vt_json_kv_uint(&j, "reserved_bytes", r->why.reserved);
            vt_json_kv_uint(&j, "allocated_bytes", r->why.allocated);
            vt_json_kv_uint(&j, "free_cached_bytes", r->why.free_cached);
            vt_json_kv_uint(&j, "largest_free_block_bytes", r->why.largest_free);
            vt_json_kv_uint(&j, "largest_free_block_same_pool_bytes",
                            r->why.largest_free_same_pool);
            vt_json_kv_uint(&j, "device_free_bytes", r->why.device_free);
            vt_json_end_object(&j);
        }
        vt_json_key(&j, "min_capacity_bytes");
        if (c->has_min_capacity)
            vt_json_uint(&j, c->min_capacity);
        else
            vt_json_null(&j);
        vt_json_key(&j, "timeline");
        vt_json_begin_array(&j);
        for (size_t s = 0; s < r->nsamples; s++) {
            vt_json_begin_array(&j);
            vt_json_uint(&j, r->samples[s].first_event);
            vt_json_uint(&j, r->samples[s].allocated);
            vt_json_uint(&j, r->samples[s].reserved);
            vt_json_end_array(&j);
        }
        vt_json_end_array(&j);
        vt_json_end_object(&j);
    }
    vt_json_end_array(&j);
    vt_json_end_object(&j);
    vt_json_newline(&j);
}
