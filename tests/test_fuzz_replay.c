/* tests/test_fuzz_replay.c — every fuzz input kept in the repository,
 * replayed through the harnesses without libFuzzer.
 *
 * tests/fuzz/corpus/<target>/ holds the seed inputs `make fuzz` starts
 * from, tests/fuzz/regressions/<target>/ every input that once broke a
 * reader (each fixed; the file is the bug's test). Both go through the
 * same eo_fuzz_<target> the fuzzer calls (tests/fuzz/fuzz_<target>.c),
 * so a property that libFuzzer checks is checked here on every
 * `make test`, with or without clang. A broken property aborts with
 * "fuzz: <file>: ..." on stderr, which Check reports as a signal in the
 * target's test. Paths are relative to the repository root. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tests/fuzz/fuzz.h"

typedef struct target {
    const char *name;
    int (*fn)(const uint8_t *, size_t);
} target;

#define EO_FUZZ_ROW(name) {#name, eo_fuzz_##name},
static const target targets[] = {EO_FUZZ_TARGETS(EO_FUZZ_ROW)};
#undef EO_FUZZ_ROW

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    size_t cap = 4096, len = 0;
    unsigned char *buf = malloc(cap);
    ck_assert_ptr_nonnull(buf);
    for (;;) {
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap)
            break;
        buf = realloc(buf, cap *= 2);
        ck_assert_ptr_nonnull(buf);
    }
    ck_assert_msg(!ferror(f), "cannot read %s", path);
    fclose(f);
    *n = len;
    return buf;
}

/* Replays every regular file of dir; returns how many. */
static int replay_dir(const target *t, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t n;
        unsigned char *data = slurp(path, &n);
        eo_fuzz_current = path;
        t->fn(data, n);
        free(data);
        count++;
    }
    closedir(d);
    return count;
}

/* Seed folders a target shares with other suites (as FUZZ_SEEDS_<target>
 * in the Makefile). */
static const struct {
    const char *target, *dir;
} shared_seeds[] = {
    {"ptx", "tests/ptx_good"},
    {"ptx", "tests/ptx_broken"},
};

START_TEST(replay_corpus_and_regressions)
{
    const target *t = &targets[_i];
    char dir[256];
    snprintf(dir, sizeof dir, "tests/fuzz/corpus/%s", t->name);
    int seeds = replay_dir(t, dir);
    ck_assert_msg(seeds > 0, "%s has no seed inputs (tests run from the repository root)", dir);
    snprintf(dir, sizeof dir, "tests/fuzz/regressions/%s", t->name);
    replay_dir(t, dir);
    for (size_t i = 0; i < sizeof shared_seeds / sizeof shared_seeds[0]; i++)
        if (strcmp(shared_seeds[i].target, t->name) == 0)
            ck_assert_int_gt(replay_dir(t, shared_seeds[i].dir), 0);
}
END_TEST

Suite *eo_suite_fuzz_replay(void)
{
    Suite *s = suite_create("fuzz_replay");
    TCase *tc = tcase_create("replay");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, replay_corpus_and_regressions, 0,
                        (int)(sizeof targets / sizeof targets[0]));
    suite_add_tcase(s, tc);
    return s;
}
