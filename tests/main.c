/* tests/main.c — one runner for the suites listed in suites.def.
 *
 *   eo-tests                    every suite
 *   eo-tests SUITE...           only these
 *   eo-tests --except SUITE...  every suite but these
 *   eo-tests --cpu-variant      the CPU kernel variant a context picks here
 *
 * `make test` runs two runners side by side, `eo-tests $(TEST_SHARD)` and
 * `eo-tests --except $(TEST_SHARD)` (Makefile), so that the suite, most of
 * whose time is the PTX interpreter on one core, uses both cores of a
 * 2-core machine; each ends with Check's summary line. CK_RUN_SUITE and
 * CK_RUN_CASE still pick one suite or test case within what is run.
 *
 * EO_CPU=base|avx2|avx512 runs them on that CPU kernel variant: the
 * contexts the tests make (tests/gradcheck.c) and the kernels they call
 * by name (tools/cli/cpu_kernels.h) both take it. `make test` runs the
 * kernel suites once per variant; a variant this build or this CPU lacks
 * is skipped with the reason, not failed. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tools/cli/cpu.h"

#define EO_SUITE(name) Suite *eo_suite_##name(void);
#include "tests/suites.def"
#undef EO_SUITE

static const char *const known[] = {
#define EO_SUITE(name) #name,
#include "tests/suites.def"
#undef EO_SUITE
};

static int listed(const char *name, char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--cpu-variant") == 0) {
        /* The variant a context picks here (EO_CPU unset): make test runs
         * the kernel suites again under each of the others. */
        static _Alignas(64) unsigned char a[4096], b[4096];
        eo_ctx probe;
        eo_ctx_init(&probe, a, sizeof a, b, sizeof b);
        printf("%s\n", eo_cpu_variant_name(&probe));
        return EXIT_SUCCESS;
    }
    const int except = argc > 1 && strcmp(argv[1], "--except") == 0;
    char *const *names = argv + 1 + except;
    const int n = argc - 1 - except;
    for (int i = 0; i < n; i++)
        if (!listed(names[i], (char *const *)known, (int)(sizeof known / sizeof *known))) {
            fprintf(stderr, "eo-tests: no suite '%s' (tests/suites.def lists them)\n", names[i]);
            return 2;
        }
    {
        static _Alignas(64) unsigned char a[4096], b[4096];
        eo_ctx probe;
        char line[400];
        eo_ctx_init(&probe, a, sizeof a, b, sizeof b);
        if (eo_tool_cpu_apply(&probe, line, sizeof line) != EO_OK) {
            printf("eo-tests: skipped: %s\n", line);
            return EXIT_SUCCESS;
        }
        eo_tool_cpu_describe(&probe, line, sizeof line);
        printf("eo-tests: %s\n", line);
        fflush(stdout);
    }
    SRunner *sr = srunner_create(NULL);
#define EO_SUITE(name)                                                                   \
    if ((n == 0 && !except) || listed(#name, names, n) != except)                        \
        srunner_add_suite(sr, eo_suite_##name());
#include "tests/suites.def"
#undef EO_SUITE
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
