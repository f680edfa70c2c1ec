/* How a process is named and placed from its process record
 * (replay/process_env.c): the program a command line runs, as Python itself
 * reads its command line (`python3 --help`: options before the script, -W
 * and -X taking the next argument, -m a module, -c a command, - stdin), and
 * the launcher's rank variables, the first one set winning. Both `top`'s
 * command column and `diff`'s pairing of runs use the program rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "process_env.h"

static size_t program_arg(const char *const *argv, uint64_t argc)
{
    struct vt_process_info p = {.argc = argc, .argv = argv};
    return vt_process_program_arg(&p);
}

#define ARGS(...) (const char *const[]){__VA_ARGS__}, sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *)

static void test_program_of_a_command(void **state)
{
    (void)state;
    assert_int_equal(program_arg(ARGS("/opt/bin/train", "--lr", "3")), 0);
    assert_int_equal(program_arg(ARGS("/usr/bin/python3", "train.py", "-m", "x")), 1);
    assert_int_equal(program_arg(ARGS("python3.12", "-u", "-O", "train.py")), 3);
    /* -W and -X take their value as the next argument: it is not the script */
    assert_int_equal(program_arg(ARGS("python3", "-W", "ignore", "-X", "dev", "train.py")), 5);
    assert_int_equal(program_arg(ARGS("python", "-m", "torch.distributed.run", "train.py")), 2);
    assert_int_equal(program_arg(ARGS("pypy3", "-", "arg")), 1);
    /* a command or a bare interpreter runs no file: the interpreter names it */
    assert_int_equal(program_arg(ARGS("python3", "-c", "import torch")), 0);
    assert_int_equal(program_arg(ARGS("python3", "-cimport torch")), 0);
    assert_int_equal(program_arg(ARGS("python3", "-u")), 0);
    assert_int_equal(program_arg(ARGS("python3", "-m")), 0);
    /* a program whose name only contains "python" is not an interpreter */
    assert_int_equal(program_arg(ARGS("/usr/bin/run-python-job", "x.py")), 0);
    assert_int_equal(program_arg(NULL, 0), 0);
}

static void test_rank_variables(void **state)
{
    (void)state;
    struct vt_env_var env[] = {{"SLURM_PROCID", "7"}, {"RANK", "3"}, {"LOCAL_RANK", "x"},
                               {"SLURM_LOCALID", "1"}, {"WORLD_SIZE", "8"}};
    struct vt_process_info p = {.nenv = 5, .env = env};
    assert_int_equal(vt_process_rank(&p), 3);        /* RANK before SLURM_PROCID */
    assert_int_equal(vt_process_local_rank(&p), -1); /* the first set is not a number */
    assert_int_equal(vt_process_world_size(&p), 8);
    assert_null(vt_process_session(&p));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_program_of_a_command),
        cmocka_unit_test(test_rank_variables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
