/*
 * The regression driver: a main() for a harness in builds without libFuzzer.
 * Feeds every file named on the command line (a directory stands for every
 * file in it) to the harness's LLVMFuzzerTestOneInput, once, in name order.
 * A crash or a failed check aborts, with the sanitizers' report in the
 * sanitized builds; so every input ever committed under tests/fuzz/corpus/
 * and tests/fuzz/crashes/ stays a test.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t fed;

static void feed_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "regress: %s: cannot open\n", path);
        exit(1);
    }
    uint8_t *data = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 65536;
            uint8_t *n = realloc(data, cap);
            if (!n)
                exit(1);
            data = n;
        }
        size_t k = fread(data + len, 1, cap - len, f);
        if (k == 0)
            break;
        len += k;
    }
    fclose(f);
    fprintf(stderr, "regress: %s (%zu bytes)\n", path, len);
    /* An exact-size copy: ASan then sees a read one past the input. */
    uint8_t *exact = malloc(len ? len : 1);
    if (!exact)
        exit(1);
    memcpy(exact, data, len);
    free(data);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    fed++;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static void feed(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "regress: %s: no such file or directory\n", path);
        exit(1);
    }
    if (!S_ISDIR(st.st_mode)) {
        feed_file(path);
        return;
    }
    struct dirent **names;
    int n = scandir(path, &names, NULL, by_name);
    if (n < 0) {
        fprintf(stderr, "regress: %s: cannot list\n", path);
        exit(1);
    }
    for (int i = 0; i < n; i++) {
        char *child;
        /* Hidden files (.gitkeep) and READMEs are not inputs. */
        if (names[i]->d_name[0] != '.' && !strstr(names[i]->d_name, ".md") &&
            asprintf(&child, "%s/%s", path, names[i]->d_name) >= 0) {
            feed(child);
            free(child);
        }
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        feed(argv[i]);
    fprintf(stderr, "regress: %zu inputs, no crash\n", fed);
    if (fed == 0) {
        fprintf(stderr, "regress: no input found: a corpus is missing\n");
        return 1;
    }
    return 0;
}
