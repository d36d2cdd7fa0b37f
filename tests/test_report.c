/* tests/test_report.c — smoke tests for what training shows a person: the
 * SVG chart (a well-formed start, labels present and escaped, non-finite
 * points and single points survive, round tick values) and the progress
 * bar (the plain final line off a terminal, redraws with \r on one). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tests/tmpdir.h"
#include "tools/train/progress.h"
#include "tools/train/svgplot.h"

static char err[256];

static void setup(void)
{
    ck_assert_ptr_nonnull(eo_tmpdir_make());
}

static void teardown(void)
{
    eo_tmpdir_remove();
}

/* The whole file as a string (malloc'd). */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    char *s = calloc(1, 1 << 16);
    ck_assert_ptr_nonnull(s);
    size_t n = fread(s, 1, (1 << 16) - 1, f);
    fclose(f);
    s[n] = '\0';
    return s;
}

START_TEST(svg_chart_is_written)
{
    double x[5] = {1, 2, 3, 4, 5}, loss[5] = {2.3, 1.1, NAN, 0.6, INFINITY};
    double acc[5] = {0.5, 0.7, 0.8, 0.85, 0.87}, one_x = 3, one_y = 0.9;
    eo_plot_series top[1] = {{"train loss", NULL, x, loss, 5}};
    eo_plot_series bottom[2] = {{"test acc <best>", "#123456", x, acc, 5},
                                {"single", NULL, &one_x, &one_y, 1}};
    eo_plot_panel panels[2] = {{"loss", top, 1}, {"accuracy", bottom, 2}};
    eo_plot plot = {"Fashion-MNIST & MLP", "epoch", panels, 2, 0, 0, "run <settings>"};
    const char *p = eo_tmpdir_path("chart.svg");
    ck_assert_msg(eo_svg_plot(p, &plot, err, sizeof err) == EO_OK, "%s", err);
    char *s = slurp(p);
    ck_assert(strncmp(s, "<svg", 4) == 0);
    ck_assert_ptr_nonnull(strstr(s, "</svg>"));
    ck_assert_ptr_nonnull(strstr(s, "train loss"));
    ck_assert_ptr_nonnull(strstr(s, "test acc &lt;best&gt;"));
    ck_assert_ptr_nonnull(strstr(s, "Fashion-MNIST &amp; MLP"));
    ck_assert_ptr_nonnull(strstr(s, "<circle"));    /* the lone point */
    ck_assert_ptr_null(strstr(s, "nan"));           /* no coordinate from a NaN */
    ck_assert_ptr_null(strstr(s, "inf"));
    free(s);

    eo_plot_panel empty = {"nothing", NULL, 0};
    eo_plot e = {NULL, NULL, &empty, 1, 0, 0, NULL};
    ck_assert_int_eq(eo_svg_plot(p, &e, err, sizeof err), EO_OK);
    e.npanels = 0;
    ck_assert_int_eq(eo_svg_plot(p, &e, err, sizeof err), EO_ERR_ARG);
    e.npanels = 1;
    ck_assert_int_eq(eo_svg_plot(eo_tmpdir_path("no-dir/x.svg"), &e, err, sizeof err), EO_ERR_IO);
}
END_TEST

START_TEST(ticks_are_round_numbers)
{
    double t[16], step;
    size_t n = eo_plot_ticks(0.213, 0.871, t, 16, &step);
    ck_assert_double_eq_tol(step, 0.1, 1e-12);
    ck_assert_uint_eq(n, 6);
    ck_assert_double_eq_tol(t[0], 0.3, 1e-12);
    n = eo_plot_ticks(-3, 47, t, 16, &step);
    ck_assert_double_eq(step, 10);
    ck_assert_double_eq(t[0], 0);
    ck_assert_double_eq(t[n - 1], 40);
    ck_assert_uint_eq(eo_plot_ticks(1, 1, t, 16, &step), 0);
}
END_TEST

START_TEST(progress_bar_lines)
{
    const char *p = eo_tmpdir_path("log.txt");
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    eo_progress pr;
    eo_progress_start(&pr, f, EO_PROGRESS_PLAIN, 3, 10, 469);
    for (size_t i = 1; i <= 469; i++)
        eo_progress_update(&pr, i, 0.4123, i * 128);
    eo_progress_finish(&pr, "test acc 0.8812");
    setenv("COLUMNS", "200", 1); /* a wide "terminal" (the file has no window size) */
    eo_progress_start(&pr, f, EO_PROGRESS_TTY, 4, 10, 469);
    eo_progress_update(&pr, 234, 0.5, 234 * 128);
    eo_progress_finish(&pr, NULL);
    fclose(f);
    char *s = slurp(p);
    /* Off a terminal: exactly one line for the epoch, no carriage return. */
    const char *want = "epoch 3/10 [==============================] 469/469  loss 0.4123";
    ck_assert_msg(strncmp(s, want, strlen(want)) == 0, "%s", s);
    ck_assert_ptr_nonnull(strstr(s, "test acc 0.8812\n"));
    ck_assert_ptr_nonnull(strstr(s, "img/s"));
    char *second = strchr(s, '\n') + 1;
    ck_assert(second[0] == '\r');
    ck_assert_ptr_nonnull(strstr(second, "epoch 4/10 [=============> "));
    free(s);

    char line[256];
    eo_progress_start(&pr, NULL, EO_PROGRESS_PLAIN, 1, 2, 0);
    ck_assert_uint_gt(eo_progress_format(&pr, 0.0, line, sizeof line), 0);
    ck_assert_ptr_nonnull(strstr(line, "0/0"));
}
END_TEST

/* On a terminal the line never reaches the last column (it would wrap and
 * leave a copy per redraw): the bar shrinks, then goes, then the line is
 * cut. A running epoch shows an ETA; the finished one labels its time as
 * training time and keeps room for what the caller appends. */
START_TEST(progress_bar_fits_the_terminal)
{
    char line[256];
    eo_progress pr;
    eo_progress_start(&pr, NULL, EO_PROGRESS_PLAIN, 12, 15, 469);
    pr.done = 234;
    pr.loss = 0.4123;
    pr.images = 234 * 128;
    for (int w = 20; w <= 120; w += 4) {
        pr.width = w;
        size_t n = eo_progress_format(&pr, 3.0, line, sizeof line);
        ck_assert_msg(n <= (size_t)w - 1 && strlen(line) == n, "width %d: '%s'", w, line);
    }
    pr.width = 80;
    eo_progress_format(&pr, 3.0, line, sizeof line);
    ck_assert_msg(strstr(line, "ETA 3 s") && strstr(line, "[") && strstr(line, "234/469"), "%s", line);
    pr.done = 469;
    pr.final = 1;
    pr.reserve = strlen("  test acc 88.12%, eval 0.1 s");
    size_t n = eo_progress_format(&pr, 6.0, line, sizeof line);
    ck_assert_msg(n + pr.reserve <= 79 && strstr(line, "train 6.0 s") && !strstr(line, "ETA"),
                  "%s", line);
    pr.width = 0; /* a log file: the full bar */
    eo_progress_format(&pr, 6.0, line, sizeof line);
    ck_assert_ptr_nonnull(strstr(line, "[==============================] 469/469"));
}
END_TEST

/* Issue 26 item 21: in a 50-column terminal the finished epoch line lost
 * the test accuracy and the time its unit (the line was cut at the
 * edge). Fields now go least useful first; the epoch, the loss, the time
 * with its unit and the first of the caller's items stay. */
START_TEST(progress_bar_keeps_what_matters_when_narrow)
{
    char line[256];
    eo_progress pr;
    eo_progress_start(&pr, NULL, EO_PROGRESS_PLAIN, 12, 15, 469);
    pr.done = 469;
    pr.loss = 0.4123;
    pr.images = 469 * 128;
    pr.final = 1;
    pr.extra = "test acc 88.12%, eval 0.2 s";
    for (int w = 46; w <= 160; w++) {
        pr.width = w;
        size_t n = eo_progress_format(&pr, 6.0, line, sizeof line);
        ck_assert_msg(n <= (size_t)w - 1 && strlen(line) == n, "width %d: '%s'", w, line);
        ck_assert_msg(strstr(line, "epoch 12/15") && strstr(line, "loss 0.4123") &&
                          strstr(line, "6.0 s") && strstr(line, "test acc 88.12%"),
                      "width %d: '%s'", w, line);
    }
    pr.width = 50;
    eo_progress_format(&pr, 6.0, line, sizeof line);
    ck_assert_msg(!strstr(line, "img/s") && !strstr(line, "469/469"), "%s", line);
    pr.width = 160; /* room for everything */
    eo_progress_format(&pr, 6.0, line, sizeof line);
    ck_assert_msg(strstr(line, "img/s") && strstr(line, "eval 0.2 s") && strstr(line, "train 6.0 s") &&
                      strstr(line, "469/469") && strstr(line, "[="),
                  "%s", line);
    /* A running epoch keeps its ETA over the speed. */
    pr.final = 0;
    pr.extra = NULL;
    pr.done = 234;
    pr.width = 40;
    eo_progress_format(&pr, 3.0, line, sizeof line);
    ck_assert_msg(strstr(line, "ETA 3 s") && strstr(line, "3.0 s"), "%s", line);
}
END_TEST

Suite *eo_suite_report(void)
{
    Suite *s = suite_create("report");
    TCase *tc = tcase_create("report");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, svg_chart_is_written);
    tcase_add_test(tc, ticks_are_round_numbers);
    tcase_add_test(tc, progress_bar_lines);
    tcase_add_test(tc, progress_bar_fits_the_terminal);
    tcase_add_test(tc, progress_bar_keeps_what_matters_when_narrow);
    suite_add_tcase(s, tc);
    return s;
}
