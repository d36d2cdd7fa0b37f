/* tests/test_arena.c — the bump allocator: alignment, exhaustion that
 * leaves the arena usable, mark/rewind, high-water mark. */
#include <check.h>
#include <stdint.h>
#include "alloc/arena.h"

static _Alignas(64) unsigned char buf[4096];

START_TEST(aligns_every_request)
{
    eo_arena a;
    ck_assert_int_eq(eo_arena_init(&a, buf + 3, 1000, "t"), EO_OK);
    for (int i = 0; i < 5; i++) {
        void *p;
        ck_assert_int_eq(eo_arena_alloc(&a, 7, 0, &p), EO_OK);
        ck_assert_uint_eq((uintptr_t)p % EO_ARENA_ALIGN, 0);
    }
    void *p;
    ck_assert_int_eq(eo_arena_alloc(&a, 1, 256, &p), EO_OK);
    ck_assert_uint_eq((uintptr_t)p % 256, 0);
    ck_assert_int_eq(eo_arena_alloc(&a, 1, 48, &p), EO_ERR_ARG); /* not a power of two */
}
END_TEST

START_TEST(exhaustion_reports_and_stays_usable)
{
    eo_arena a;
    void *p;
    eo_arena_init(&a, buf, 1024, "t");
    ck_assert_int_eq(eo_arena_alloc(&a, 1000, 64, &p), EO_OK);
    size_t used = eo_arena_used(&a);
    ck_assert_int_eq(eo_arena_alloc(&a, 100, 64, &p), EO_ERR_OOM);
    ck_assert_ptr_null(p);
    ck_assert_uint_eq(a.fail_free, 24);
    ck_assert_uint_ge(a.fail_need, 100);
    ck_assert_uint_eq(eo_arena_used(&a), used);
    ck_assert_int_eq(eo_arena_alloc(&a, SIZE_MAX, 64, &p), EO_ERR_OOM); /* no wrap-around */
    ck_assert_int_eq(eo_arena_alloc(&a, 16, 8, &p), EO_OK);
}
END_TEST

START_TEST(mark_rewind_and_high_water)
{
    eo_arena a;
    void *p, *q;
    eo_arena_init(&a, buf, sizeof buf, "t");
    eo_arena_alloc(&a, 100, 64, &p);
    eo_arena_mark m = eo_arena_mark_get(&a);
    eo_arena_alloc(&a, 2000, 64, &q);
    size_t high = eo_arena_high(&a);
    eo_arena_rewind(&a, m);
    ck_assert_uint_eq(eo_arena_used(&a), m);
    ck_assert_uint_eq(eo_arena_high(&a), high);
    eo_arena_alloc(&a, 2000, 64, &p);
    ck_assert_ptr_eq(p, q); /* the same memory is handed out again */
    eo_arena_reset(&a);
    ck_assert_uint_eq(eo_arena_used(&a), 0);
    ck_assert_int_eq(eo_arena_init(NULL, buf, 1, "x"), EO_ERR_ARG);
}
END_TEST

Suite *eo_suite_arena(void)
{
    Suite *s = suite_create("arena");
    TCase *tc = tcase_create("arena");
    tcase_add_test(tc, aligns_every_request);
    tcase_add_test(tc, exhaustion_reports_and_stays_usable);
    tcase_add_test(tc, mark_rewind_and_high_water);
    suite_add_tcase(s, tc);
    return s;
}
