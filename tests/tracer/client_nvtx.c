/* NVTX through the injection interface (header-only NVTX 3, as PyTorch and
 * most libraries use it) and the public vramtrace phase API. Every range
 * the program opens is printed as the JSON the trace must show, in order. */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>

#define VRAMTRACE_DYNAMIC
#include "vramtrace/vramtrace.h"

#include "client_util.h"

static void expect(const char *type, const char *domain, const char *name)
{
    printf("{\"type\":\"%s\"", type);
    if (domain)
        printf(",\"domain\":\"%s\"", domain);
    if (name)
        printf(",\"name\":\"%s\"", name);
    printf("}\n");
}

int main(void)
{
    CHECK(nvtxRangePushA("train") == 0);
    expect("range_push", NULL, "train");
    CHECK(nvtxRangePushW(L"forward-\u00e9") == 1);
    expect("range_push", NULL, "forward-\xc3\xa9");

    nvtxEventAttributes_t attr = { 0 };
    attr.version = NVTX_VERSION;
    attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attr.message.ascii = "layer1";
    CHECK(nvtxRangePushEx(&attr) == 2);
    expect("range_push", NULL, "layer1");
    CHECK(nvtxRangePop() == 2);
    expect("range_pop", NULL, NULL);
    CHECK(nvtxRangePop() == 1);
    expect("range_pop", NULL, NULL);

    nvtxMarkA("checkpoint");
    expect("mark", NULL, "checkpoint");
    nvtxRangeId_t id = nvtxRangeStartA("epoch");
    expect("range_start", NULL, "epoch");
    nvtxRangeEnd(id);
    expect("range_end", NULL, NULL);

    nvtxDomainHandle_t domain = nvtxDomainCreateA("megatron");
    CHECK(domain);
    nvtxStringHandle_t registered = nvtxDomainRegisterStringA(domain, "optimizer");
    attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    attr.message.registered = registered;
    nvtxDomainRangePushEx(domain, &attr);
    expect("range_push", "megatron", "optimizer");
    attr.messageType = NVTX_MESSAGE_TYPE_UNICODE;
    attr.message.unicode = L"step";
    nvtxDomainMarkEx(domain, &attr);
    expect("mark", "megatron", "step");
    nvtxDomainRangePop(domain);
    expect("range_pop", "megatron", NULL);

    CHECK(nvtxRangePop() == 0);
    expect("range_pop", NULL, NULL);

    /* the public API, found at run time in the preloaded tracer */
    vramtrace_phase_push("eval");
    expect("range_push", NULL, "eval");
    vramtrace_mark("best");
    expect("mark", NULL, "best");
    vramtrace_phase_pop();
    expect("range_pop", NULL, NULL);
    return 0;
}
