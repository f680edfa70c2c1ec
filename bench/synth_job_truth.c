/* The truth of a synthetic job's GPUs; see synth_job_truth.h. */
#include "synth_job_truth.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define OTHERS 8 /* the report names this many other processes at a failure */

struct event {
    uint64_t time_ns, seq;
    int64_t delta;
    long rank;
    size_t gpu;
    int failed;
};

static struct event *events;
static size_t nevents, cap_events, ngpus;
static uint8_t (*uuids)[VT_UUID_SIZE];
static uint64_t seq;

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap * 2 : 1024;
    while (c < need)
        c *= 2;
    p = realloc(p, c * elem);
    if (!p) {
        perror("synth_trace --truth");
        exit(1);
    }
    *cap = c;
    return p;
}

void truth_event(long rank, const uint8_t uuid[VT_UUID_SIZE], uint64_t time_ns, int64_t delta,
                 int failed)
{
    size_t g = 0;
    while (g < ngpus && memcmp(uuids[g], uuid, VT_UUID_SIZE))
        g++;
    if (g == ngpus) {
        static size_t cap_gpus;
        uuids = grow(uuids, &cap_gpus, ngpus + 1, sizeof *uuids);
        memcpy(uuids[ngpus++], uuid, VT_UUID_SIZE);
    }
    events = grow(events, &cap_events, nevents + 1, sizeof *events);
    events[nevents++] = (struct event){time_ns, seq++, delta, rank, g, failed};
}

/* The merge's order: time, then rank (the traces' order), then file order. */
static int by_merge_order(const void *pa, const void *pb)
{
    const struct event *a = pa, *b = pb;
    if (a->time_ns != b->time_ns)
        return a->time_ns < b->time_ns ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static void uuid_text(const uint8_t *u, char *buf)
{
    sprintf(buf, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
            u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
            u[15]);
}

int truth_write(FILE *out)
{
    qsort(events, nevents, sizeof *events, by_merge_order);
    long nranks = 0;
    for (size_t i = 0; i < nevents; i++)
        if (events[i].rank + 1 > nranks)
            nranks = events[i].rank + 1;
    /* bytes[g * nranks + r]: rank r's bytes on GPU g now; at_peak likewise */
    int64_t *bytes = calloc(ngpus * (size_t)nranks + 1, sizeof *bytes);
    int64_t *at_peak = calloc(ngpus * (size_t)nranks + 1, sizeof *at_peak);
    int64_t *total = calloc(ngpus + 1, sizeof *total), *peak = calloc(ngpus + 1, sizeof *peak);
    uint64_t *peak_ns = calloc(ngpus + 1, sizeof *peak_ns);
    if (!bytes || !at_peak || !total || !peak || !peak_ns) {
        perror("synth_trace --truth");
        return 1;
    }
    fprintf(out, "{\"failures\": [");
    const char *sep = "";
    for (size_t i = 0; i < nevents; i++) {
        const struct event *e = &events[i];
        int64_t *row = &bytes[e->gpu * (size_t)nranks];
        if (e->failed) {
            fprintf(out, "%s\n  {\"rank\": %ld, \"time_ns\": %" PRIu64 ", \"others\": [", sep,
                    e->rank, e->time_ns);
            sep = ",";
            int taken[OTHERS];
            for (int k = 0; k < OTHERS; k++) { /* the largest not taken, the first rank on ties */
                taken[k] = -1;
                for (long r = 0; r < nranks; r++) {
                    int used = r == e->rank || row[r] <= 0;
                    for (int j = 0; j < k && !used; j++)
                        used = taken[j] == r;
                    if (!used && (taken[k] < 0 || row[r] > row[taken[k]]))
                        taken[k] = (int)r;
                }
                if (taken[k] < 0)
                    break;
                fprintf(out, "%s[%d, %" PRId64 "]", k ? ", " : "", taken[k], row[taken[k]]);
            }
            fprintf(out, "]}");
            continue;
        }
        row[e->rank] += e->delta;
        total[e->gpu] += e->delta;
        if (total[e->gpu] > peak[e->gpu]) {
            peak[e->gpu] = total[e->gpu];
            peak_ns[e->gpu] = e->time_ns;
            memcpy(&at_peak[e->gpu * (size_t)nranks], row, (size_t)nranks * sizeof *row);
        }
    }
    fprintf(out, "\n], \"gpus\": [");
    for (size_t g = 0; g < ngpus; g++) {
        char u[64];
        uuid_text(uuids[g], u);
        fprintf(out, "%s\n  {\"uuid\": \"%s\", \"peak_bytes\": %" PRId64 ", \"peak_time_ns\": %" PRIu64
                     ", \"bytes_at_peak\": {",
                g ? "," : "", u, peak[g], peak_ns[g]);
        const char *s2 = "";
        for (long r = 0; r < nranks; r++)
            if (at_peak[g * (size_t)nranks + r]) {
                fprintf(out, "%s\"%ld\": %" PRId64, s2, r, at_peak[g * (size_t)nranks + r]);
                s2 = ", ";
            }
        fprintf(out, "}}");
    }
    fprintf(out, "\n]}\n");
    free(bytes);
    free(at_peak);
    free(total);
    free(peak);
    free(peak_ns);
    return ferror(out) ? 1 : 0;
}
