/* tests/main.c — one runner for every suite listed in suites.def, so
 * `make test` ends with Check's single summary line. */
#include <check.h>
#include <stdlib.h>

#define EO_SUITE(name) Suite *eo_suite_##name(void);
#include "tests/suites.def"
#undef EO_SUITE

int main(void)
{
    SRunner *sr = srunner_create(NULL);
#define EO_SUITE(name) srunner_add_suite(sr, eo_suite_##name());
#include "tests/suites.def"
#undef EO_SUITE
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
