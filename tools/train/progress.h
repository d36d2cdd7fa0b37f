/* tools/train/progress.h — a one-line progress bar for training epochs:
 *
 *   epoch 3/10 [=========>          ] 234/469  loss 0.4123  12345 img/s  3.2 s  ETA 3.1 s
 *   epoch 3/10 [====================] 469/469  loss 0.4012  12345 img/s  train 6.3 s  test acc 88.12%  eval 0.2 s
 *
 * On a terminal the line is redrawn in place (carriage return), at most
 * about ten times a second so drawing never costs training time, and it
 * is fitted to the terminal's width because a line that wraps leaves a
 * copy of itself behind at every redraw: the bar shrinks, then goes, then
 * the less useful fields go (step count, img/s, the evaluation's time,
 * the word "train", the double spaces, the ETA), and only a terminal too
 * narrow for the epoch, loss, time with its unit and test accuracy cuts
 * the line. When the output is a file or pipe, nothing is drawn until the
 * epoch ends and then one plain line is printed, so logs stay readable
 * instead of filling with hundreds of partial lines. The final line's
 * time is the training part of the epoch only (up to the last update);
 * what follows it (evaluation) reports its own time in `extra`. */
#ifndef EO_TOOLS_PROGRESS_H
#define EO_TOOLS_PROGRESS_H

#include <stddef.h>
#include <stdio.h>

typedef enum eo_progress_mode {
    EO_PROGRESS_AUTO,  /* a terminal if isatty() says so */
    EO_PROGRESS_TTY,   /* redraw in place regardless */
    EO_PROGRESS_PLAIN, /* final line only */
} eo_progress_mode;

typedef struct eo_progress {
    FILE *out;
    int tty;
    int epoch, epochs;  /* shown 1-based as given */
    size_t total;       /* steps in the epoch */
    size_t done;        /* steps finished so far */
    double loss;        /* latest (or running mean) loss, as the caller likes */
    size_t images;      /* examples processed this epoch, for img/s */
    double t0, last_draw;
    double t_last;      /* time of the last update: the end of training */
    int final;          /* formatting the finished line (no ETA) */
    int width;          /* columns the line must stay under; 0: no limit */
    size_t reserve;     /* columns kept free after the line (0 when drawn) */
    const char *extra;  /* the caller's items ("test acc 88.12%, eval 0.2 s") or NULL */
    size_t last_len;    /* length of the last drawn line, to blank leftovers */
} eo_progress;

/* The width of the terminal behind f: its window size (TIOCGWINSZ), else
 * $COLUMNS, else 80. */
int eo_progress_columns(FILE *f);

/* Starts an epoch's bar on out (NULL means stdout). */
void eo_progress_start(eo_progress *p, FILE *out, eo_progress_mode mode, int epoch, int epochs,
                       size_t total);

/* Records progress; redraws on a terminal if ~0.1 s passed since the last
 * draw. Cheap enough to call every step. */
void eo_progress_update(eo_progress *p, size_t done, double loss, size_t images);

/* Prints the final line for the epoch followed by a newline; `extra` (may
 * be NULL) is appended: items separated by ", ", of which a narrow
 * terminal keeps the first ("test acc 88.12%, eval 0.2 s"). */
void eo_progress_finish(eo_progress *p, const char *extra);

/* The line as it would be drawn after `elapsed` seconds, into buf
 * (always terminated); returns its length. Exposed for tests. */
size_t eo_progress_format(const eo_progress *p, double elapsed, char *buf, size_t len);

#endif
