/*
 * libvramtrace.so is also an NVTX injection library: ranges and marks of
 * programs using NVTX (PyTorch's torch.cuda.nvtx, Megatron, ...) become
 * phases in the trace without any change to the program.
 *
 * NVTX finds us either through NVTX_INJECTION64_PATH=libvramtrace.so
 * (InitializeInjectionNvtx2) or, since we are preloaded, through the global
 * symbol InitializeInjectionNvtx2Preinject. Either way it hands us its
 * export table; we fill the CORE and CORE2 callback slots we handle and
 * leave the rest as they are (no-ops).
 */
#define _GNU_SOURCE
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "recorder.h"
#include "single_tracer.h"

/* What NVTX calls a domain or a registered string is ours to define. */
struct nvtxDomainRegistration_st {
    char *name;
};
struct nvtxStringRegistration_st {
    char *text;
};

static atomic_ullong next_range_id = 1;
/* Nesting depth of push/pop ranges on this thread (NVTX returns it). */
static __thread int push_depth;

/* ---- strings ---- */

/* UTF-8 copy of a wide string (wchar_t is UTF-32 here); caller frees. */
static char *narrow(const wchar_t *text)
{
    if (text == NULL)
        return NULL;
    size_t n = wcslen(text);
    char *out = malloc(n * 4 + 1);
    if (out == NULL)
        return NULL;
    char *p = out;
    for (size_t i = 0; i < n; i++) {
        uint32_t c = (uint32_t)text[i];
        if (c < 0x80) {
            *p++ = (char)c;
        } else if (c < 0x800) {
            *p++ = (char)(0xC0 | (c >> 6));
            *p++ = (char)(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            *p++ = (char)(0xE0 | (c >> 12));
            *p++ = (char)(0x80 | ((c >> 6) & 0x3F));
            *p++ = (char)(0x80 | (c & 0x3F));
        } else if (c < 0x110000) {
            *p++ = (char)(0xF0 | (c >> 18));
            *p++ = (char)(0x80 | ((c >> 12) & 0x3F));
            *p++ = (char)(0x80 | ((c >> 6) & 0x3F));
            *p++ = (char)(0x80 | (c & 0x3F));
        } else {
            *p++ = '?';
        }
    }
    *p = '\0';
    return out;
}

/* The message of an event, as text: *owned is set when it must be freed. */
static const char *message_of(const nvtxEventAttributes_t *attr, char **owned)
{
    *owned = NULL;
    if (attr == NULL || attr->size < offsetof(nvtxEventAttributes_t, message) + sizeof attr->message)
        return "";
    switch (attr->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
        return attr->message.ascii ? attr->message.ascii : "";
    case NVTX_MESSAGE_TYPE_UNICODE:
        *owned = narrow(attr->message.unicode);
        return *owned ? *owned : "";
    case NVTX_MESSAGE_TYPE_REGISTERED:
        return attr->message.registered && attr->message.registered->text
                   ? attr->message.registered->text
                   : "";
    default:
        return "";
    }
}

static const char *domain_name(nvtxDomainHandle_t domain)
{
    return domain ? domain->name : NULL;
}

/* ---- marks ---- */

static void domain_mark_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *attr)
{
    char *owned;
    vt_record_mark(domain_name(domain), message_of(attr, &owned));
    free(owned);
}

static void mark_ex(const nvtxEventAttributes_t *attr)
{
    domain_mark_ex(NULL, attr);
}

static void mark_a(const char *message)
{
    vt_record_mark(NULL, message ? message : "");
}

static void mark_w(const wchar_t *message)
{
    char *text = narrow(message);
    vt_record_mark(NULL, text ? text : "");
    free(text);
}

/* ---- start/end ranges (may end on another thread) ---- */

static nvtxRangeId_t domain_range_start_ex(nvtxDomainHandle_t domain,
                                           const nvtxEventAttributes_t *attr)
{
    nvtxRangeId_t id = atomic_fetch_add(&next_range_id, 1);
    char *owned;
    vt_record_range_start(id, domain_name(domain), message_of(attr, &owned));
    free(owned);
    return id;
}

static nvtxRangeId_t range_start_ex(const nvtxEventAttributes_t *attr)
{
    return domain_range_start_ex(NULL, attr);
}

static nvtxRangeId_t range_start_a(const char *message)
{
    nvtxRangeId_t id = atomic_fetch_add(&next_range_id, 1);
    vt_record_range_start(id, NULL, message ? message : "");
    return id;
}

static nvtxRangeId_t range_start_w(const wchar_t *message)
{
    char *text = narrow(message);
    nvtxRangeId_t id = range_start_a(text);
    free(text);
    return id;
}

static void range_end(nvtxRangeId_t id)
{
    vt_record_range_end(id);
}

static void domain_range_end(nvtxDomainHandle_t domain, nvtxRangeId_t id)
{
    (void)domain;
    vt_record_range_end(id);
}

/* ---- push/pop ranges (nested on one thread) ---- */

static int push_named(nvtxDomainHandle_t domain, const char *name)
{
    vt_record_range_push(domain_name(domain), name ? name : "");
    return push_depth++;
}

static int domain_range_push_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *attr)
{
    char *owned;
    int level = push_named(domain, message_of(attr, &owned));
    free(owned);
    return level;
}

static int range_push_ex(const nvtxEventAttributes_t *attr)
{
    return domain_range_push_ex(NULL, attr);
}

static int range_push_a(const char *message)
{
    return push_named(NULL, message);
}

static int range_push_w(const wchar_t *message)
{
    char *text = narrow(message);
    int level = push_named(NULL, text);
    free(text);
    return level;
}

static int domain_range_pop(nvtxDomainHandle_t domain)
{
    if (push_depth <= 0)
        return -1; /* NVTX: negative when there was nothing to pop */
    vt_record_range_pop(domain_name(domain));
    return --push_depth;
}

static int range_pop(void)
{
    return domain_range_pop(NULL);
}

/* ---- domains and registered strings (never freed: handles may outlive
 * nvtxDomainDestroy in careless programs, and there are few of them) ---- */

static nvtxDomainHandle_t domain_create_a(const char *name)
{
    nvtxDomainHandle_t domain = calloc(1, sizeof *domain);
    if (domain)
        domain->name = strdup(name ? name : "");
    return domain;
}

static nvtxDomainHandle_t domain_create_w(const wchar_t *name)
{
    nvtxDomainHandle_t domain = calloc(1, sizeof *domain);
    if (domain)
        domain->name = narrow(name);
    return domain;
}

static void domain_destroy(nvtxDomainHandle_t domain)
{
    (void)domain;
}

static nvtxStringHandle_t register_string_a(nvtxDomainHandle_t domain, const char *text)
{
    (void)domain;
    nvtxStringHandle_t handle = calloc(1, sizeof *handle);
    if (handle)
        handle->text = strdup(text ? text : "");
    return handle;
}

static nvtxStringHandle_t register_string_w(nvtxDomainHandle_t domain, const wchar_t *text)
{
    (void)domain;
    nvtxStringHandle_t handle = calloc(1, sizeof *handle);
    if (handle)
        handle->text = narrow(text);
    return handle;
}

/* ---- attaching ---- */

struct slot {
    unsigned id;
    NvtxFunctionPointer fn;
};

#define VT_SLOT(id, fn) { id, (NvtxFunctionPointer)(void (*)(void))(fn) }

static const struct slot core_slots[] = {
    VT_SLOT(NVTX_CBID_CORE_MarkEx, mark_ex),
    VT_SLOT(NVTX_CBID_CORE_MarkA, mark_a),
    VT_SLOT(NVTX_CBID_CORE_MarkW, mark_w),
    VT_SLOT(NVTX_CBID_CORE_RangeStartEx, range_start_ex),
    VT_SLOT(NVTX_CBID_CORE_RangeStartA, range_start_a),
    VT_SLOT(NVTX_CBID_CORE_RangeStartW, range_start_w),
    VT_SLOT(NVTX_CBID_CORE_RangeEnd, range_end),
    VT_SLOT(NVTX_CBID_CORE_RangePushEx, range_push_ex),
    VT_SLOT(NVTX_CBID_CORE_RangePushA, range_push_a),
    VT_SLOT(NVTX_CBID_CORE_RangePushW, range_push_w),
    VT_SLOT(NVTX_CBID_CORE_RangePop, range_pop),
};

static const struct slot core2_slots[] = {
    VT_SLOT(NVTX_CBID_CORE2_DomainMarkEx, domain_mark_ex),
    VT_SLOT(NVTX_CBID_CORE2_DomainRangeStartEx, domain_range_start_ex),
    VT_SLOT(NVTX_CBID_CORE2_DomainRangeEnd, domain_range_end),
    VT_SLOT(NVTX_CBID_CORE2_DomainRangePushEx, domain_range_push_ex),
    VT_SLOT(NVTX_CBID_CORE2_DomainRangePop, domain_range_pop),
    VT_SLOT(NVTX_CBID_CORE2_DomainRegisterStringA, register_string_a),
    VT_SLOT(NVTX_CBID_CORE2_DomainRegisterStringW, register_string_w),
    VT_SLOT(NVTX_CBID_CORE2_DomainCreateA, domain_create_a),
    VT_SLOT(NVTX_CBID_CORE2_DomainCreateW, domain_create_w),
    VT_SLOT(NVTX_CBID_CORE2_DomainDestroy, domain_destroy),
};

static int fill_module(const NvtxExportTableCallbacks *callbacks, NvtxCallbackModule module,
                       const struct slot *slots, size_t count)
{
    NvtxFunctionTable table = NULL;
    unsigned int size = 0;
    if (!callbacks->GetModuleFunctionTable(module, &table, &size) || table == NULL)
        return 0;
    for (size_t i = 0; i < count; i++)
        if (slots[i].id < size && table[slots[i].id] != NULL)
            *table[slots[i].id] = slots[i].fn;
    return 1;
}

static int initialize(NvtxGetExportTableFunc_t get_export_table)
{
    if (get_export_table == NULL)
        return 0;
    const NvtxExportTableCallbacks *callbacks = get_export_table(NVTX_ETID_CALLBACKS);
    if (callbacks == NULL || callbacks->struct_size < sizeof *callbacks)
        return 0;
    const NvtxExportTableVersionInfo *version = get_export_table(NVTX_ETID_VERSIONINFO);
    if (version && version->struct_size >= sizeof *version && version->SetInjectionNvtxVersion)
        version->SetInjectionNvtxVersion(NVTX_VERSION);
    if (!fill_module(callbacks, NVTX_CB_MODULE_CORE, core_slots,
                     sizeof core_slots / sizeof core_slots[0]))
        return 0;
    fill_module(callbacks, NVTX_CB_MODULE_CORE2, core2_slots,
                sizeof core2_slots / sizeof core2_slots[0]);
    return 1;
}

int vt_nvtx_initialize(const void *(*get_export_table)(uint32_t id))
{
    return initialize(get_export_table);
}

VT_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table);
VT_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table)
{
    /* NVTX_INJECTION64_PATH may name a copy that stepped aside: the ranges
     * go to the copy that traces (single_tracer.c). */
    const struct vt_claim *owner = vt_owner_claim();
    if (owner)
        return owner->nvtx_initialize ? owner->nvtx_initialize(get_export_table) : 0;
    return initialize(get_export_table);
}

VT_EXPORT int InitializeInjectionNvtx2Preinject(NvtxGetExportTableFunc_t get_export_table);
VT_EXPORT int InitializeInjectionNvtx2Preinject(NvtxGetExportTableFunc_t get_export_table)
{
    return initialize(get_export_table);
}
