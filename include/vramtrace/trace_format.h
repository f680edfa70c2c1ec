/*
 * The vramtrace trace format, defined once.
 *
 * The writer (preload/) and the reader (analyzer/) both follow this header;
 * docs/internals/FORMAT.md explains it for people. Change the format only here, and
 * bump VT_FORMAT_VERSION when an old reader could misread a new file.
 *
 *   file    := preamble chunk*
 *   preamble: 16 bytes, never compressed
 *     0  char[8]  VT_FILE_MAGIC            "VRAMTRC\n"
 *     8  u16 le   format version           VT_FORMAT_VERSION
 *    10  u16 le   flags                    0
 *    12  u32 le   time unit                nanoseconds per unit of every "dt"
 *                                          field and of a chunk's first time
 *                                          (>= 1; the recorder's default is
 *                                          VT_TIME_UNIT_NS_DEFAULT)
 *   chunk   := chunk header + one zstd frame
 *     0  u32 le   VT_CHUNK_MAGIC           "VTCK"
 *     4  u32 le   compressed size          bytes of the zstd frame that follows
 *     8  u32 le   raw size R               bytes of the chunk once decompressed
 *    12  ...      zstd frame (content checksum on)
 *
 * Every chunk is an independent zstd frame and every chunk starts its delta
 * state afresh (see struct vt_delta_state), so a file cut anywhere - by a
 * crash, a kill or a full disk - is readable up to its last complete chunk.
 *
 * A decompressed chunk (version 3) is
 *     0  L bytes  records                  a sequence of records
 *     L  ...      the dt column            one uv per timed record of the
 *                                          chunk, in record order, nothing else
 *                                          (version 5: a free's duration
 *                                          after its dt, VT_REC_MEM)
 *   R-4  u32 le   L                        VT_CHUNK_FOOTER_SIZE bytes
 * The records do not hold their dt fields: each timed record's dt is the
 * next value of the column (the column's values restart in every chunk, as
 * all delta state does). Times between events are noise that no record
 * repeats; apart from the records they no longer break the records' repeats
 * for zstd (docs/internals/PERFORMANCE.md, "Trace size against heaptrack"). A reader
 * refuses a chunk whose L exceeds R - 4, whose column runs out before its
 * timed records do, or whose column has bytes left after them.
 * Versions 1 and 2 (VT_FORMAT_HAS_DT_COLUMN false): the decompressed chunk
 * is the records alone, each dt field in place in its record.
 *
 * Version 4 (VT_FORMAT_HAS_DT_RUNS): the dt column is run-length coded:
 *     uv z0, uv v1, uv z1, uv v2, uv z2, ... uv vk, uv zk
 * z0 dts of 0, then v1, then z1 dts of 0, and so on (each v is not 0; zk
 * closes the column, 0 if the last dt was not 0). Most dts of a dense run
 * are 0: a count of them costs a fraction of a bit each, where a byte a
 * dt cost at least one bit after zstd's Huffman coding (docs/internals/FORMAT.md,
 * "The dt column").
 *
 * Version 4 (VT_FORMAT_HAS_SITES): the fields of a memory record that
 * repeat from event to event (operation, kind, API, label, thread, device,
 * stack, result, aux) are an allocation site, defined once by a
 * VT_REC_SITE record; a MEM record is its site id, its time, its size and
 * its address.
 * The records of a loop then repeat byte for byte, and take a third fewer
 * of zstd's cycles (docs/internals/FORMAT.md, "Sites"). Versions 1-3: every field in
 * the MEM record (VT_REC_MEM's list for versions 1-3 in records.def).
 *
 * A record is one type byte (enum vt_record_type; the records and their
 * fields are listed in records.def, beside this header) followed by its
 * fields, each encoded as:
 *   uv  unsigned LEB128 varint (vt_put_uvarint / vt_get_uvarint)
 *   dt  uv: time units (see the preamble) since the previous timed record
 *       of this chunk; the first timed record of a chunk carries the
 *       absolute value, CLOCK_MONOTONIC divided by the unit (rounded down).
 *       Version 3: not in the record but in the chunk's dt column, above
 *   da  zigzag LEB128 varint: address minus the previous address field of
 *       this chunk (starts at 0 in each chunk)
 *   us  shifted varint (version 7): a uv of (v >> t) << 6 | t, t the
 *       count of v's trailing zero bits (vt_put_shifted)
 *   ds  shifted delta (version 7): da's difference as a us of its odd
 *       part's zigzag (vt_put_shifted with delta)
 *   dn  zigzag LEB128 varint (version 7): a STACK_NODE's ip minus the
 *       previous STACK_NODE's ip of this chunk (0 before the chunk's first)
 *   str uv length, then that many bytes (not NUL-terminated)
 *   raw fixed number of bytes as stated
 * The field lists of records.def are in order; a "dt time" names where
 * versions 1 and 2 put the field (version 3 leaves it out there: the
 * column has it). Ids (thread, string, stack node, module, api) are
 * assigned by the writer in order of first appearance and stay valid for
 * the rest of the file.
 */
#ifndef VRAMTRACE_TRACE_FORMAT_H
#define VRAMTRACE_TRACE_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VT_FILE_MAGIC "VRAMTRC\n"
#define VT_FILE_MAGIC_LEN 8
#define VT_PREAMBLE_SIZE 16
/* Version 2: the preamble's time unit (version 1 files: always 1 ns).
 * Version 3: each chunk's dt fields as a column after its records.
 * Version 4: allocation sites (VT_REC_SITE).
 * Version 5: what memory is made of: parameters, buffers, gradients and
 *   optimizer state by address (VT_REC_PART, the Python bootstrap's);
 *   a free is timed when it began and carries its duration
 *   (VT_REC_MEM, VT_FORMAT_HAS_FREE_DURATION).
 * Version 6: a context's creation carries the device's free bytes once it
 *   existed and NVML's count of the process's bytes on the device
 *   (VT_REC_MEM, vt_mem_has_device_figures); PyTorch's allocator's samples
 *   (VT_REC_PART of part VT_PART_ALLOCATOR_SAMPLE), which a version 5
 *   reader stops at ("unknown part"), are a version's: the bump makes it
 *   say the file is newer instead.
 * Version 7: a MEM record's size and address delta as shifted varints
 *   (us, ds above): their trailing zero bits are counted, not written; a
 *   STACK_NODE's parent as the distance to its own id and its ip as a
 *   difference to the chunk's previous node's (dn above). */
#define VT_FORMAT_VERSION 7
#define VT_FORMAT_VERSION_OLDEST 1
/* Whether chunks of a format version hold the dt column (see above). */
#define VT_FORMAT_HAS_DT_COLUMN(version) ((version) >= 3)
/* Whether MEM records of a format version name a VT_REC_SITE (above). */
#define VT_FORMAT_HAS_SITES(version) ((version) >= 4)
/* Whether a format version's dt column is run-length coded (above). */
#define VT_FORMAT_HAS_DT_RUNS(version) ((version) >= 4)
/* Whether a format version's frees carry their duration (VT_REC_MEM). */
#define VT_FORMAT_HAS_FREE_DURATION(version) ((version) >= 5)
/* Whether a format version's context creations carry device figures. */
#define VT_FORMAT_HAS_CONTEXT_FIGURES(version) ((version) >= 6)
/* Whether a format version's MEM records hold their size and address
 * delta as shifted varints (vt_put_shifted). */
#define VT_FORMAT_HAS_SHIFTED_FIELDS(version) ((version) >= 7)
/* Whether a format version's STACK_NODE records hold their parent as a
 * distance and their ip as a difference (version 7, above). */
#define VT_FORMAT_HAS_NODE_DELTAS(version) ((version) >= 7)
/* Whether a format version may hold allocator samples: version 6, and the
 * version 5 files written before the bump, which hold them too. */
#define VT_FORMAT_HAS_ALLOCATOR_SAMPLES(version) ((version) >= 5)
/* Recorded times are rounded down to this unit by default. Per-event
 * nanoseconds are noise that zstd cannot compress (they were 99.7% of a
 * repetitive trace's bytes, docs/internals/performance-history.md, "Trace size",
 * "Before"); a microsecond is finer than any driver allocation takes and
 * is what PyTorch's own snapshots record (time_us). Order within a file
 * never depends on time. */
#define VT_TIME_UNIT_NS_DEFAULT 1000
/* The recorder's default time slack (VRAMTRACE_TIME_SLACK_US; 0: none).
 * With slack S, within a dense run of events the written time moves once
 * every S, not with each event (docs/internals/FORMAT.md, "Time slack"): traces of
 * dense workloads shrink 5-15x, but times may be up to S early, and the
 * events of processes sharing a GPU may then merge out of order (a
 * combined peak off by what happened within S), so it is not the
 * default. Readers need not know it: a time written early is a time. */
#define VT_TIME_SLACK_US_DEFAULT 0

#define VT_CHUNK_MAGIC 0x4b435456u /* "VTCK" little-endian */
#define VT_CHUNK_HEADER_SIZE 12
/* Version 3: the last bytes of a decompressed chunk, u32 le: the length of
 * its records (where the dt column starts). */
#define VT_CHUNK_FOOTER_SIZE 4
/* Upper bounds a reader enforces before allocating anything. The writer
 * never produces chunks anywhere near these sizes. */
#define VT_CHUNK_MAX_RAW (64u << 20)
#define VT_CHUNK_MAX_COMPRESSED (64u << 20)
#define VT_STRING_MAX (1u << 20)
#define VT_BUILD_ID_MAX 64
#define VT_UUID_SIZE 16

/* The record types, from records.def (beside this header: every list of
 * them is made from it). */
enum vt_record_type {
#define VT_RECORD(type, value, name, timing, fields) type = value,
#include "records.def"
#undef VT_RECORD
};

/* Whether b is the type byte of a record (the reader refuses others). */
static inline bool vt_record_type_valid(unsigned b)
{
    switch (b) {
#define VT_RECORD(type, value, name, timing, fields) case type:
#include "records.def"
#undef VT_RECORD
        return true;
    default:
        return false;
    }
}

/* Whether records of type t hold a time (records.def's timing). */
#define VT_RECORD_TIMING_timed true
#define VT_RECORD_TIMING_untimed false
static inline bool vt_record_is_timed(unsigned t)
{
    switch (t) {
#define VT_RECORD(type, value, name, timing, fields) \
    case type:                                       \
        return VT_RECORD_TIMING_##timing;
#include "records.def"
#undef VT_RECORD
    default:
        return false;
    }
}

/* A record type's name ("mem", "range_push", ...; records.def), "?" for a
 * byte that names none. */
static inline const char *vt_record_type_name(unsigned t)
{
    switch (t) {
#define VT_RECORD(type, value, name, timing, fields) \
    case type:                                       \
        return name;
#include "records.def"
#undef VT_RECORD
    default:
        return "?";
    }
}

/* ---- a record as the writer encodes it and the reader hands it out ---- */

/* A name/value pair of the process record's environment. */
struct vt_env_var {
    const char *name;
    const char *value;
};

/* A VT_REC_PROCESS record (records.def's fields; strings NUL-terminated). */
struct vt_process_info {
    uint64_t pid, ppid;
    uint64_t start_realtime_ns, start_mono_ns;
    const char *hostname;
    const char *exe;
    uint64_t argc;
    const char *const *argv;       /* argc entries */
    uint64_t nenv;
    const struct vt_env_var *env;  /* nenv entries */
    const char *tool_version;
    uint64_t stack_depth;
    uint64_t flush_interval_ms;
};

/* A VT_REC_MEM record, its time aside (the encoder's argument, the
 * reader's vt_record), its ids those of the file. */
struct vt_mem_record {
    uint8_t op, kind;      /* enum vt_mem_op, enum vt_mem_kind */
    uint64_t api, label;   /* api ids (label 0: none) */
    uint64_t thread;
    int64_t device;        /* ordinal, -1 if unknown */
    uint64_t addr, size;
    uint64_t stack;        /* stack node id, 0: empty */
    uint64_t result;       /* CUresult */
    uint64_t aux;
    /* Written only where vt_mem_has_device_figures: a failed ALLOC's free
     * and total bytes right after it; a context retained or created
     * (version 6): the device's free bytes once it existed + 1, and NVML's
     * count of the process's bytes there + 1 (0: not had). Else 0. */
    uint64_t free_bytes, total_bytes;
    /* Format version 4's site id as read, else 0; the encoder numbers
     * sites itself and ignores it. */
    uint64_t site;
    /* A free of format version 5: the time is when it was called, time +
     * duration_ns when it returned (0: not known, or shorter than the
     * file's time unit; written as the return's time in units less the
     * free's written time). Versions 1-4: 0, and the time is when it
     * returned. */
    uint64_t duration_ns;
};

/* A VT_REC_PART record, its time aside (the encoder's argument, the
 * reader's vt_record). */
struct vt_part_record {
    uint64_t thread, census;
    uint8_t part;          /* enum vt_part */
    int64_t device;        /* ordinal, -1 if unknown */
    uint64_t addr, bytes, elements;
    uint64_t dtype, name;  /* string ids, 0: none */
};

/* What a VT_REC_PART record is. */
enum vt_part {
    VT_PART_CENSUS = 0,          /* a census begins (above) */
    VT_PART_PARAMETER = 1,       /* a module's parameter (named_parameters) */
    VT_PART_BUFFER = 2,          /* a module's buffer (named_buffers) */
    VT_PART_GRADIENT = 3,        /* a parameter's .grad */
    VT_PART_OPTIMIZER_STATE = 4, /* a tensor of optimizer.state */
    VT_PART_COUNT_,
};
/* Not a part of a census: PyTorch's caching allocator's own figures
 * (torch.cuda.memory_stats) at the closing of one of the model's phases,
 * sampled by the Python bootstrap (docs/user/PYTORCH.md, "Allocator
 * samples"). census: the allocator's alloc retries (num_alloc_retries);
 * device: the device sampled; address: its allocated bytes; bytes: its
 * reserved bytes; elements: its active bytes; dtype: the phase that closed
 * ("forward", "backward", "optimizer"); name: its OOM count (num_ooms) in
 * decimal. A reader older than this part stops at such a record with
 * "unknown part". */
#define VT_PART_ALLOCATOR_SAMPLE 16u
/* A census's bytes field: what the bootstrap had seen when it took it. */
#define VT_PART_SAW_MODEL 1u     /* a model (the outermost module forwarded) */
#define VT_PART_SAW_OPTIMIZER 2u /* an optimizer (its step hooks ran) */

/* A stack node's ip with the top bit set is not an instruction pointer but
 * a Python frame: VT_PY_FRAME_TAG | code id << 32 | line (0: unknown),
 * code id naming a VT_REC_PY_CODE record. No user-space return address has
 * the top bit set. The recorder puts a thread's Python frames where its
 * native stack enters the interpreter (docs/internals/PYTHON.md). */
#define VT_PY_FRAME_TAG (UINT64_C(1) << 63)
#define VT_PY_CODE_ID_MAX 0x7fffffffu

static inline uint64_t vt_py_frame_ip(uint64_t code_id, uint32_t line)
{
    return VT_PY_FRAME_TAG | (code_id & VT_PY_CODE_ID_MAX) << 32 | line;
}

static inline int vt_ip_is_py_frame(uint64_t ip)
{
    return (ip & VT_PY_FRAME_TAG) != 0;
}

static inline uint64_t vt_py_frame_code(uint64_t ip)
{
    return (ip >> 32) & VT_PY_CODE_ID_MAX;
}

static inline uint32_t vt_py_frame_line(uint64_t ip)
{
    return (uint32_t)ip;
}

/* What an operation did to memory. */
enum vt_op {
    VT_OP_ALLOC = 1, /* the range/handle at address became live */
    VT_OP_FREE = 2,  /* the range/handle at address stopped being live */
};

/* Which ledger an operation belongs to. The analyzer keeps one live set
 * per (process, device, kind) and reports the kinds in three categories:
 * device memory, managed memory and pinned host memory. */
enum vt_kind {
    VT_KIND_DEVICE = 1,       /* cuMemAlloc*, cuMemAllocAsync*, pools: device memory */
    VT_KIND_MANAGED = 2,      /* cuMemAllocManaged */
    VT_KIND_HOST_PINNED = 3,  /* cuMemHostAlloc, cuMemAllocHost: host RAM allocated pinned */
    VT_KIND_HOST_REGISTERED = 4, /* cuMemHostRegister: existing host RAM pinned */
    VT_KIND_VMM_PHYSICAL = 5, /* cuMemCreate/cuMemRelease: physical device memory, keyed by handle */
    VT_KIND_VA_RESERVE = 6,   /* cuMemAddressReserve/Free: address space only, no memory */
    VT_KIND_VA_MAP = 7,       /* cuMemMap/Unmap: a handle mapped at an address (aux = handle) */
    VT_KIND_ARRAY = 8,        /* cuArrayCreate/3DCreate/Destroy: device memory, keyed by handle */
    VT_KIND_GRAPH = 9,        /* graph memory nodes (allocated by graph launches) */
    VT_KIND_IPC = 10,         /* memory of another process opened by IPC: not ours */
    VT_KIND_CONTEXT = 11,     /* context create/destroy: size = estimated cost, 0 unknown
                                 (docs/internals/HOOKS.md) */
    VT_KIND_EXTERNAL = 12,    /* imported external memory */
    VT_KIND_COUNT_
};

/* Reporting categories of the kinds above. */
enum vt_category {
    VT_CAT_NONE = 0,    /* not counted in any peak (address space, mappings, IPC, contexts) */
    VT_CAT_DEVICE = 1,  /* device memory (VRAM) */
    VT_CAT_MANAGED = 2, /* managed (unified) memory */
    VT_CAT_HOST_PINNED = 3, /* page-locked host RAM */
};

static inline enum vt_category vt_kind_category(unsigned kind)
{
    switch (kind) {
    case VT_KIND_DEVICE:
    case VT_KIND_VMM_PHYSICAL:
    case VT_KIND_ARRAY:
    case VT_KIND_GRAPH:
        return VT_CAT_DEVICE;
    case VT_KIND_MANAGED:
        return VT_CAT_MANAGED;
    case VT_KIND_HOST_PINNED:
    case VT_KIND_HOST_REGISTERED:
        return VT_CAT_HOST_PINNED;
    default:
        return VT_CAT_NONE;
    }
}

/* Whether a MEM record (version 6) ends with two device figures: a failed
 * allocation's free and total bytes as the driver said right after it, or
 * a successful context retain or creation's free bytes once the context
 * existed + 1 and NVML's count of the process's bytes on the device + 1
 * (0: not had; both 0 for a retain that created nothing). Versions 1-5:
 * only a failed allocation (the reader's vt_mem_has_device_figures_v). */
static inline int vt_mem_has_device_figures(unsigned op, unsigned kind, uint64_t result)
{
    return op == VT_OP_ALLOC && (result != 0 || kind == VT_KIND_CONTEXT);
}

/* Per-chunk delta state shared by encoder and decoder. Reset at each chunk. */
struct vt_delta_state {
    uint64_t last_time; /* in time units */
    uint64_t last_addr;
    uint64_t last_ip; /* of the last STACK_NODE (version 7) */
};

/* The preamble of a file whose times are in units of time_unit_ns (0 is
 * taken as 1, more than 32 bits as the largest unit that fits). */
static inline void vt_preamble_fill(uint8_t out[VT_PREAMBLE_SIZE], uint64_t time_unit_ns)
{
    if (time_unit_ns == 0)
        time_unit_ns = 1;
    if (time_unit_ns > UINT32_MAX)
        time_unit_ns = UINT32_MAX;
    for (size_t i = 0; i < VT_PREAMBLE_SIZE; i++)
        out[i] = i < VT_FILE_MAGIC_LEN ? (uint8_t)VT_FILE_MAGIC[i] : 0;
    out[8] = (uint8_t)VT_FORMAT_VERSION;
    out[9] = (uint8_t)(VT_FORMAT_VERSION >> 8);
    /* 10..11: flags, 0 */
    for (int i = 0; i < 4; i++)
        out[12 + i] = (uint8_t)(time_unit_ns >> (8 * i));
}

/* ---- varint codec (used by both writer and reader) ---- */

#define VT_UVARINT_MAX 10 /* bytes of a 64-bit LEB128 varint */

static inline size_t vt_put_uvarint(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

/* Decodes one varint from [*p, end). Returns 0 on success, -1 if the input
 * ends first or the varint is longer than 64 bits allow. */
static inline int vt_get_uvarint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t result = 0;
    unsigned shift = 0;
    const uint8_t *q = *p;
    while (q < end) {
        uint8_t b = *q++;
        if (shift == 63 && b > 1)
            return -1;
        result |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *p = q;
            *v = result;
            return 0;
        }
        shift += 7;
        if (shift > 63)
            return -1;
    }
    return -1;
}

static inline uint64_t vt_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t vt_unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* ---- shifted varints (version 7: a MEM record's size and address) ----
 *
 * Sizes and addresses on a GPU are multiples of large powers of two (2 MiB
 * segments, 512-byte blocks, 64 MiB strides), whose low zero bits cost a
 * plain varint a byte of 0x80 each 7 bits: three or four bytes of every
 * memory record that zstd then matches, in sequences whose decoding was
 * half of its time. A shifted varint writes the bits above them and their
 * count: v = m << t with m odd is the uv of m << 6 | t. 0 is the code 0.
 * A code with m = 0 and t != 0 is no value: 1 (VT_SHIFTED_ESCAPE) says a
 * plain uv of v follows (an m of 58 bits or more, which the code cannot
 * hold in 64), 2 to 63 are corrupt. A delta is the same code of the zigzag
 * of its odd part, a negative one shifted arithmetically (its zigzag
 * would otherwise have no trailing zeros); its escape is followed by da's
 * zigzag of the whole difference. */
#define VT_SHIFTED_BITS 6
#define VT_SHIFTED_ESCAPE 1u
/* Largest shifted field: the escape's byte, then a plain uv. */
#define VT_SHIFTED_MAX (1 + VT_UVARINT_MAX)

/* The code of v as a us field (delta: of a difference as a ds field),
 * or VT_SHIFTED_ESCAPE where its m has 58 bits or more. */
static inline uint64_t vt_shifted_code(uint64_t v, bool delta)
{
    if (v == 0)
        return 0;
    unsigned t = (unsigned)__builtin_ctzll(v);
    uint64_t m = delta ? vt_zigzag((int64_t)v >> t) : v >> t;
    return m >> (64 - VT_SHIFTED_BITS) ? VT_SHIFTED_ESCAPE : m << VT_SHIFTED_BITS | t;
}

/* The value of a code that is neither the escape nor corrupt. */
static inline uint64_t vt_shifted_value(uint64_t code, bool delta)
{
    uint64_t m = code >> VT_SHIFTED_BITS;
    return (delta ? (uint64_t)vt_unzigzag(m) : m) << (code & ((1u << VT_SHIFTED_BITS) - 1));
}

/* The value the plain varint after an escape holds (delta: da's zigzag). */
static inline uint64_t vt_shifted_escaped(uint64_t plain, bool delta)
{
    return delta ? (uint64_t)vt_unzigzag(plain) : plain;
}

/* Whether a code holds no value: the escape (1) or corrupt (2 to 63). */
static inline bool vt_shifted_is_escape(uint64_t code)
{
    return code - 1 < (1u << VT_SHIFTED_BITS) - 1;
}

/* Writes v as a us field (delta: a difference of addresses as a ds
 * field); returns its bytes (at most VT_SHIFTED_MAX). */
static inline size_t vt_put_shifted(uint8_t *out, uint64_t v, bool delta)
{
    uint64_t code = vt_shifted_code(v, delta);
    size_t n = vt_put_uvarint(out, code);
    if (code != VT_SHIFTED_ESCAPE)
        return n;
    return n + vt_put_uvarint(out + n, delta ? vt_zigzag((int64_t)v) : v);
}

/* Reads a us (delta: a ds) field from [*p, end). Returns 0, or -1 if the
 * input ends first, a varint is too long or the code is corrupt. */
static inline int vt_get_shifted(const uint8_t **p, const uint8_t *end, bool delta, uint64_t *v)
{
    uint64_t code;
    if (vt_get_uvarint(p, end, &code) != 0)
        return -1;
    if (!vt_shifted_is_escape(code)) {
        *v = vt_shifted_value(code, delta);
        return 0;
    }
    if (code != VT_SHIFTED_ESCAPE || vt_get_uvarint(p, end, &code) != 0)
        return -1;
    *v = vt_shifted_escaped(code, delta);
    return 0;
}

static inline uint32_t vt_get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void vt_put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

#endif
