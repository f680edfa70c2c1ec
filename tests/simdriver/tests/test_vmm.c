/* The VMM family: reservations cost nothing, physical memory is held from
 * cuMemCreate until the handle is released AND unmapped everywhere, and the
 * ledger's vmm_phys_free marks that moment. */
#include "sim_test.h"
#include "sim_test_context.h"

#include <cuda.h>
#include <stdlib.h>

static char *ledger_path;

static size_t free_now(void)
{
    size_t f = 0;
    assert_int_equal(cuMemGetInfo(&f, NULL), CUDA_SUCCESS);
    return f;
}

static CUmemAllocationProp device_prop(int dev)
{
    CUmemAllocationProp prop = { 0 };
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    return prop;
}

static const char *last_line(const struct vtsim_ledger *l, const char *op)
{
    for (size_t i = l->count; i-- > 0;)
        if (vtsim_ledger_is(l->lines[i], op, NULL))
            return l->lines[i];
    return "";
}

static size_t phys_frees(void)
{
    struct vtsim_ledger l;
    simtest_ledger(ledger_path, &l);
    size_t n = vtsim_ledger_count(&l, "vmm_phys_free", NULL);
    vtsim_ledger_free(&l);
    return n;
}

static void test_granularity_and_reservation(void **state)
{
    (void)state;
    CUmemAllocationProp prop = device_prop(0);
    size_t g = 0;
    assert_int_equal(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_SUCCESS);
    assert_int_equal(g, 2 * MiB);
    size_t f0 = free_now();
    CUdeviceptr va = 0;
    assert_int_equal(cuMemAddressReserve(&va, 64 * GiB, 0, 0, 0), CUDA_SUCCESS);  /* beyond capacity: fine */
    assert_int_equal(va % (2 * MiB), 0);
    assert_int_equal(free_now(), f0);
    CUdeviceptr bad;
    assert_int_equal(cuMemAddressReserve(&bad, 3 * MiB, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemAddressFree(va, 64 * GiB), CUDA_SUCCESS);
    CUmemGenericAllocationHandle h;
    assert_int_equal(cuMemCreate(&h, 3 * MiB, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemCreate(&h, 8 * GiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(free_now(), f0);
}

static void test_release_while_mapped_keeps_memory_until_unmap(void **state)
{
    (void)state;
    CUmemAllocationProp prop = device_prop(0);
    size_t f0 = free_now();
    CUdeviceptr va = 0;
    CUmemGenericAllocationHandle h = 0;
    assert_int_equal(cuMemAddressReserve(&va, 8 * MiB, 0, 0, 0), CUDA_SUCCESS);
    assert_int_equal(cuMemCreate(&h, 4 * MiB, &prop, 0), CUDA_SUCCESS);
    assert_int_equal(free_now(), f0 - 4 * MiB);
    assert_int_equal(cuMemMap(va, 4 * MiB, 0, h, 0), CUDA_SUCCESS);
    assert_int_equal(cuMemMap(va + 2 * MiB, 2 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE);  /* overlaps */
    assert_int_equal(cuMemMap(va + 4 * MiB, 2 * MiB, 2 * MiB, h, 0), CUDA_SUCCESS);  /* second view */
    CUmemAccessDesc access = { { CU_MEM_LOCATION_TYPE_DEVICE, 0 }, CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    assert_int_equal(cuMemSetAccess(va, 6 * MiB, &access, 1), CUDA_SUCCESS);
    int ordinal = -1;
    assert_int_equal(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, va + 4096), CUDA_SUCCESS);
    assert_int_equal(ordinal, 0);

    size_t frees_before = phys_frees();
    assert_int_equal(cuMemRelease(h), CUDA_SUCCESS);
    assert_int_equal(free_now(), f0 - 4 * MiB);      /* still mapped: still held */
    assert_int_equal(phys_frees(), frees_before);
    CUmemGenericAllocationHandle again = 0;
    assert_int_equal(cuMemRetainAllocationHandle(&again, (void *)(uintptr_t)(va + 4 * MiB)), CUDA_SUCCESS);
    assert_int_equal(again, h);
    assert_int_equal(cuMemUnmap(va, 8 * MiB), CUDA_ERROR_INVALID_VALUE);  /* not whole mappings */
    assert_int_equal(cuMemUnmap(va, 4 * MiB), CUDA_SUCCESS);
    assert_int_equal(cuMemUnmap(va + 4 * MiB, 2 * MiB), CUDA_SUCCESS);
    assert_int_equal(free_now(), f0 - 4 * MiB);      /* the retained reference holds it */
    assert_int_equal(phys_frees(), frees_before);
    assert_int_equal(cuMemRelease(again), CUDA_SUCCESS);
    assert_int_equal(free_now(), f0);
    assert_int_equal(phys_frees(), frees_before + 1);
    assert_int_equal(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemAddressFree(va, 8 * MiB), CUDA_SUCCESS);

    struct vtsim_ledger l;
    simtest_ledger(ledger_path, &l);
    /* The release point: the last cuMemRelease, with the whole size. */
    const char *last = last_line(&l, "vmm_phys_free");
    assert_true(vtsim_ledger_is(last, "vmm_phys_free", "cuMemRelease"));
    assert_int_equal(vtsim_ledger_num(last, "delta", 0), -(long long)(4 * MiB));
    assert_int_equal(vtsim_ledger_num(last, "handle", 0), h);
    assert_int_equal(vtsim_ledger_sum_delta(&l, 0), 256 * MiB);  /* only the context */
    vtsim_ledger_free(&l);
}

static void test_unmap_is_the_release_point_after_release(void **state)
{
    (void)state;
    CUmemAllocationProp prop = device_prop(0);
    size_t f0 = free_now();
    CUdeviceptr va;
    CUmemGenericAllocationHandle h;
    assert_int_equal(cuMemAddressReserve(&va, 2 * MiB, 0, 0, 0), CUDA_SUCCESS);
    assert_int_equal(cuMemCreate(&h, 2 * MiB, &prop, 0), CUDA_SUCCESS);
    assert_int_equal(cuMemMap(va, 2 * MiB, 0, h, 0), CUDA_SUCCESS);
    assert_int_equal(cuMemRelease(h), CUDA_SUCCESS);
    assert_int_equal(free_now(), f0 - 2 * MiB);
    assert_int_equal(cuMemUnmap(va, 2 * MiB), CUDA_SUCCESS);
    assert_int_equal(free_now(), f0);
    struct vtsim_ledger l;
    simtest_ledger(ledger_path, &l);
    assert_true(vtsim_ledger_is(last_line(&l, "vmm_phys_free"), "vmm_phys_free", "cuMemUnmap"));
    assert_int_equal(vtsim_ledger_num(last_line(&l, "vmm_phys_free"), "handle", 0), h);
    vtsim_ledger_free(&l);
    assert_int_equal(cuMemAddressFree(va, 2 * MiB), CUDA_SUCCESS);
}

int main(void)
{
    setenv("VTSIM_MEMORY", "4GiB", 1);
    setenv("VTSIM_CONTEXT_BYTES", "256MiB", 1);
    simtest_setup_logs(&ledger_path, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_granularity_and_reservation),
        cmocka_unit_test(test_release_while_mapped_keeps_memory_until_unmap),
        cmocka_unit_test(test_unmap_is_the_release_point_after_release),
    };
    int failed = cmocka_run_group_tests(tests, simtest_primary_context, NULL);
    unlink(ledger_path);
    return failed;
}
