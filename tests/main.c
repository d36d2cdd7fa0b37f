/* tests/main.c — one runner for the suites listed in suites.def.
 *
 *   eo-tests                    every suite
 *   eo-tests SUITE...           only these
 *   eo-tests --except SUITE...  every suite but these
 *
 * `make test` runs two runners side by side, `eo-tests $(TEST_SHARD)` and
 * `eo-tests --except $(TEST_SHARD)` (Makefile), so that the suite, most of
 * whose time is the PTX interpreter on one core, uses both cores of a
 * 2-core machine; each ends with Check's summary line. CK_RUN_SUITE and
 * CK_RUN_CASE still pick one suite or test case within what is run. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    const int except = argc > 1 && strcmp(argv[1], "--except") == 0;
    char *const *names = argv + 1 + except;
    const int n = argc - 1 - except;
    for (int i = 0; i < n; i++)
        if (!listed(names[i], (char *const *)known, (int)(sizeof known / sizeof *known))) {
            fprintf(stderr, "eo-tests: no suite '%s' (tests/suites.def lists them)\n", names[i]);
            return 2;
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
