/* tests/fuzz/common.c — see fuzz.h. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tests/fuzz/fuzz.h"

const char *eo_fuzz_current = "(libFuzzer input)";

void eo_fuzz_fail(const char *fmt, ...)
{
    eo_fuzz_quiet_end(); /* a failure inside a quiet stretch must still be seen */
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fuzz: %s: ", eo_fuzz_current);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

static char tmp_path[512];

static void remove_tmp(void)
{
    if (tmp_path[0])
        unlink(tmp_path);
}

const char *eo_fuzz_file(const uint8_t *data, size_t size)
{
    if (!tmp_path[0]) {
        /* Memory-backed /dev/shm where there is one: the file is rewritten
         * on every input, and a disk-backed folder makes that the
         * harness's slowest step by far (3x fewer runs a second). */
        const char *base = getenv("TMPDIR");
        if (access("/dev/shm", W_OK) == 0)
            base = "/dev/shm";
        snprintf(tmp_path, sizeof tmp_path, "%s/eo-fuzz-XXXXXX", base && base[0] ? base : "/tmp");
        int fd = mkstemp(tmp_path);
        if (fd < 0) {
            tmp_path[0] = 0;
            return NULL;
        }
        close(fd);
        atexit(remove_tmp);
    }
    FILE *f = fopen(tmp_path, "wb");
    if (!f)
        return NULL;
    size_t w = size ? fwrite(data, 1, size, f) : 0;
    if (fclose(f) != 0 || w != size)
        return NULL;
    return tmp_path;
}

static int saved_fd = -1;

void eo_fuzz_quiet_begin(void)
{
    const char *v = getenv("EO_FUZZ_VERBOSE");
    if (v && v[0] == '1')
        return;
    fflush(stderr);
    int null = open("/dev/null", O_WRONLY);
    if (null < 0)
        return;
    saved_fd = dup(2);
    dup2(null, 2);
    close(null);
}

void eo_fuzz_quiet_end(void)
{
    if (saved_fd < 0)
        return;
    fflush(stderr);
    dup2(saved_fd, 2);
    close(saved_fd);
    saved_fd = -1;
}

int eo_fuzz_mentions(const char *msg, const char *name)
{
    return msg && name && strstr(msg, name) != NULL;
}
