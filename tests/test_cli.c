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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "core/everyo.h"
#include "core/transformer.h"
#include "tests/gradcheck.h"
#include "tests/tmpdir.h"
#include "tests/run_line.h"
#include "tools/formats/checkpoint.h"
#include "tools/cli/args.h"
#include "tests/fixtures/gpt2_generate.h"
#include "tests/tmpdir.h"

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
    /* Measured arenas are bounded by the machine's memory: 8 TB of
     * activations is refused before anything is allocated. */
    refused("eo-train", "--model gpt --context 65536 --batch 65536", "step arena");
    refused("eo-train", "--step-mb 0", "--step-mb: '0' is not a whole number from 1");
    refused("eo-train", "--model gpt --persist-mb 1x", "--persist-mb: '1x'");
    /* Token data (eo-train --tokens): the pairs that cannot work. */
    refused("eo-train", "--model gpt2", "--model gpt2 trains on token shards: give --tokens");
    refused("eo-train", "--model gpt --vocab 10", "--vocab needs --tokens");
    refused("eo-train", "--model gpt --val-tokens v.bin", "--val-tokens needs --tokens");
    refused("eo-train", "--model gpt --tokens t.bin --vocab 65537", "--vocab: '65537'");
    refused("eo-train", "--model gpt --tokens t.bin --steps 10 --schedule cosine --warmup 11",
            "--warmup 11 is more than --steps 10");
    refused("eo-train", "--model gpt --warmup 3", "add --schedule cosine");
    refused("eo-train", "--model gpt --clip -1", "--clip and --min-lr must be >= 0");
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
    /* strtod took these as 0 bytes, a negative size and an overflow. */
    refused("eo-bench-dist", "--sizes 4K,abc", "--sizes: 'abc' is not a size");
    refused("eo-bench-dist", "--sizes=-5", "--sizes: '-5'");
    refused("eo-bench-dist", "--sizes 1e30G", "--sizes: '1e30G'");
    refused("eo-bench-dist", "--min-time -1", "--min-time: '-1'");
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


/* "RUNNER EO_BUILD_DIR/program" for a shell line. */
static const char *prog(const char *program)
{
    static char buf[4][512];
    static int slot;
    const char *runner = getenv("EO_TEST_RUNNER");
    char *b = buf[slot++ % 4];
    /* Under an emulator everything is slower: the same factor as Check's. */
    const char *mult = getenv("CK_TIMEOUT_MULTIPLIER");
    long k = mult ? strtol(mult, NULL, 10) : 1;
    snprintf(b, sizeof buf[0], "timeout %ld %s%s%s/%s", 60 * (k >= 1 && k <= 1000 ? k : 1),
             runner ? runner : "", runner ? " " : "", EO_BUILD_DIR, program);
    return b;
}

/* Fails unless the line exits with a non-zero status and says needle. */
static void fails_saying(const char *line, const char *needle)
{
    static char out[16384];
    int rc = eo_test_run_line(line, out, sizeof out);
    ck_assert_msg(rc > 0 && rc != 124, "%s: exit %d (124 means it hung): %s", line, rc, out);
    ck_assert_msg(strstr(out, needle), "%s: exit %d, expected '%s' in: %s", line, rc, needle, out);
    /* In a SANITIZE=1 build the programs are sanitized: an error exit
     * that leaks or touches freed memory says so here. */
    ck_assert_msg(!strstr(out, "Sanitizer"), "%s: %s", line, out);
}

static void setup(void) { ck_assert_ptr_nonnull(eo_tmpdir_make()); }
static void teardown(void) { eo_tmpdir_remove(); }

/* A small corpus for eo-train --model gpt, so no test needs the
 * fortunes package: "--text PATH" for the GPT lines below. */
static const char *corpus(void)
{
    static char opt[600];
    char text[8192];
    for (size_t i = 0; i < sizeof text; i++)
        text[i] = "the quick brown fox jumps over the lazy dog.\n"[i % 45];
    const char *p = eo_tmpdir_file("corpus.txt", text, sizeof text);
    ck_assert_ptr_nonnull(p);
    snprintf(opt, sizeof opt, "--text %s", p);
    return opt;
}

/* A kernel that does nothing, for eo-ptxsim's argument checks: a buffer
 * (printed after the run) and a u32. */
static const char tiny_ptx[] = ".version 7.0\n.target sm_80\n.address_size 64\n\n"
                               ".visible .entry k(\n    .param .u64 b,\n    .param .u32 a\n)\n"
                               "{\n    ret;\n}\n";

/* Issue 26 item 17: a FIFO as an input file hung every reader (fopen
 * waits for a writer), /dev/zero was read until memory ran out. Every
 * input path now goes through eo_file_open_read / eo_file_read_all. */
START_TEST(input_files_must_be_regular)
{
    char fifo[512], dir[512], line[2048];
    snprintf(fifo, sizeof fifo, "%s", eo_tmpdir_path("fifo"));
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    const char *ptx = eo_tmpdir_file("k.ptx", tiny_ptx, sizeof tiny_ptx - 1);
    ck_assert_ptr_nonnull(ptx);
    const char *gpt = "--model gpt --steps 1 --batch 1 --context 8 --d-model 8 --heads 1 "
                      "--layers 1 -q";
    snprintf(line, sizeof line, "%s --load %s", prog("eo-sample"), fifo);
    fails_saying(line, "is a FIFO, expected a regular safetensors file");
    snprintf(line, sizeof line, "%s ls %s", prog("eo-safetensors"), fifo);
    fails_saying(line, "is a FIFO");
    snprintf(line, sizeof line, "%s %s --text %s", prog("eo-train"), gpt, fifo);
    fails_saying(line, "is a FIFO, expected a regular text file");
    snprintf(line, sizeof line, "%s %s --tokens %s", prog("eo-train"), gpt, fifo);
    fails_saying(line, "is a FIFO, expected a regular token shard file");
    static const char zeros[1024];
    const char *bad = eo_tmpdir_file("bad.bin", zeros, sizeof zeros);
    ck_assert_ptr_nonnull(bad);
    snprintf(line, sizeof line, "%s %s --tokens %s", prog("eo-train"), gpt, bad);
    fails_saying(line, "bad.bin: magic 0, expected 20240520: not a token shard");
    snprintf(line, sizeof line, "%s %s --text /dev/zero", prog("eo-train"), gpt);
    fails_saying(line, "/dev/zero: is a character device");
    snprintf(line, sizeof line, "%s %s k", prog("eo-ptxsim"), fifo);
    fails_saying(line, "is a FIFO, expected a regular PTX file");
    snprintf(line, sizeof line, "%s /dev/zero k", prog("eo-ptxsim"));
    fails_saying(line, "/dev/zero: is a character device");
    snprintf(line, sizeof line, "%s --grid 1 --block 1 --arg u32buf:4=file:%s --arg u32:1 %s k",
             prog("eo-ptxsim"), fifo, ptx);
    fails_saying(line, "is a FIFO");
    snprintf(line, sizeof line, "%s --predicted %s", prog("eo-bench"), fifo);
    fails_saying(line, "--predicted");
    snprintf(line, sizeof line, "%s --load %s --eval", prog("eo-train"), fifo);
    fails_saying(line, "is a FIFO");
    /* The data folder: a FIFO where the training images should be. */
    snprintf(dir, sizeof dir, "%s", eo_tmpdir_path("train-images-idx3-ubyte"));
    ck_assert_int_eq(mkfifo(dir, 0600), 0);
    char *slash = strrchr(dir, '/');
    *slash = '\0';
    snprintf(line, sizeof line, "%s --data %s --epochs 1 -q", prog("eo-train"), dir);
    fails_saying(line, "is a FIFO, expected a regular IDX file");
}
END_TEST

/* Issue 26 item 18: --save renamed its finished file over a symlink (and,
 * as root, over a device node); every writer refuses a target that is not
 * a regular file, and leaves what is there untouched. */
START_TEST(output_targets_must_be_regular)
{
    char line[2048], link[512], fifo[512];
    const char *kept = eo_tmpdir_file("kept.txt", "keep", 4);
    ck_assert_ptr_nonnull(kept);
    snprintf(link, sizeof link, "%s", eo_tmpdir_path("link"));
    ck_assert_int_eq(symlink(kept, link), 0);
    snprintf(fifo, sizeof fifo, "%s", eo_tmpdir_path("fifo"));
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    char gpt[1024];
    snprintf(gpt, sizeof gpt, "--model gpt --steps 2 --batch 1 --context 8 --d-model 8 "
             "--heads 1 --layers 1 --val-windows 4 -q %s", corpus());
    static const char *const opts[] = {"--save", "--log", "--plot"};
    for (int k = 0; k < 3; k++) {
        snprintf(line, sizeof line, "%s %s %s %s", prog("eo-train"), gpt, opts[k], link);
        fails_saying(line, "is a symbolic link; refusing");
        snprintf(line, sizeof line, "%s %s %s %s", prog("eo-train"), gpt, opts[k], fifo);
        fails_saying(line, "is a FIFO; refusing");
        snprintf(line, sizeof line, "%s %s %s /dev/null", prog("eo-train"), gpt, opts[k]);
        fails_saying(line, "is a character device; refusing");
    }
    snprintf(line, sizeof line, "%s --quick --csv %s", prog("eo-bench"), link);
    fails_saying(line, "is a symbolic link");
    snprintf(line, sizeof line, "%s --quick --svg %s", prog("eo-bench"), fifo);
    fails_saying(line, "is a FIFO");
    /* The link and what it points at are as they were. */
    struct stat sb;
    ck_assert_int_eq(lstat(link, &sb), 0);
    ck_assert(S_ISLNK(sb.st_mode));
    FILE *f = fopen(kept, "rb");
    char got[8] = "";
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fread(got, 1, sizeof got, f), 4);
    fclose(f);
    ck_assert(memcmp(got, "keep", 4) == 0);
    /* An existing regular file is still replaced (atomically, by rename). */
    snprintf(line, sizeof line, "%s %s --save %s --plot %s", prog("eo-train"), gpt, kept,
             eo_tmpdir_path("p.svg"));
    static char out[16384];
    ck_assert_msg(eo_test_run_line(line, out, sizeof out) == 0, "%s", out);
    ck_assert_int_eq(stat(kept, &sb), 0);
    ck_assert_int_gt(sb.st_size, 100);
}
END_TEST

/* Issue 26 item 19: a failed write (a full disk, a full standard output)
 * exited 0. Standard output is flushed and closed at exit and checked;
 * --log is checked at every line and at close. /dev/full stands for a
 * full standard output; a file-size limit (ulimit -f, SIGXFSZ ignored so
 * the write returns EFBIG) for a full disk, since --log refuses devices. */
START_TEST(write_errors_fail_the_program)
{
    char line[2048];
    snprintf(line, sizeof line, "%s --help >/dev/full", prog("eo-train"));
    fails_saying(line, "write error on standard output");
    snprintf(line, sizeof line, "%s --version >/dev/full", prog("eo-sample"));
    fails_saying(line, "write error on standard output");
    static const char *const sub[] = {"dump", "c-image", "ls"};
    for (int k = 0; k < 3; k++) {
        snprintf(line, sizeof line, "%s %s tests/fixtures/st16.safetensors >/dev/full",
                 prog("eo-safetensors"), sub[k]);
        fails_saying(line, "write error on standard output");
    }
    const char *ptx = eo_tmpdir_file("k.ptx", tiny_ptx, sizeof tiny_ptx - 1);
    snprintf(line, sizeof line, "%s --grid 1 --block 1 --arg u32buf:4 --arg u32:1 %s k >/dev/full",
             prog("eo-ptxsim"), ptx);
    fails_saying(line, "write error on standard output");
    snprintf(line, sizeof line,
             "(trap '' XFSZ; ulimit -f 4; exec %s --model gpt --steps 2000 --batch 1 "
             "--context 8 --d-model 8 --heads 1 --layers 1 --val-windows 4 --eval-every 0 -q "
             "%s --log %s --plot %s)",
             prog("eo-train"), corpus(), eo_tmpdir_path("log.csv"), eo_tmpdir_path("p.svg"));
    fails_saying(line, "log.csv: write failed");
}
END_TEST

/* Issue 30 item 2: a checkpoint that cannot be written (here a file-size
 * limit, SIGXFSZ ignored so the write returns EFBIG, standing for a full
 * disk) fails the program with a message naming the file and the step;
 * the previous checkpoint is there byte for byte, still loads (its
 * checksum holds), and no temporary is left. */
START_TEST(failed_save_keeps_the_previous_checkpoint)
{
    char line[2048], gpt[1024], ck[512], tmp[520];
    snprintf(ck, sizeof ck, "%s", eo_tmpdir_path("ck.safetensors"));
    snprintf(tmp, sizeof tmp, "%s.tmp", ck);
    snprintf(gpt, sizeof gpt, "--model gpt --steps 2 --batch 1 --context 8 --d-model 8 "
             "--heads 1 --layers 1 --val-windows 4 --eval-every 0 -q %s --plot %s", corpus(),
             eo_tmpdir_path("p.svg"));
    static char out[16384], before[65536], after[65536];
    snprintf(line, sizeof line, "%s %s --save %s", prog("eo-train"), gpt, ck);
    ck_assert_msg(eo_test_run_line(line, out, sizeof out) == 0, "%s", out);
    FILE *f = fopen(ck, "rb");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(before, 1, sizeof before, f);
    fclose(f);
    ck_assert_uint_gt(n, 4096); /* more than the limit below lets through */
    snprintf(line, sizeof line, "(trap '' XFSZ; ulimit -f 4; exec %s %s --seed 7 --save %s)",
             prog("eo-train"), gpt, ck);
    fails_saying(line, "ck.safetensors: write failed after");
    f = fopen(ck, "rb");
    ck_assert_ptr_nonnull(f);
    size_t m = fread(after, 1, sizeof after, f);
    fclose(f);
    ck_assert(m == n && memcmp(before, after, n) == 0);
    ck_assert_int_eq(access(tmp, F_OK), -1);
    snprintf(line, sizeof line, "%s ls %s", prog("eo-safetensors"), ck);
    ck_assert_msg(eo_test_run_line(line, out, sizeof out) == 0, "%s", out);
}
END_TEST

/* Issue 26 item 20: eo-ptxsim took u32:4294967296 as 0. */
START_TEST(ptxsim_scalars_must_fit)
{
    char line[2048];
    const char *ptx = eo_tmpdir_file("k.ptx", tiny_ptx, sizeof tiny_ptx - 1);
    static const char *const bad[] = {"u32:4294967296", "u32:-1", "s32:2147483648",
                                      "s32:-2147483649", "f32:1e39"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(line, sizeof line, "%s --grid 1 --block 1 --arg u32buf:1 --arg %s %s k",
                 prog("eo-ptxsim"), bad[i], ptx);
        fails_saying(line, "bad --arg");
    }
    static char out[4096];
    snprintf(line, sizeof line, "%s --grid 1 --block 1 --arg u32buf:1 --arg u32:4294967295 %s k",
             prog("eo-ptxsim"), ptx);
    ck_assert_msg(eo_test_run_line(line, out, sizeof out) == 0, "%s", out);
}
END_TEST

/* Issue 26 item 21: --steps ended the training inside epoch 1, then ran
 * every remaining epoch empty ("0/469 loss 0.0000", a full evaluation
 * each). Only the epochs that train run now. */
START_TEST(steps_end_the_run)
{
    static char out[16384];
    char line[2048];
    snprintf(line, sizeof line, "%s --model mlp --subset 256 --test-subset 100 --batch 64 "
             "--epochs 5 --steps 6 -q --plot %s", prog("eo-train"), eo_tmpdir_path("p.svg"));
    int rc = eo_test_run_line(line, out, sizeof out);
    if (rc != 0 && strstr(out, "not found")) /* no Fashion-MNIST on this machine */
        return;
    ck_assert_msg(rc == 0, "%s", out);
    /* 4 steps per epoch: epoch 1 whole, epoch 2 two steps, then stop. */
    ck_assert_msg(strstr(out, "epoch 1/2 ") && strstr(out, "epoch 2/2 ") && !strstr(out, "/5"),
                  "%s", out);
}
END_TEST

/* Issue 26 item 22: the arenas had fixed defaults (64 MiB persistent)
 * that refused a 10.7 M-parameter GPT in eo-train and the checkpoint it
 * saved in eo-sample. With no arena option both measure the model now. */
START_TEST(arenas_fit_the_model)
{
    static char out[16384];
    char line[2048];
    const char *ck = eo_tmpdir_path("big.safetensors");
    snprintf(line, sizeof line, "%s --model gpt --d-model 384 --layers 6 --heads 6 --context 16 "
             "--batch 1 --steps 1 --val-windows 2 --eval-every 0 -q %s --save %s --plot %s",
             prog("eo-train"), corpus(), ck, eo_tmpdir_path("p.svg"));
    ck_assert_msg(eo_test_run_line(line, out, sizeof out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "10675968 parameters") && strstr(out, "arenas: persistent") &&
                      strstr(out, "measured"), "%s", out);
    snprintf(line, sizeof line, "%s --load %s --length 5 --seed 3", prog("eo-sample"), ck);
    ck_assert_msg(eo_test_run_line(line, out, sizeof out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "arenas: persistent"), "%s", out);
    /* An override still rules, and too small still names the option. */
    snprintf(line, sizeof line, "%s --load %s --length 5 --persist-mb 40", prog("eo-sample"), ck);
    fails_saying(line, "the persistent arena has 40.0 MiB");
}
END_TEST

/* Issue 26 item 20: error exits leaked (nine LeakSanitizer reports, e.g.
 * eo-sample's buffers on a bad prompt, eo-ptxsim's module text on a bad
 * kernel name). Each error path below must fail cleanly; in the
 * SANITIZE=1 build (make test SANITIZE=1) fails_saying also sees any
 * leak report. */
START_TEST(error_exits_free_everything)
{
    char line[2048], fifo[512];
    snprintf(fifo, sizeof fifo, "%s", eo_tmpdir_path("fifo"));
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    const char *ptx = eo_tmpdir_file("k.ptx", tiny_ptx, sizeof tiny_ptx - 1);
    const char *text = corpus();
    const char *ck = eo_tmpdir_path("tiny.safetensors");
    static char out[16384];
    snprintf(line, sizeof line, "%s --model gpt --steps 1 --batch 1 --context 8 --d-model 8 "
             "--heads 1 --layers 1 --val-windows 2 -q %s --save %s --plot %s", prog("eo-train"),
             text, ck, eo_tmpdir_path("p.svg"));
    ck_assert_msg(eo_test_run_line(line, out, sizeof out) == 0, "%s", out);
    char corpus_path[512];
    snprintf(corpus_path, sizeof corpus_path, "%s", text + strlen("--text "));
    const struct { const char *program, *args, *file, *needle; } paths[] = {
        {"eo-sample", "--load %s --prompt '\001'", ck, "not in the model's vocabulary"},
        {"eo-sample", "--load %s --prompt ''", ck, "empty prompt"},
        {"eo-sample", "--load %s", "tests/fixtures/st16.safetensors", "not a GPT checkpoint"},
        {"eo-train", "--model mlp --load %s --eval", ck, "holds a 'gpt' model"},
        {"eo-train", "--model gpt --steps 1 --batch 8 --context 32 --d-model 32 --heads 2 "
                     "--layers 2 --step-mb 1 -q --text %s", corpus_path, "raise --step-mb"},
        {"eo-ptxsim", "%s k", corpus_path, "missing .version"},
        {"eo-ptxsim", "--grid 1 --block 1 --arg u32buf:1 --arg u32:1 %s nokernel", ptx,
         "no kernel"},
        {"eo-safetensors", "c-array %s", corpus_path, "safetensors"},
    };
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
        char args[1024];
        snprintf(args, sizeof args, paths[i].args, paths[i].file);
        snprintf(line, sizeof line, "%s %s", prog(paths[i].program), args);
        fails_saying(line, paths[i].needle);
    }
}
END_TEST

/* eo-safetensors convert-gpt2 both ways, and eo-sample naming what a
 * GPT-2 file is instead of calling it no checkpoint at all. */
START_TEST(gpt2_files_on_the_command_line)
{
    static char out[8192];
    char args[1200];
    ck_assert_ptr_nonnull(eo_tmpdir_make());
    char eo[512], hf[512];
    snprintf(eo, sizeof eo, "%s", eo_tmpdir_path("eo.safetensors"));
    snprintf(hf, sizeof hf, "%s", eo_tmpdir_path("hf.safetensors"));
    snprintf(args, sizeof args, "convert-gpt2 tests/fixtures/gpt2_small.safetensors '%s' 3", eo);
    ck_assert_msg(run("eo-safetensors", args, out, sizeof out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "n_head 3 (from caller)") && strstr(out, "tied head, Hugging Face "
                  "layout") && strstr(out, ": EveryO layout"), "%s", out);
    snprintf(args, sizeof args, "convert-gpt2 '%s' '%s'", eo, hf);
    ck_assert_msg(run("eo-safetensors", args, out, sizeof out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "n_head 3 (from metadata)") && strstr(out, "EveryO layout ->"), "%s",
                  out);
    snprintf(args, sizeof args, "convert-gpt2 tests/fixtures/gpt2_small.safetensors '%s'", eo);
    ck_assert_int_eq(run("eo-safetensors", args, out, sizeof out), 1);
    ck_assert_msg(strstr(out, "number of heads"), "%s", out);
    snprintf(args, sizeof args, "--load '%s' --prompt a", hf);
    ck_assert_int_eq(run("eo-sample", args, out, sizeof out), 1);
    ck_assert_msg(strstr(out, "holds a GPT-2 model (Hugging Face layout, n_layer 2, n_embd 12, "
                             "vocab 37)"), "%s", out);

    /* A character GPT as eo-train saves it, converted to Hugging Face's
     * layout: eo-sample reads both and samples the same text. */
    eo_ctx *ctx = eo_test_ctx(8, 16);
    eo_gpt_config c = { 5, 8, 8, 2, 1, 0 };
    eo_gpt m;
    eo_seed(ctx, 5);
    ck_assert_int_eq(eo_gpt_build(ctx, EO_CPU, &c, &m), EO_OK);
    const char *keys[6] = { "model", "vocab", "context", "d_model", "heads", "layers" };
    const char *vals[6] = { "gpt", "\n abc", "8", "8", "2", "1" };
    char err[512], out1[8192];
    ck_assert_msg(eo_checkpoint_save(ctx, &m.params, eo, keys, vals, 6, err, sizeof err) == EO_OK,
                  "%s", err);
    eo_test_ctx_free(ctx);
    snprintf(args, sizeof args, "convert-gpt2 '%s' '%s'", eo, hf);
    ck_assert_msg(run("eo-safetensors", args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, "--load '%s' --prompt ab --temperature 0 --length 12", eo);
    ck_assert_msg(run("eo-sample", args, out1, sizeof out1) == 0, "%s", out1);
    snprintf(args, sizeof args, "--load '%s' --prompt ab --temperature 0 --length 12", hf);
    ck_assert_msg(run("eo-sample", args, out, sizeof out) == 0, "%s", out);
    ck_assert_str_eq(out, out1);

    /* eo-train --model gpt --load: goes on training either layout; a
     * GPT-2 file without a character vocabulary is named for what it is. */
    static const char line[] = "a cab\nbab cac abba\n";
    static char text[40 * sizeof line];
    for (int i = 0; i < 40; i++)
        memcpy(text + i * (sizeof line - 1), line, sizeof line - 1);
    const char *tp = eo_tmpdir_file("text.txt", text, 40 * (sizeof line - 1));
    char plot[512];
    snprintf(plot, sizeof plot, "%s", eo_tmpdir_path("p.svg"));
    snprintf(args, sizeof args, "--model gpt --load '%s' --text '%s' --steps 2 --val-windows 4 "
             "--plot '%s' -q", hf, tp, plot);
    ck_assert_msg(run("eo-train", args, out, sizeof out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "loaded ") && strstr(out, "context 8, d_model 8, 2 heads, 1 layers"),
                  "%s", out);
    ck_assert_int_eq(run("eo-train", "--model gpt --load tests/fixtures/gpt2_deep.safetensors -q",
                         out, sizeof out), 1);
    ck_assert_msg(strstr(out, "holds a GPT-2 model (n_layer 3, n_embd 15, vocab 29) without "
                              "eo-train's character vocabulary"), "%s", out);
    eo_tmpdir_remove();
}
END_TEST

/* Issue 27 item 5: eo-sample with a BPE tokenizer. The program's stdout
 * is the prompt then transformers' greedy continuation, byte for byte
 * (tests/fixtures/gpt2_generate.h), with the tokenizer named each way;
 * a GPT that eo-train --tokens saved (vocab_size, no character list)
 * samples with a tokenizer and asks for one without. */
START_TEST(sample_with_a_tokenizer)
{
    static char out[16384];
    char line[2048];
    const gen_case *gc = &gen_cases[2]; /* the Unicode prompt */
    static const char *const toks[] = {
        "--tokenizer tests/fixtures/bpe",
        "--vocab tests/fixtures/bpe/vocab.json --merges tests/fixtures/bpe/merges.txt",
    };
    for (int t = 0; t < 2; t++) {
        snprintf(line, sizeof line, "%s --load tests/fixtures/gpt2_gen/model.safetensors %s "
                 "--prompt '%s' --temperature 0 --max-new-tokens %d 2>/dev/null",
                 prog("eo-sample"), toks[t], gc->prompt, GEN_NEW);
        ck_assert_int_eq(eo_test_run_line(line, out, sizeof out), 0);
        size_t pl = strlen(gc->prompt);
        ck_assert_msg(strncmp(out, gc->prompt, pl) == 0, "%s", out);
        ck_assert_int_eq((int)strlen(out + pl), gc->text_len);
        ck_assert(memcmp(out + pl, gc->text, (size_t)gc->text_len) == 0);
    }
    /* --precision bf16: 16-bit working copies and cache; the rounding
     * changes logits by ~1e-2, which moves this fixture's greedy choice
     * first at token 19 (f16 keeps all 24): the first 8 agree. */
    snprintf(line, sizeof line, "%s --load tests/fixtures/gpt2_gen/model.safetensors %s "
             "--prompt '%s' --temperature 0 -n 8 --precision bf16 2>/dev/null",
             prog("eo-sample"), toks[0], gen_cases[0].prompt);
    ck_assert_int_eq(eo_test_run_line(line, out, sizeof out), 0);
    ck_assert_msg(strncmp(out, gen_cases[0].prompt, strlen(gen_cases[0].prompt)) == 0 &&
                      strncmp(out + strlen(gen_cases[0].prompt), gen_cases[0].text, 16) == 0,
                  "%s", out);
    /* Sampling runs, and a seed repeats it. */
    static char first[sizeof out];
    snprintf(line, sizeof line, "%s --load tests/fixtures/gpt2_gen/model.safetensors %s "
             "--prompt 'The' --temperature 0.8 --top-k 40 --top-p 0.9 --seed 4 -n 16 "
             "2>/dev/null", prog("eo-sample"), toks[0]);
    ck_assert_int_eq(eo_test_run_line(line, out, sizeof out), 0);
    snprintf(first, sizeof first, "%s", out);
    ck_assert_int_eq(eo_test_run_line(line, out, sizeof out), 0);
    ck_assert_str_eq(out, first);
    snprintf(line, sizeof line, "%s --load tests/fixtures/gpt2_gen/model.safetensors %s "
             "--top-p 0", prog("eo-sample"), toks[0]);
    fails_saying(line, "--top-p: '0' is not above 0");
    snprintf(line, sizeof line, "%s --load tests/fixtures/gpt2_gen/model.safetensors %s "
             "--tiktoken x", prog("eo-sample"), toks[0]);
    fails_saying(line, "give one of --tokenizer DIR");
    /* A tokenizer larger than the model's vocabulary cannot work. */
    snprintf(line, sizeof line, "%s --load tests/fixtures/gpt2_small.safetensors --heads 3 %s",
             prog("eo-sample"), toks[0]);
    fails_saying(line, "the tokenizer has 1500 tokens");

    /* eo-train --tokens' checkpoint: an llm.c shard of ids below 1500. */
    static unsigned char shard[1024 + 2 * 3000];
    int32_t hdr[3] = { 20240520, 1, 3000 };
    memset(shard, 0, sizeof shard);
    for (int i = 0; i < 3; i++)
        for (int b = 0; b < 4; b++)
            shard[4 * i + b] = (unsigned char)((uint32_t)hdr[i] >> (8 * b));
    for (int i = 0; i < 3000; i++) {
        unsigned id = (unsigned)(i * 37 % 1500);
        shard[1024 + 2 * i] = (unsigned char)id;
        shard[1024 + 2 * i + 1] = (unsigned char)(id >> 8);
    }
    const char *sp = eo_tmpdir_file("t.bin", shard, sizeof shard);
    const char *ck = eo_tmpdir_path("tok.safetensors");
    snprintf(line, sizeof line, "%s --model gpt --tokens %s --vocab 1500 --context 16 "
             "--d-model 16 --heads 2 --layers 1 --batch 2 --steps 1 --val-windows 2 -q --save %s "
             "--plot %s", prog("eo-train"), sp, ck, eo_tmpdir_path("p.svg"));
    ck_assert_msg(eo_test_run_line(line, out, sizeof out) == 0, "%s", out);
    snprintf(line, sizeof line, "%s --load %s --tokenizer tests/fixtures/bpe --prompt 'Hello' "
             "-n 8 2>/dev/null", prog("eo-sample"), ck);
    ck_assert_msg(eo_test_run_line(line, out, sizeof out) == 0, "%s", out);
    ck_assert_msg(strncmp(out, "Hello", 5) == 0, "%s", out);
    snprintf(line, sizeof line, "%s --load %s --prompt 'Hello'", prog("eo-sample"), ck);
    fails_saying(line, "without a character vocabulary: give its tokenizer");
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
    tcase_add_test(tc, gpt2_files_on_the_command_line);
    suite_add_tcase(s, tc);
    TCase *files = tcase_create("files");
    tcase_set_timeout(files, 240);
    tcase_add_checked_fixture(files, setup, teardown);
    tcase_add_test(files, input_files_must_be_regular);
    tcase_add_test(files, output_targets_must_be_regular);
    tcase_add_test(files, write_errors_fail_the_program);
    tcase_add_test(files, failed_save_keeps_the_previous_checkpoint);
    tcase_add_test(files, ptxsim_scalars_must_fit);
    tcase_add_test(files, steps_end_the_run);
    tcase_add_test(files, arenas_fit_the_model);
    tcase_add_test(files, error_exits_free_everything);
    tcase_add_test(files, sample_with_a_tokenizer);
    suite_add_tcase(s, files);
    return s;
}
