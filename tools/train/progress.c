/* tools/train/progress.c — the epoch progress bar (see progress.h). */
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include "tools/train/progress.h"

enum { BAR = 30, MIN_BAR = 8 };
#define REDRAW_EVERY 0.1 /* seconds */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int eo_progress_columns(FILE *f)
{
    struct winsize ws;
    if (f && ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    const char *c = getenv("COLUMNS");
    char *end;
    long n = c && *c >= '0' && *c <= '9' ? strtol(c, &end, 10) : 0;
    return n > 0 && n < 10000 && !*end ? (int)n : 80;
}

void eo_progress_start(eo_progress *p, FILE *out, eo_progress_mode mode, int epoch, int epochs,
                       size_t total)
{
    memset(p, 0, sizeof *p);
    p->out = out ? out : stdout;
    p->tty = mode == EO_PROGRESS_TTY || (mode == EO_PROGRESS_AUTO && isatty(fileno(p->out)));
    p->width = p->tty ? eo_progress_columns(p->out) : 0;
    p->epoch = epoch;
    p->epochs = epochs;
    p->total = total;
    p->t0 = now();
    p->t_last = p->t0;
    p->last_draw = -1.0;
}

size_t eo_progress_format(const eo_progress *p, double elapsed, char *buf, size_t len)
{
    if (!buf || len == 0)
        return 0;
    char head[48], counts[48], tail[160];
    snprintf(head, sizeof head, "epoch %d/%d", p->epoch, p->epochs);
    snprintf(counts, sizeof counts, "%zu/%zu", p->done, p->total);
    double rate = elapsed > 0 ? (double)p->images / elapsed : 0.0;
    int t = snprintf(tail, sizeof tail, "  loss %.4f  %.0f img/s  %s%.1f s", p->loss, rate,
                     p->final ? "train " : "", elapsed);
    if (!p->final && p->done > 0 && p->done < p->total && t > 0 && (size_t)t < sizeof tail)
        snprintf(tail + t, sizeof tail - (size_t)t, "  ETA %.0f s",
                 elapsed / (double)p->done * (double)(p->total - p->done));
    /* The bar takes what the width leaves, between MIN_BAR and BAR; on a
     * terminal too narrow even for that the bar goes (and, once the epoch
     * is done, the step count with it), so the numbers stay readable. */
    int bar_w = BAR;
    if (p->width > 0) {
        int room = p->width - 1 - (int)(strlen(head) + 4 + strlen(counts) + strlen(tail)) -
                   (int)p->reserve;
        bar_w = room < MIN_BAR ? 0 : room > BAR ? BAR : room;
    }
    int w;
    if (bar_w > 0) {
        char bar[BAR + 1];
        size_t fill = p->total ? (p->done >= p->total ? (size_t)bar_w
                                                      : p->done * (size_t)bar_w / p->total)
                               : (size_t)bar_w;
        for (int k = 0; k < bar_w; k++)
            bar[k] = (size_t)k < fill ? '=' : ' ';
        if (fill < (size_t)bar_w && fill > 0)
            bar[fill - 1] = '>';
        bar[bar_w] = '\0';
        w = snprintf(buf, len, "%s [%s] %s%s", head, bar, counts, tail);
    } else {
        w = snprintf(buf, len, "%s%s%s%s", head, p->final ? "" : "  ", p->final ? "" : counts, tail);
    }
    if (w < 0)
        return 0;
    size_t n = (size_t)w < len ? (size_t)w : len - 1;
    if (p->width > 0 && n > (size_t)p->width - 1) /* never wrap: cut */
        n = (size_t)p->width - 1;
    buf[n] = '\0';
    return n;
}

static void draw(eo_progress *p, double t, const char *extra, int final)
{
    char line[320];
    p->final = final;
    p->reserve = extra ? strlen(extra) + 2 : 0;
    /* The finished line reports the training time, not what came after. */
    size_t n = eo_progress_format(p, (final ? p->t_last : t) - p->t0, line, sizeof line);
    if (extra && n + 2 < sizeof line)
        n += (size_t)snprintf(line + n, sizeof line - n, "  %s", extra);
    n = n < sizeof line ? n : sizeof line - 1;
    if (p->tty && p->width > 0 && n > (size_t)p->width - 1) {
        n = (size_t)p->width - 1;
        line[n] = '\0';
    }
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
    double t = now();
    p->t_last = t;
    if (!p->tty)
        return;
    if (p->last_draw < 0 || t - p->last_draw >= REDRAW_EVERY)
        draw(p, t, NULL, 0);
}

void eo_progress_finish(eo_progress *p, const char *extra)
{
    draw(p, now(), extra, 1);
}
