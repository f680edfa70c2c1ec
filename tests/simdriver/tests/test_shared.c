/* Several processes on one simulated GPU (VTSIM_SHARED): each sees the
 * others' usage, capacity is shared, a normal exit and a SIGKILL both give
 * the memory back, a forked child registers as its own process, and a
 * process whose CUDA_VISIBLE_DEVICES renumbers the devices shares the
 * physical one. */
#include "sim_test.h"
#include "sim_test_context.h"

#include <cuda.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>

static const char *peer_path;
static char *ledger_path;
static char shm_name[128];

struct peer {
    pid_t pid;
    int to_peer;      /* closing it lets the peer exit */
    FILE *from_peer;
};

static int start_peer(struct peer *p, unsigned long long bytes, char *line, size_t size)
{
    int in[2], out[2];
    if (pipe(in) || pipe(out))
        return -1;
    char arg[32];
    snprintf(arg, sizeof arg, "%llu", bytes);
    p->pid = fork();
    if (p->pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        execl(peer_path, peer_path, arg, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    p->to_peer = in[1];
    p->from_peer = fdopen(out[0], "r");
    return fgets(line, (int)size, p->from_peer) ? 0 : -1;
}

static int finish_peer(struct peer *p, int sig)
{
    if (sig)
        kill(p->pid, sig);
    close(p->to_peer);
    fclose(p->from_peer);
    int status = 0;
    waitpid(p->pid, &status, 0);
    return status;
}

static size_t free_now(void)
{
    size_t f = 0;
    assert_int_equal(cuMemGetInfo(&f, NULL), CUDA_SUCCESS);
    return f;
}

static void test_two_processes_share_capacity(void **state)
{
    (void)state;
    /* 4 GiB device, contexts of 256 MiB. */
    CUdeviceptr mine;
    assert_int_equal(cuMemAlloc(&mine, 1 * GiB), CUDA_SUCCESS);
    assert_int_equal(free_now(), 4 * GiB - 256 * MiB - 1 * GiB);

    struct peer peer;
    char line[128];
    assert_int_equal(start_peer(&peer, 2 * GiB, line, sizeof line), 0);
    size_t peer_free = 0;
    char uuid_hex[40] = "";
    assert_int_equal(sscanf(line, "held %zu %39s", &peer_free, uuid_hex), 2);
    size_t expected = 4 * GiB - 2 * (256 * MiB) - 1 * GiB - 2 * GiB;
    assert_int_equal(peer_free, expected);   /* the peer sees my usage */
    assert_int_equal(free_now(), expected);  /* I see the peer's */
    CUuuid u;
    assert_int_equal(cuDeviceGetUuid(&u, 0), CUDA_SUCCESS);
    char mine_hex[40];
    for (int i = 0; i < 16; i++)
        snprintf(mine_hex + 2 * i, 3, "%02x", (unsigned char)u.bytes[i]);
    assert_string_equal(mine_hex, uuid_hex);  /* one device, one UUID */

    CUdeviceptr more;
    assert_int_equal(cuMemAlloc(&more, 1 * GiB), CUDA_ERROR_OUT_OF_MEMORY);  /* shared capacity */

    int status = finish_peer(&peer, SIGKILL);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(free_now(), 4 * GiB - 256 * MiB - 1 * GiB);  /* a killed peer holds nothing */
    assert_int_equal(cuMemAlloc(&more, 1 * GiB), CUDA_SUCCESS);
    assert_int_equal(cuMemFree(more), CUDA_SUCCESS);

    /* A peer that exits normally gives its memory back too. */
    assert_int_equal(start_peer(&peer, 512 * MiB, line, sizeof line), 0);
    assert_int_equal(free_now(), 4 * GiB - 2 * (256 * MiB) - 1 * GiB - 512 * MiB);
    status = finish_peer(&peer, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(free_now(), 4 * GiB - 256 * MiB - 1 * GiB);

    /* A peer asking for more than is left gets OUT_OF_MEMORY. */
    assert_int_equal(start_peer(&peer, 3 * GiB, line, sizeof line), 0);
    assert_string_equal(line, "oom\n");
    finish_peer(&peer, 0);
    assert_int_equal(cuMemFree(mine), CUDA_SUCCESS);
}

static void test_forked_child_is_its_own_process(void **state)
{
    (void)state;
    size_t before = free_now();
    int go[2], ready[2];
    assert_int_equal(pipe(go), 0);
    assert_int_equal(pipe(ready), 0);
    pid_t child = fork();
    if (child == 0) {
        close(go[1]);
        close(ready[0]);
        /* The inherited context keeps working; the allocation is the child's. */
        CUdeviceptr p;
        char c = cuMemAlloc(&p, 256 * MiB) == CUDA_SUCCESS ? 'y' : 'n';
        if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) < 0)
            _exit(2);
        _exit(cuMemFree(p) == CUDA_SUCCESS ? 0 : 1);
    }
    close(go[0]);
    close(ready[1]);
    char c = 0;
    assert_int_equal(read(ready[0], &c, 1), 1);
    assert_int_equal(c, 'y');
    /* The child charged its own context copy and its allocation. */
    assert_int_equal(free_now(), before - 256 * MiB - 256 * MiB);
    assert_int_equal(write(go[1], "x", 1), 1);
    int status = 0;
    waitpid(child, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(free_now(), before);
    close(go[1]);
    close(ready[0]);

    struct vtsim_ledger l;
    simtest_ledger(ledger_path, &l);
    size_t forks = 0;
    for (size_t i = 0; i < l.count; i++)
        forks += vtsim_ledger_is(l.lines[i], "fork", NULL) &&
                 vtsim_ledger_num(l.lines[i], "pid", 0) == child &&
                 vtsim_ledger_num(l.lines[i], "parent", 0) == getpid();
    assert_int_equal(forks, 1);
    vtsim_ledger_free(&l);
}

static void uuid_hex(int dev, char hex[40])
{
    CUuuid u;
    assert_int_equal(cuDeviceGetUuid(&u, dev), CUDA_SUCCESS);
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", (unsigned char)u.bytes[i]);
}

/* CUDA_VISIBLE_DEVICES=1: the peer's device 0 is my device 1 - the same
 * UUID, the same capacity - and what it holds is not on my device 0. */
static void test_visible_devices(void **state)
{
    (void)state;
    size_t before = free_now();
    struct peer peer;
    char line[128];
    setenv("CUDA_VISIBLE_DEVICES", "1", 1);
    int rc = start_peer(&peer, 1 * GiB, line, sizeof line);
    unsetenv("CUDA_VISIBLE_DEVICES");
    assert_int_equal(rc, 0);
    size_t peer_free = 0;
    char peer_uuid[40] = "", mine0[40], mine1[40];
    assert_int_equal(sscanf(line, "held %zu %39s", &peer_free, peer_uuid), 2);
    assert_int_equal(peer_free, 4 * GiB - 256 * MiB - 1 * GiB); /* alone on physical device 1 */
    assert_int_equal(free_now(), before);                       /* my device 0: untouched */
    uuid_hex(0, mine0);
    uuid_hex(1, mine1);
    assert_string_equal(peer_uuid, mine1);
    assert_string_not_equal(peer_uuid, mine0);
    assert_int_equal(finish_peer(&peer, 0), 0);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    peer_path = argv[1];
    const char *name = simtest_shared_name("shared");
    snprintf(shm_name, sizeof shm_name, "/vtsim-%s", name);
    setenv("VTSIM_SHARED", name, 1);
    setenv("VTSIM_MEMORY", "4GiB", 1);
    setenv("VTSIM_DEVICES", "2", 1);
    setenv("VTSIM_CONTEXT_BYTES", "256MiB", 1);
    simtest_setup_logs(&ledger_path, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_processes_share_capacity),
        cmocka_unit_test(test_forked_child_is_its_own_process),
        cmocka_unit_test(test_visible_devices),
    };
    int failed = cmocka_run_group_tests(tests, simtest_primary_context, NULL);
    shm_unlink(shm_name);
    unlink(ledger_path);
    return failed;
}
