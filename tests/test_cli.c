/* tests/test_cli.c — the command line every program shares.
 *
 * Unit tests pin the strict number parsers of tools/cli/args.c (what they
 * accept, and that "4abc", " -1", "", "+5" and overflows are refused);
 * end-to-end tests run each built program for --help, --version and a bad
 * option, and eo-train / eo-sample for the refusals users hit first. The
 * programs are looked up in the build folder this suite was compiled for
 * (EO_BUILD_DIR); a missing one fails, since make test builds them all. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "core/everyo.h"
#include "tools/cli/args.h"

#ifndef EO_BUILD_DIR
#define EO_BUILD_DIR "build"
#endif

/* The parsers report refusals on stderr; keep the test log readable. */
static void quiet_stderr(void)
{
    int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) {
        dup2(fd, 2);
        close(fd);
    }
}

START_TEST(int_parser_is_strict)
{
    quiet_stderr();
    int v = -7;
    ck_assert(eo_arg_int("--n", "0", &v) && v == 0);
    ck_assert(eo_arg_int("--n", "2147483647", &v) && v == 2147483647);
    ck_assert(eo_arg_int("--n", "007", &v) && v == 7);
    static const char *const bad[] = {"4abc", " -1", "-1", "", " 5", "+5", "2147483648",
                                      "99999999999999999999", "1.5", "5 ", "0x10", "-"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        v = 123;
        ck_assert_msg(!eo_arg_int("--n", bad[i], &v), "accepted '%s'", bad[i]);
        ck_assert_int_eq(v, 123); /* untouched on refusal */
    }
}
END_TEST

START_TEST(u64_parser_is_strict)
{
    quiet_stderr();
    unsigned long long v = 0;
    ck_assert(eo_arg_u64("--seed", "18446744073709551615", &v) && v == 18446744073709551615ull);
    static const char *const bad[] = {"18446744073709551616", " -1", "-1", "", "4abc", "+1", " 1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(!eo_arg_u64("--seed", bad[i], &v), "accepted '%s'", bad[i]);
}
END_TEST

START_TEST(float_parser_is_strict)
{
    quiet_stderr();
    float v = 0;
    ck_assert(eo_arg_float("--lr", "1e-3", &v) && v == 1e-3f);
    ck_assert(eo_arg_float("--lr", "-0.5", &v) && v == -0.5f);
    ck_assert(eo_arg_float("--lr", ".25", &v) && v == 0.25f);
    static const char *const bad[] = {"1e-3x", " 1", "", "inf", "nan", "-inf", "1e50", "1e-50", "x"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(!eo_arg_float("--lr", bad[i], &v), "accepted '%s'", bad[i]);
}
END_TEST

START_TEST(range_and_choice_parsers)
{
    quiet_stderr();
    int64_t v = 0;
    int k = -1;
    ck_assert(eo_arg_i64_range("--x", "-5", -10, 10, &v) && v == -5);
    ck_assert(eo_arg_i64_range("--x", "10", -10, 10, &v) && v == 10);
    ck_assert(!eo_arg_i64_range("--x", "11", -10, 10, &v));
    ck_assert(!eo_arg_i64_range("--x", "-5", 0, 10, &v)); /* no sign when negatives are out */
    ck_assert(!eo_arg_i64_range("--x", "- 5", -10, 10, &v));
    ck_assert(!eo_arg_int_range("--batch", "0", 1, 8, &k));
    ck_assert(eo_arg_int_range("--batch", "8", 1, 8, &k) && k == 8);
    static const char *const names[] = {"sgd", "adamw"};
    ck_assert(eo_arg_choice("--optimizer", "adamw", names, 2, &k) && k == 1);
    ck_assert(!eo_arg_choice("--optimizer", "adam", names, 2, &k));
    ck_assert(!eo_arg_choice("--optimizer", "", names, 2, &k));
}
END_TEST

/* Runs "EO_BUILD_DIR/PROGRAM ARGS" with stdout and stderr captured into
 * out; returns the exit status (or -1). A cross build's programs run
 * under an emulator: EO_TEST_RUNNER (e.g. "qemu-s390x", set by
 * tools/build/cross.sh) goes in front of the program. */
static int run(const char *program, const char *args, char *out, size_t len)
{
    char cmd[1024];
    const char *runner = getenv("EO_TEST_RUNNER");
    snprintf(cmd, sizeof cmd, "%s%s%s/%s %s 2>&1 </dev/null", runner ? runner : "", runner ? " " : "",
             EO_BUILD_DIR, program, args);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *const programs[] = {"eo-train", "eo-sample", "eo-bench", "eo-ptxsim",
                                       "eo-safetensors", "eo-transformer-fixture", "eo-tokenize"};

START_TEST(every_program_has_help_version_and_names_a_bad_option)
{
    static char out[16384];
    char want[64];
    snprintf(want, sizeof want, "(EveryO %s)", eo_version());
    for (size_t i = 0; i < sizeof programs / sizeof *programs; i++) {
        const char *p = programs[i];
        ck_assert_msg(run(p, "--help", out, sizeof out) == 0, "%s --help: %s", p, out);
        ck_assert_msg(strstr(out, "usage:") && strstr(out, "--version") && strstr(out, "-h, --help"),
                      "%s --help lacks usage or options: %s", p, out);
        ck_assert_int_eq(run(p, "-h", out, sizeof out), 0);
        ck_assert_msg(run(p, "--version", out, sizeof out) == 0 && strstr(out, want),
                      "%s --version: %s", p, out);
        ck_assert_msg(run(p, "--no-such-option", out, sizeof out) == 2, "%s: %s", p, out);
        ck_assert_msg(strstr(out, "--no-such-option") && strstr(out, "--help'"),
                      "%s: the message should name the option and point to --help: %s", p, out);
    }
}
END_TEST

/* Each refusal: exit status 2 and one line that names the option and value. */
static void refused(const char *program, const char *args, const char *needle)
{
    static char out[8192];
    int rc = run(program, args, out, sizeof out);
    ck_assert_msg(rc == 2, "%s %s: exit %d: %s", program, args, rc, out);
    ck_assert_msg(strstr(out, needle), "%s %s: expected '%s' in: %s", program, args, needle, out);
}

START_TEST(train_and_sample_refuse_bad_values)
{
    refused("eo-train", "--batch 4abc", "--batch: '4abc'");
    refused("eo-train", "--batch=' -1'", "--batch: ' -1'");
    refused("eo-train", "--epochs ''", "--epochs: ''");
    refused("eo-train", "--batch", "requires an argument");
    refused("eo-train", "--steps 0", "--eval only evaluates");
    refused("eo-train", "--epochs 0", "--eval only evaluates");
    refused("eo-train", "--eval", "--eval needs --load");
    refused("eo-train", "--optimizer adam", "'adam' is not one of sgd, adamw");
    refused("eo-train", "--precision fp8", "'fp8' is not one of f32, bf16, f16");
    refused("eo-train", "--model gpt --precision half", "'half' is not one of f32, bf16, f16");
    refused("eo-train", "--model rnn", "'rnn' is not one of");
    refused("eo-train", "--lr 1e-3x", "--lr: '1e-3x'");
    refused("eo-train", "--seed 99999999999999999999999", "--seed");
    refused("eo-train", "stray", "unexpected argument 'stray'");
    refused("eo-train", "--model gpt --d-model 99999999999", "--d-model: '99999999999'");
    refused("eo-train", "--model=gpt --heads 3", "not divisible by --heads 3");
    refused("eo-train", "--model gpt --d-model 8192 --layers 64", "persistent arena");
    refused("eo-train", "--model gpt --context 4096 --batch 4096", "step arena");
    refused("eo-train", "--step-mb 0", "--step-mb: '0' is not a whole number from 1");
    refused("eo-train", "--model gpt --persist-mb 1x", "--persist-mb: '1x'");
    /* An arena too small for the model: which one, needed vs given, the option. */
    static char out[8192];
    ck_assert_int_eq(run("eo-train", "--step-mb 1 --subset 256 --test-subset 100 --epochs 1 -q",
                         out, sizeof out), 1);
    ck_assert_msg(strstr(out, "the step arena needs at least") &&
                      strstr(out, "--step-mb gives 1 MiB (1048576 bytes): raise --step-mb to 2"),
                  "%s", out);
    /* A cosine warm-up longer than the run: refused, naming both. */
    ck_assert_int_eq(run("eo-train", "--warmup 50 --steps 5 --subset 256 --test-subset 100 -q", out,
                         sizeof out), 1);
    ck_assert_msg(strstr(out, "warmup 50 and total 5") && strstr(out, "--warmup 50"), "%s", out);
    refused("eo-sample", "--top-k=-1 --load x", "--top-k: '-1'");
    refused("eo-sample", "--length 4abc --load x", "--length: '4abc'");
    refused("eo-sample", "--prompt hi", "--load FILE is required");
    refused("eo-bench", "--threads 1,", "--threads: '1,'");
    refused("eo-ptxsim", "--grid ' 3' a.ptx k", "--grid: ' 3'");
    refused("eo-ptxsim", "--print -1 a.ptx k", "--print: '-1'");
    refused("eo-safetensors", "lx FILE", "'lx' is not one of");
    refused("eo-tokenize", "encode", "give --vocab and --merges, or --tiktoken");
    refused("eo-tokenize", "--tiktoken x --vocab y encode", "give --vocab and --merges, or --tiktoken");
    refused("eo-tokenize", "--tiktoken x frob", "'frob' is not one of");
    refused("eo-tokenize", "--tiktoken x", "missing the command");
    /* And one that works: the test vocabulary counting its own merges file. */
    const char *v = "--vocab tests/fixtures/bpe/vocab.json --merges tests/fixtures/bpe/merges.txt";
    char args[512];
    snprintf(args, sizeof args, "%s count tests/fixtures/bpe/merges.txt", v);
    ck_assert_msg(run("eo-tokenize", args, out, sizeof out) == 0 && strstr(out, " tokens, 7714 bytes"),
                  "%s", out);
    snprintf(args, sizeof args, "%s decode tests/fixtures/bpe/vocab.json", v);
    ck_assert_msg(run("eo-tokenize", args, out, sizeof out) == 1 && strstr(out, "expected a decimal id"),
                  "%s", out);
}
END_TEST

Suite *eo_suite_cli(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, int_parser_is_strict);
    tcase_add_test(tc, u64_parser_is_strict);
    tcase_add_test(tc, float_parser_is_strict);
    tcase_add_test(tc, range_and_choice_parsers);
    tcase_add_test(tc, every_program_has_help_version_and_names_a_bad_option);
    tcase_add_test(tc, train_and_sample_refuse_bad_values);
    suite_add_tcase(s, tc);
    return s;
}
