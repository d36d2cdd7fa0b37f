/* tests/test_resume.c — eo-train --checkpoint / --resume (issue 30 item
 * 1): a run stopped after k steps and resumed from its training-state
 * file ends with the same bytes as the run that never stopped — the
 * weights (--save), the final training state (weights, AdamW/SGD state,
 * step, random and scaler state: --checkpoint) and the loss log (--log,
 * continued by the resumed run) — for every model, f32 everywhere and
 * bf16/f16 on the MLP and the GPT, at 1 and 2 threads. A resume with
 * other settings is refused naming the setting. The image models need
 * Fashion-MNIST (skipped without it, as test_cli's); the GPT runs on a
 * corpus and a token shard the test writes. */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "tests/tmpdir.h"
#include "tests/run_line.h"

#ifndef EO_BUILD_DIR
#define EO_BUILD_DIR "build"
#endif


static const char *train_prog(void)
{
    static char buf[512];
    const char *runner = getenv("EO_TEST_RUNNER");
    snprintf(buf, sizeof buf, "timeout 120 %s%s%s/eo-train", runner ? runner : "",
             runner ? " " : "", EO_BUILD_DIR);
    return buf;
}

/* 1 when the two files hold the same bytes. */
static int same_bytes(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    while (same) {
        int ca = fgetc(fa), cb = fgetc(fb);
        if (ca != cb)
            same = 0;
        if (ca == EOF || cb == EOF)
            break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

static char *path(const char *name)
{
    static char buf[8][512];
    static int slot;
    char *b = buf[slot++ % 8];
    snprintf(b, sizeof buf[0], "%s", eo_tmpdir_path(name));
    return b;
}

/* `opts` trained whole (A) and as --stop-after k then --resume (B):
 * weights, final state and log byte-identical. 0 when the data is
 * missing (skipped), 1 when compared. */
static int stop_and_resume(const char *opts, int total, int k)
{
    static char out[32768];
    char line[4096];
    const char *p = train_prog();
    snprintf(line, sizeof line, "%s %s -q --checkpoint %s --checkpoint-every %d --log %s "
             "--save %s --plot %s", p, opts, path("a.ck"), total, path("a.csv"), path("a.st"),
             path("a.svg"));
    int rc = eo_test_run_line(line, out, sizeof out);
    if (rc != 0 && strstr(out, "not found")) /* no Fashion-MNIST on this machine */
        return 0;
    ck_assert_msg(rc == 0, "%s: %s", line, out);
    remove(path("b.csv"));
    snprintf(line, sizeof line, "%s %s -q --checkpoint %s --checkpoint-every %d --log %s "
             "--stop-after %d --plot %s", p, opts, path("b.ck"), total, path("b.csv"), k,
             path("b.svg"));
    rc = eo_test_run_line(line, out, sizeof out);
    ck_assert_msg(rc == 0 && strstr(out, "stopped after step"), "%s: %s", line, out);
    snprintf(line, sizeof line, "%s %s -q --checkpoint %s --checkpoint-every %d --log %s "
             "--save %s --resume %s --plot %s", p, opts, path("b.ck"), total, path("b.csv"),
             path("b.st"), path("b.ck"), path("b.svg"));
    rc = eo_test_run_line(line, out, sizeof out);
    ck_assert_msg(rc == 0 && strstr(out, "resumed"), "%s: %s", line, out);
    ck_assert_msg(same_bytes(path("a.st"), path("b.st")), "%s: --save differs after resume", opts);
    ck_assert_msg(same_bytes(path("a.ck"), path("b.ck")), "%s: training state differs", opts);
    ck_assert_msg(same_bytes(path("a.csv"), path("b.csv")), "%s: log differs", opts);
    return 1;
}

static void setup(void) { ck_assert_ptr_nonnull(eo_tmpdir_make()); }
static void teardown(void) { eo_tmpdir_remove(); }

#define IMAGE "--subset 128 --test-subset 100 --batch 32 --epochs 2 "

START_TEST(image_models_resume_bit_identically)
{
    static const char *const cases[] = {
        "--model mlp -j 2 " IMAGE,
        "--model mlp -j 1 --precision bf16 " IMAGE,
        "--model mlp -j 2 --precision f16 " IMAGE,
        "--model mlp -j 1 --optimizer sgd --nesterov --clip 1 " IMAGE,
        "--model cnn -j 2 " IMAGE,
        "--model vit -j 2 " IMAGE,
    };
    /* 4 steps an epoch: stop inside epoch 2, and at the end of epoch 1
     * (its evaluation comes after the resume). */
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        if (!stop_and_resume(cases[i], 8, i == 1 ? 4 : 5))
            return; /* no data */
}
END_TEST

/* The character corpus of test_cli; the path copied (the tmpdir's
 * buffer is reused by every later path). */
static const char *corpus(void)
{
    static char p[512];
    char text[8192];
    for (size_t i = 0; i < sizeof text; i++)
        text[i] = "the quick brown fox jumps over the lazy dog.\n"[i % 45];
    const char *f = eo_tmpdir_file("corpus.txt", text, sizeof text);
    if (!f)
        return NULL;
    snprintf(p, sizeof p, "%s", f);
    return p;
}

/* An llm.c shard of 4000 ids below 64. */
static const char *shard(void)
{
    static int32_t head[256];
    static uint16_t ids[4000];
    static unsigned char file[sizeof head + sizeof ids];
    head[0] = 20240520;
    head[1] = 1;
    head[2] = 4000;
    for (int i = 0; i < 4000; i++)
        ids[i] = (uint16_t)((i * 7 + i / 13) % 64);
    /* little-endian, as the format is */
    for (int i = 0; i < 256; i++)
        for (int b = 0; b < 4; b++)
            file[4 * i + b] = (unsigned char)((uint32_t)head[i] >> (8 * b));
    for (int i = 0; i < 4000; i++) {
        file[sizeof head + 2 * i] = (unsigned char)(ids[i] & 0xff);
        file[sizeof head + 2 * i + 1] = (unsigned char)(ids[i] >> 8);
    }
    static char p[512];
    const char *f = eo_tmpdir_file("t.bin", file, sizeof file);
    if (!f)
        return NULL;
    snprintf(p, sizeof p, "%s", f);
    return p;
}

#define GPT "--model gpt --steps 6 --batch 4 --context 16 --d-model 16 --heads 2 --layers 1 " \
            "--val-windows 2 --eval-every 3 --schedule cosine --warmup 2 "

START_TEST(gpt_resumes_bit_identically)
{
    char opts[1024];
    const char *text = corpus(), *tokens = shard();
    ck_assert_ptr_nonnull(text);
    ck_assert_ptr_nonnull(tokens);
    static const char *const kinds[] = { "-j 2", "-j 1 --precision bf16", "-j 2 --precision f16" };
    for (size_t i = 0; i < 3; i++) {
        snprintf(opts, sizeof opts, GPT "%s --text %s", kinds[i], text);
        ck_assert(stop_and_resume(opts, 6, 4));
    }
    snprintf(opts, sizeof opts, GPT "-j 1 --tokens %s --vocab 64 --clip 1", tokens);
    ck_assert(stop_and_resume(opts, 6, 2));
}
END_TEST

/* A resume with other settings would not continue the same run: it is
 * refused, naming the setting; a weights-only file is not a state. */
START_TEST(resume_refuses_other_settings)
{
    static char out[16384];
    char line[4096];
    const char *text = corpus();
    ck_assert_ptr_nonnull(text);
    const char *p = train_prog();
    snprintf(line, sizeof line, "%s " GPT "--text %s -q --checkpoint %s --stop-after 2 "
             "--plot %s", p, text, path("s.ck"), path("s.svg"));
    ck_assert_msg(eo_test_run_line(line, out, sizeof out) == 0, "%s", out);
    snprintf(line, sizeof line, "%s " GPT "--text %s -q --save %s --plot %s", p, text,
             path("w.st"), path("s.svg"));
    ck_assert_msg(eo_test_run_line(line, out, sizeof out) == 0, "%s", out);
    snprintf(line, sizeof line, "%s " GPT "--text %s -q --lr 0.002 --resume %s", p, text,
             path("s.ck"));
    ck_assert_msg(eo_test_run_line(line, out, sizeof out) != 0 && strstr(out, "was saved with lr 0.001, "
                  "this run has lr 0.002"), "%s", out);
    snprintf(line, sizeof line, "%s " GPT "--text %s -q -j 1 --resume %s", p, text, path("s.ck"));
    ck_assert_msg(eo_test_run_line(line, out, sizeof out) != 0 && strstr(out, "threads 2"), "%s", out);
    snprintf(line, sizeof line, "%s " GPT "--text %s -q --resume %s", p, text, path("w.st"));
    ck_assert_msg(eo_test_run_line(line, out, sizeof out) != 0 && strstr(out, "not a training state"),
                  "%s", out);
    snprintf(line, sizeof line, "%s --zero 1 --resume %s", p, path("s.ck"));
    ck_assert_msg(eo_test_run_line(line, out, sizeof out) == 2 && strstr(out, "--zero"), "%s", out);
    snprintf(line, sizeof line, "%s --checkpoint-every 3", p);
    ck_assert_msg(eo_test_run_line(line, out, sizeof out) == 2 && strstr(out, "needs --checkpoint"), "%s",
                  out);
}
END_TEST

/* Starts "sh -c 'exec LINE'" with its output in `log`: the pid is the
 * training program's own, so SIGKILL hits it and nothing else. */
static pid_t spawn(const char *line, const char *log)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "exec %s >%s 2>&1 </dev/null", line, log);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Issue 30 item 3 (one process): SIGKILL at random moments — during a
 * step or while a checkpoint is written, every step writing one — then
 * resume from whatever file is there (a fresh start if none yet), until
 * a run ends by itself: the weights, the state and the log equal the
 * uninterrupted run's. The moments are drawn from a seed printed on
 * failure. */
START_TEST(killed_runs_resume_bit_identically)
{
    static char out[32768];
    char base[2048], line[4096];
    const char *text = corpus();
    ck_assert_ptr_nonnull(text);
    const char *runner = getenv("EO_TEST_RUNNER");
    snprintf(base, sizeof base, "%s%s%s/eo-train --model gpt --steps 60 --batch 8 --context 16 "
             "--d-model 32 --heads 2 --layers 2 --val-windows 2 --eval-every 20 --schedule "
             "cosine --warmup 3 --precision f16 -j 2 --text %s -q --checkpoint-every 1 --plot %s",
             runner ? runner : "", runner ? " " : "", EO_BUILD_DIR, text, path("k.svg"));
    double t0 = seconds();
    snprintf(line, sizeof line, "timeout 120 %s --checkpoint %s --log %s --save %s", base,
             path("a.ck"), path("a.csv"), path("a.st"));
    ck_assert_msg(eo_test_run_line(line, out, sizeof out) == 0, "%s: %s", line, out);
    double full = seconds() - t0;
    unsigned seed = (unsigned)time(NULL);
    srand(seed);
    int kills = 0, finished = 0;
    for (int attempt = 0; attempt < 40 && !finished; attempt++) {
        int have = access(path("b.ck"), F_OK) == 0;
        snprintf(line, sizeof line, "%s --checkpoint %s --log %s --save %s%s%s", base,
                 path("b.ck"), path("b.csv"), path("b.st"), have ? " --resume " : "",
                 have ? path("b.ck") : "");
        pid_t pid = spawn(line, path("b.out"));
        ck_assert_int_gt(pid, 0);
        if (kills < 8) { /* then let it finish */
            double d = 0.4 * full * (double)rand() / RAND_MAX; /* a resumed run is shorter */
            struct timespec ts = { (time_t)d, (long)(1e9 * (d - (double)(time_t)d)) };
            nanosleep(&ts, NULL);
            kill(pid, SIGKILL);
        }
        int st;
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) {
            kills++;
            continue;
        }
        FILE *f = fopen(path("b.out"), "r");
        size_t n = f ? fread(out, 1, sizeof out - 1, f) : 0;
        out[n] = '\0';
        if (f)
            fclose(f);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "seed %u, after %d kills: %s: %s",
                      seed, kills, line, out);
        finished = 1;
    }
    ck_assert_msg(finished, "seed %u: no run finished", seed);
    ck_assert_msg(same_bytes(path("a.st"), path("b.st")), "seed %u, %d kills: weights differ", seed,
                  kills);
    ck_assert_msg(same_bytes(path("a.ck"), path("b.ck")), "seed %u, %d kills: state differs", seed,
                  kills);
    ck_assert_msg(same_bytes(path("a.csv"), path("b.csv")), "seed %u, %d kills: log differs", seed,
                  kills);
}
END_TEST

Suite *eo_suite_resume(void)
{
    Suite *s = suite_create("resume");
    TCase *tc = tcase_create("resume");
    tcase_set_timeout(tc, 240);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, image_models_resume_bit_identically);
    tcase_add_test(tc, gpt_resumes_bit_identically);
    tcase_add_test(tc, resume_refuses_other_settings);
    tcase_add_test(tc, killed_runs_resume_bit_identically);
    suite_add_tcase(s, tc);
    return s;
}
