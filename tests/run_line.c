/* tests/run_line.c — see run_line.h. popen is POSIX; the tests build with
 * _POSIX_C_SOURCE (Makefile's HOST_CFLAGS). */
#include <check.h>
#include <stdio.h>
#include <sys/wait.h>
#include "tests/run_line.h"

int eo_test_run_line(const char *line, char *out, size_t len)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "exec 2>&1 </dev/null; %s", line);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
