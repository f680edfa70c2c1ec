/*
 * `vramtrace dump [--json] TRACE`: every record decoded, one per line, as
 * text or JSON lines. The raw view of a trace, for debugging the tracer and
 * for scripts; ids are shown as they are in the file, with the names they
 * resolve to next to them.
 */
#include "commands.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli_options.h"
#include "cuda_errors.h"
#include "json_writer.h"
#include "trace_reader.h"

/* One line, written either as `type key=value ...` or as a JSON object. */
struct line_out {
    FILE *out;
    bool json;
    struct vt_json j;
};

static void begin_line(struct line_out *o, const struct vt_record *rec)
{
    const char *type = vt_record_type_name(rec->type);
    if (o->json) {
        vt_json_init(&o->j, o->out, false);
        vt_json_begin_object(&o->j);
        vt_json_key(&o->j, "type");
        vt_json_string(&o->j, type);
        vt_json_key(&o->j, "chunk_offset");
        vt_json_uint(&o->j, rec->chunk_offset);
    } else {
        fputs(type, o->out);
    }
}

static void end_line(struct line_out *o)
{
    if (o->json)
        vt_json_end_object(&o->j);
    fputc('\n', o->out);
}

static void f_uint(struct line_out *o, const char *key, uint64_t v)
{
    if (o->json) {
        vt_json_key(&o->j, key);
        vt_json_uint(&o->j, v);
    } else {
        fprintf(o->out, " %s=%" PRIu64, key, v);
    }
}

static void f_int(struct line_out *o, const char *key, int64_t v)
{
    if (o->json) {
        vt_json_key(&o->j, key);
        vt_json_int(&o->j, v);
    } else {
        fprintf(o->out, " %s=%" PRId64, key, v);
    }
}

static void f_hex(struct line_out *o, const char *key, uint64_t v)
{
    if (o->json) {
        vt_json_key(&o->j, key);
        vt_json_uint(&o->j, v);
    } else {
        fprintf(o->out, " %s=0x%" PRIx64, key, v);
    }
}

static void f_str(struct line_out *o, const char *key, const char *s)
{
    if (o->json) {
        vt_json_key(&o->j, key);
        vt_json_string(&o->j, s);
    } else {
        fprintf(o->out, " %s=", key);
        if (s)
            vt_json_write_escaped(o->out, s, strlen(s));
        else
            fputs("-", o->out);
    }
}

static void f_bytes_hex(struct line_out *o, const char *key, const uint8_t *b, size_t n)
{
    char buf[2 * 64 + 1];
    if (n > 64)
        n = 64;
    for (size_t i = 0; i < n; i++)
        snprintf(buf + 2 * i, 3, "%02x", b[i]);
    buf[2 * n] = '\0';
    f_str(o, key, buf);
}

static void dump_process(struct line_out *o, const struct vt_reader *r,
                         const struct vt_process_info *p)
{
    f_uint(o, "format_version", vt_reader_version(r));
    f_uint(o, "time_unit_ns", vt_reader_time_unit_ns(r));
    f_uint(o, "pid", p->pid);
    f_uint(o, "ppid", p->ppid);
    f_uint(o, "start_realtime_ns", p->start_realtime_ns);
    f_uint(o, "start_mono_ns", p->start_mono_ns);
    f_str(o, "hostname", p->hostname);
    f_str(o, "exe", p->exe);
    if (o->json) {
        vt_json_key(&o->j, "argv");
        vt_json_begin_array(&o->j);
        for (uint64_t i = 0; i < p->argc; i++)
            vt_json_string(&o->j, p->argv[i]);
        vt_json_end_array(&o->j);
        vt_json_key(&o->j, "env");
        vt_json_begin_object(&o->j);
        for (uint64_t i = 0; i < p->nenv; i++) {
            vt_json_key(&o->j, p->env[i].name);
            vt_json_string(&o->j, p->env[i].value);
        }
        vt_json_end_object(&o->j);
    } else {
        for (uint64_t i = 0; i < p->argc; i++) {
            char key[32];
            snprintf(key, sizeof key, "argv[%" PRIu64 "]", i);
            f_str(o, key, p->argv[i]);
        }
        for (uint64_t i = 0; i < p->nenv; i++)
            f_str(o, p->env[i].name, p->env[i].value);
    }
    f_str(o, "tool_version", p->tool_version);
    f_uint(o, "stack_depth", p->stack_depth);
    f_uint(o, "flush_interval_ms", p->flush_interval_ms);
}

static void dump_mem(struct line_out *o, struct vt_reader *r, const struct vt_record *rec)
{
    f_uint(o, "time_ns", rec->time_ns);
    f_str(o, "op", vt_op_name(rec->u.mem.op));
    f_str(o, "kind", vt_kind_name(rec->u.mem.kind));
    f_int(o, "device", rec->u.mem.device);
    f_hex(o, "addr", rec->u.mem.addr);
    f_uint(o, "size", rec->u.mem.size);
    f_uint(o, "result", rec->u.mem.result);
    if (rec->u.mem.result)
        f_str(o, "error", vt_cuda_error_name(rec->u.mem.result));
    f_uint(o, "thread", rec->u.mem.thread);
    f_uint(o, "stack", rec->u.mem.stack);
    f_str(o, "api", vt_reader_api(r, rec->u.mem.api));
    f_str(o, "label", rec->u.mem.label ? vt_reader_api(r, rec->u.mem.label) : NULL);
    f_hex(o, "aux", rec->u.mem.aux);
    if (rec->u.mem.op == VT_OP_ALLOC && rec->u.mem.result != 0) {
        f_uint(o, "free_bytes", rec->u.mem.free_bytes);
        f_uint(o, "total_bytes", rec->u.mem.total_bytes);
    } else if (rec->u.mem.op == VT_OP_ALLOC && rec->u.mem.kind == VT_KIND_CONTEXT &&
               VT_FORMAT_HAS_CONTEXT_FIGURES(vt_reader_version(r))) {
        /* + 1 in the file, 0: not had */
        if (rec->u.mem.free_bytes)
            f_uint(o, "free_after_bytes", rec->u.mem.free_bytes - 1);
        if (rec->u.mem.total_bytes)
            f_uint(o, "nvml_process_bytes", rec->u.mem.total_bytes - 1);
    }
    /* format version 5: a free's time is its call, and this its length */
    if (rec->u.mem.op == VT_OP_FREE && VT_FORMAT_HAS_FREE_DURATION(vt_reader_version(r)))
        f_uint(o, "duration_ns", rec->u.mem.duration_ns);
    if (rec->u.mem.site) /* format version 4: the fields above but time, addr, size are its */
        f_uint(o, "site", rec->u.mem.site);
}

/* Format version 4: the fields its MEM records share. */
static void dump_site(struct line_out *o, struct vt_reader *r, const struct vt_record *rec)
{
    f_uint(o, "id", rec->u.site.id);
    f_str(o, "op", vt_op_name(rec->u.site.op));
    f_str(o, "kind", vt_kind_name(rec->u.site.kind));
    f_int(o, "device", rec->u.site.device);
    f_uint(o, "result", rec->u.site.result);
    f_uint(o, "thread", rec->u.site.thread);
    f_uint(o, "stack", rec->u.site.stack);
    f_str(o, "api", vt_reader_api(r, rec->u.site.api));
    f_str(o, "label", rec->u.site.label ? vt_reader_api(r, rec->u.site.label) : NULL);
    f_hex(o, "aux", rec->u.site.aux);
}

static void dump_range(struct line_out *o, struct vt_reader *r, const struct vt_record *rec)
{
    f_uint(o, "time_ns", rec->time_ns);
    f_uint(o, "thread", rec->u.range.thread);
    if (rec->type == VT_REC_RANGE_START || rec->type == VT_REC_RANGE_END)
        f_uint(o, "range_id", rec->u.range.range_id);
    if (rec->type != VT_REC_RANGE_END)
        f_str(o, "domain", vt_reader_string(r, rec->u.range.domain));
    if (rec->type != VT_REC_RANGE_END && rec->type != VT_REC_RANGE_POP)
        f_str(o, "name", vt_reader_string(r, rec->u.range.name));
}

static void dump_part(struct line_out *o, struct vt_reader *r, const struct vt_record *rec)
{
    f_uint(o, "time_ns", rec->time_ns);
    f_uint(o, "thread", rec->u.part.thread);
    f_uint(o, "census", rec->u.part.census);
    f_uint(o, "part", rec->u.part.part);
    f_int(o, "device", rec->u.part.device);
    f_hex(o, "addr", rec->u.part.addr);
    f_uint(o, "bytes", rec->u.part.bytes);
    f_uint(o, "elements", rec->u.part.elements);
    f_str(o, "dtype", vt_reader_string(r, rec->u.part.dtype));
    f_str(o, "name", vt_reader_string(r, rec->u.part.name));
}

static void dump_record(struct line_out *o, struct vt_reader *r, const struct vt_record *rec)
{
    begin_line(o, rec);
    switch (rec->type) {
    case VT_REC_PROCESS:
        dump_process(o, r, rec->u.process);
        break;
    case VT_REC_MODULE:
        f_uint(o, "id", rec->u.module->id);
        f_hex(o, "load_bias", rec->u.module->load_bias);
        f_hex(o, "start", rec->u.module->start);
        f_hex(o, "end", rec->u.module->end);
        f_str(o, "path", rec->u.module->path);
        f_bytes_hex(o, "build_id", rec->u.module->build_id, rec->u.module->build_id_len);
        break;
    case VT_REC_MODULE_UNLOAD:
        f_uint(o, "id", rec->u.module_unload.id);
        break;
    case VT_REC_THREAD:
        f_uint(o, "id", rec->u.thread->id);
        f_uint(o, "tid", rec->u.thread->os_tid);
        f_str(o, "name", rec->u.thread->name);
        break;
    case VT_REC_DEVICE:
        f_uint(o, "ordinal", rec->u.device->ordinal);
        f_bytes_hex(o, "uuid", rec->u.device->uuid, VT_UUID_SIZE);
        f_str(o, "name", rec->u.device->name);
        f_uint(o, "total_bytes", rec->u.device->total_bytes);
        break;
    case VT_REC_STACK_NODE:
        f_uint(o, "id", rec->u.stack_node.id);
        f_uint(o, "parent", rec->u.stack_node.parent);
        f_hex(o, "ip", rec->u.stack_node.ip);
        if (vt_ip_is_py_frame(rec->u.stack_node.ip)) { /* a Python frame */
            f_uint(o, "py_code", vt_py_frame_code(rec->u.stack_node.ip));
            f_uint(o, "line", vt_py_frame_line(rec->u.stack_node.ip));
        }
        break;
    case VT_REC_STRING:
        f_uint(o, "id", rec->u.string.id);
        f_str(o, "text", rec->u.string.text);
        break;
    case VT_REC_API:
        f_uint(o, "id", rec->u.api.id);
        f_str(o, "name", rec->u.api.name);
        break;
    case VT_REC_PY_CODE:
        f_uint(o, "id", rec->u.py_code->id);
        f_str(o, "qualname", rec->u.py_code->qualname);
        f_str(o, "filename", rec->u.py_code->filename);
        f_uint(o, "first_line", rec->u.py_code->first_line);
        break;
    case VT_REC_MEM:
        dump_mem(o, r, rec);
        break;
    case VT_REC_SITE:
        dump_site(o, r, rec);
        break;
    case VT_REC_RANGE_PUSH:
    case VT_REC_RANGE_POP:
    case VT_REC_RANGE_START:
    case VT_REC_RANGE_END:
    case VT_REC_MARK:
        dump_range(o, r, rec);
        break;
    case VT_REC_PART:
        dump_part(o, r, rec);
        break;
    case VT_REC_LOST:
        f_uint(o, "count", rec->u.lost.count);
        break;
    case VT_REC_TRAILER:
        f_uint(o, "time_ns", rec->time_ns);
        f_uint(o, "events", rec->u.trailer.events);
        f_uint(o, "chunks", rec->u.trailer.chunks);
        f_uint(o, "lost", rec->u.trailer.lost);
        break;
    }
    end_line(o);
}

static void dump_usage(FILE *out)
{
    fputs("usage: vramtrace dump [--json] TRACE\n"
          "Print every record of a trace, one per line (text, or JSON lines with --json).\n\n"
          "  -j, --json   one JSON object a line\n"
          "  -h, --help   this help\n\n"
          "example:\n"
          "  vramtrace dump --json run.vtrace | grep CUDA_ERROR     every failed call\n",
          out);
}

int vt_cmd_dump(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool json = false;
    int c;
    optind = 1;
    static const char shortopts[] = "jh";
    opterr = 0; /* a refused option is said in one line: vt_cli_bad_option */
    while ((c = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
        switch (c) {
        case 'j':
            json = true;
            break;
        case 'h':
            dump_usage(stdout);
            return 0;
        default:
            return vt_cli_bad_option("dump", argv, shortopts);
        }
    }
    if (optind != argc - 1) {
        fputs("vramtrace dump: expected exactly one trace file\n", stderr);
        dump_usage(stderr);
        return 2;
    }
    struct vt_reader *r;
    struct vt_read_error err;
    if (vt_reader_open(argv[optind], &r, &err) != 0) {
        fprintf(stderr, "vramtrace: %s\n", err.message);
        return 2;
    }
    struct line_out o = {.out = stdout, .json = json};
    struct vt_record rec;
    int rc;
    while ((rc = vt_reader_next(r, &rec)) > 0)
        dump_record(&o, r, &rec);
    int status = 0;
    if (rc < 0) {
        fflush(stdout);
        fprintf(stderr, "vramtrace: %s\n", vt_reader_error(r)->message);
        status = 2;
    } else if (vt_reader_truncated(r)) {
        fflush(stdout);
        fprintf(stderr, "vramtrace: %s: %s\n", vt_reader_path(r), vt_reader_truncation_note(r));
    }
    vt_reader_close(r);
    return status;
}
