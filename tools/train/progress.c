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

/* The parts a line may lose when the terminal is narrow, least useful
 * first: the step count, the speed, what follows the caller's first
 * `extra` item (the evaluation's time), the word "train", the double
 * spaces between fields, then a running epoch's ETA. What is never dropped: the epoch, the
 * loss, the time with its unit and the caller's first item (the test
 * accuracy). Only a terminal narrower than those is cut. */
enum { F_COUNTS = 1, F_RATE = 2, F_EXTRA_REST = 4, F_ETA = 8, F_TRAIN = 16, F_WIDE = 32 };
static const int drop_order[] = {F_COUNTS, F_RATE, F_EXTRA_REST, F_TRAIN, F_WIDE, F_ETA};

static size_t compose(const eo_progress *p, double elapsed, int keep, int bar_w, char *buf,
                      size_t len)
{
    const char *sep = keep & F_WIDE ? "  " : " ";
    size_t n = 0;
#define PUT(...)                                                                                   \
    do {                                                                                           \
        int w_ = snprintf(buf + n, len - n, __VA_ARGS__);                                          \
        if (w_ > 0)                                                                                \
            n = n + (size_t)w_ < len ? n + (size_t)w_ : len - 1;                                   \
    } while (0)
    PUT("epoch %d/%d", p->epoch, p->epochs);
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
        PUT(" [%s]", bar);
    }
    if (keep & F_COUNTS)
        PUT("%s%zu/%zu", bar_w > 0 ? " " : sep, p->done, p->total);
    PUT("%sloss %.4f", sep, p->loss);
    if (keep & F_RATE)
        PUT("%s%.0f img/s", sep, elapsed > 0 ? (double)p->images / elapsed : 0.0);
    PUT("%s%s%.1f s", sep, p->final && (keep & F_TRAIN) ? "train " : "", elapsed);
    if ((keep & F_ETA) && !p->final && p->done > 0 && p->done < p->total)
        PUT("%sETA %.0f s", sep, elapsed / (double)p->done * (double)(p->total - p->done));
    if (p->extra && *p->extra) {
        /* The caller's items are separated by ", "; the first one stays. */
        const char *cut = strstr(p->extra, ", ");
        int first = cut && !(keep & F_EXTRA_REST) ? (int)(cut - p->extra) : (int)strlen(p->extra);
        PUT("%s%.*s", sep, first, p->extra);
    }
#undef PUT
    return n;
}

size_t eo_progress_format(const eo_progress *p, double elapsed, char *buf, size_t len)
{
    if (!buf || len == 0)
        return 0;
    buf[0] = '\0';
    int all = F_COUNTS | F_RATE | F_EXTRA_REST | F_ETA | F_TRAIN | F_WIDE;
    if (p->width <= 0) /* a file or pipe: everything, the full bar */
        return compose(p, elapsed, all, BAR, buf, len);
    size_t limit = (size_t)p->width - 1 > p->reserve ? (size_t)p->width - 1 - p->reserve : 0;
    /* The bar takes what the other fields leave, between MIN_BAR and BAR;
     * below that it goes first, then the fields in drop_order. */
    size_t n = compose(p, elapsed, all, 0, buf, len);
    if (n + 2 + MIN_BAR + 1 <= limit) { /* " [" + bar + "]" */
        size_t room = limit - n - 3;
        return compose(p, elapsed, all, (int)(room > BAR ? BAR : room), buf, len);
    }
    int keep = all;
    for (size_t i = 0; n > limit && i < sizeof drop_order / sizeof *drop_order; i++) {
        keep &= ~drop_order[i];
        n = compose(p, elapsed, keep, 0, buf, len);
    }
    if (n > limit) { /* never wrap: cut */
        n = limit;
        buf[n] = '\0';
    }
    return n;
}

static void draw(eo_progress *p, double t, const char *extra, int final)
{
    char line[320];
    p->final = final;
    p->extra = extra;
    p->reserve = 0;
    /* The finished line reports the training time, not what came after. */
    size_t n = eo_progress_format(p, (final ? p->t_last : t) - p->t0, line, sizeof line);
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
