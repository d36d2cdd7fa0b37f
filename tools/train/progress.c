/* tools/train/progress.c — the epoch progress bar (see progress.h). */
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "tools/train/progress.h"

enum { BAR = 30 };
#define REDRAW_EVERY 0.1 /* seconds */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void eo_progress_start(eo_progress *p, FILE *out, eo_progress_mode mode, int epoch, int epochs,
                       size_t total)
{
    memset(p, 0, sizeof *p);
    p->out = out ? out : stdout;
    p->tty = mode == EO_PROGRESS_TTY || (mode == EO_PROGRESS_AUTO && isatty(fileno(p->out)));
    p->epoch = epoch;
    p->epochs = epochs;
    p->total = total;
    p->t0 = now();
    p->last_draw = -1.0;
}

size_t eo_progress_format(const eo_progress *p, double elapsed, char *buf, size_t len)
{
    if (!buf || len == 0)
        return 0;
    char bar[BAR + 1];
    size_t fill = p->total ? (p->done >= p->total ? BAR : p->done * BAR / p->total) : BAR;
    for (size_t k = 0; k < BAR; k++)
        bar[k] = k < fill ? '=' : ' ';
    if (fill < BAR && fill > 0)
        bar[fill - 1] = '>';
    bar[BAR] = '\0';
    double rate = elapsed > 0 ? (double)p->images / elapsed : 0.0;
    int w = snprintf(buf, len, "epoch %d/%d [%s] %zu/%zu  loss %.4f  %.0f img/s  %.1f s", p->epoch,
                     p->epochs, bar, p->done, p->total, p->loss, rate, elapsed);
    if (w < 0)
        return 0;
    return (size_t)w < len ? (size_t)w : len - 1;
}

static void draw(eo_progress *p, double t, const char *extra, int final)
{
    char line[256];
    size_t n = eo_progress_format(p, t - p->t0, line, sizeof line);
    if (extra && n + 2 < sizeof line)
        n += (size_t)snprintf(line + n, sizeof line - n, "  %s", extra);
    n = n < sizeof line ? n : sizeof line - 1;
    if (p->tty) {
        /* Pad with spaces when the new line is shorter, so no tail of the
         * previous one is left on screen. */
        fprintf(p->out, "\r%s%*s", line, (int)(p->last_len > n ? p->last_len - n : 0), "");
        p->last_len = n;
    } else {
        fputs(line, p->out);
    }
    if (final)
        fputc('\n', p->out);
    fflush(p->out);
    p->last_draw = t;
}

void eo_progress_update(eo_progress *p, size_t done, double loss, size_t images)
{
    p->done = done;
    p->loss = loss;
    p->images = images;
    if (!p->tty)
        return;
    double t = now();
    if (p->last_draw < 0 || t - p->last_draw >= REDRAW_EVERY)
        draw(p, t, NULL, 0);
}

void eo_progress_finish(eo_progress *p, const char *extra)
{
    draw(p, now(), extra, 1);
}
