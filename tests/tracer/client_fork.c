/* fork, and fork + exec: every process writes its own trace, and each must
 * match what the driver did in that process. With argument "exec" the child
 * re-executes this program as "child". */
#include <cuda.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client_util.h"

static void allocate_and_free(size_t size)
{
    CUcontext ctx;
    CUdeviceptr p = 0;
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK_CU(cuCtxSetCurrent(ctx));
    CHECK_CU(cuMemAlloc(&p, size));
    CHECK_CU(cuMemFree(p));
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        allocate_and_free(5 << 20);
        return 0;
    }
    int exec_child = argc > 1 && strcmp(argv[1], "exec") == 0;
    CUdeviceptr kept = 0;
    CUcontext ctx;
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK_CU(cuCtxSetCurrent(ctx));
    CHECK_CU(cuMemAlloc(&kept, 1 << 20));
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        if (exec_child) {
            execl("/proc/self/exe", argv[0], "child", (char *)NULL);
            _exit(3);
        }
        allocate_and_free(3 << 20);
        exit(0); /* exit, not _exit: the child's trace is closed by atexit */
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_CU(cuMemFree(kept));
    return 0;
}
