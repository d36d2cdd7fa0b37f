/* tests/run_line.h — run one shell line for the suites that drive the
 * built programs (test_cli.c, test_resume.c). */
#ifndef EO_TESTS_RUN_LINE_H
#define EO_TESTS_RUN_LINE_H
#include <stddef.h>

/* Runs `line` under /bin/sh with stdin from /dev/null and stderr joined
 * to stdout; up to len - 1 bytes of that output land in out, terminated.
 * Returns the exit status, or -1 when a signal ended it (a Check failure
 * if the shell cannot be started). */
int eo_test_run_line(const char *line, char *out, size_t len);

#endif
