/* tools/train/svgplot.c — the SVG line chart writer (see svgplot.h).
 *
 * Ticks use the classic "nice numbers" rule: pick a step of 1, 2 or 5 times
 * a power of ten giving about five intervals, and widen the axis to whole
 * steps, so labels read 0.2 0.4 0.6 rather than 0.213 0.426. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "tools/cli/errbuf.h"
#include "tools/cli/files.h"
#include "tools/train/svgplot.h"

enum { LEFT = 78, RIGHT = 24, TOP = 46, GAP = 56, BOTTOM = 58, TARGET_TICKS = 6, MAX_TICKS = 16 };

static const char *const palette[] = {"#2563eb", "#dc2626", "#16a34a",
                                      "#d97706", "#7c3aed", "#0891b2"};

/* 1, 2, 5 or 10 times a power of ten near x (x > 0). */
static double nice(double x)
{
    double e = pow(10.0, floor(log10(x)));
    double f = x / e;
    return (f < 1.5 ? 1.0 : f < 3.0 ? 2.0 : f < 7.0 ? 5.0 : 10.0) * e;
}

size_t eo_plot_ticks(double lo, double hi, double *ticks, size_t max_ticks, double *step)
{
    if (!(lo < hi) || !isfinite(hi - lo) || max_ticks == 0)
        return 0;
    double s = nice((hi - lo) / (TARGET_TICKS - 1));
    double first = ceil(lo / s - 1e-9) * s;
    size_t n = 0;
    for (double v = first; v <= hi + s * 1e-9 && n < max_ticks; v = first + (double)n * s)
        ticks[n++] = fabs(v) < s * 1e-9 ? 0.0 : v; /* never print "-0" */
    if (step)
        *step = s;
    return n;
}

typedef struct range {
    double lo, hi;
    int any;
} range;

static void widen(range *r, double v)
{
    if (!r->any) {
        r->lo = r->hi = v;
        r->any = 1;
    } else {
        r->lo = v < r->lo ? v : r->lo;
        r->hi = v > r->hi ? v : r->hi;
    }
}

/* Makes the range non-empty and rounds it out to whole tick steps. */
static void settle(range *r)
{
    if (!r->any) {
        r->lo = 0.0;
        r->hi = 1.0;
    } else if (r->lo == r->hi) {
        double pad = r->lo == 0.0 ? 1.0 : fabs(r->lo) * 0.1;
        r->lo -= pad;
        r->hi += pad;
    }
    if (!isfinite(r->hi - r->lo))
        return; /* values near the double limits: leave the range unrounded */
    double s = nice((r->hi - r->lo) / (TARGET_TICKS - 1));
    r->lo = floor(r->lo / s + 1e-9) * s;
    r->hi = ceil(r->hi / s - 1e-9) * s;
}

static void put_text(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default: fputc(*s, f);
        }
    }
}

static void put_num(FILE *f, double v, double step)
{
    if (fabs(v) >= 1e6 || (v != 0.0 && fabs(v) < 1e-4)) {
        fprintf(f, "%g", v);
        return;
    }
    int dec = step >= 1.0 ? 0 : (int)ceil(-log10(step) - 1e-9);
    fprintf(f, "%.*f", dec, v);
}

typedef struct frame {
    double x0, y0, w, h; /* plot area in pixels */
    range xr, yr;
} frame;

static double px(const frame *fr, double x)
{
    return fr->x0 + (x - fr->xr.lo) / (fr->xr.hi - fr->xr.lo) * fr->w;
}

static double py(const frame *fr, double y)
{
    return fr->y0 + fr->h - (y - fr->yr.lo) / (fr->yr.hi - fr->yr.lo) * fr->h;
}

static void axes(FILE *f, const frame *fr, const eo_plot_panel *pn, const char *xlabel)
{
    double t[MAX_TICKS], step;
    size_t n = eo_plot_ticks(fr->xr.lo, fr->xr.hi, t, MAX_TICKS, &step);
    for (size_t k = 0; k < n; k++) {
        double x = px(fr, t[k]);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>\n", x,
                fr->y0, x, fr->y0 + fr->h);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", x, fr->y0 + fr->h + 18);
        put_num(f, t[k], step);
        fputs("</text>\n", f);
    }
    n = eo_plot_ticks(fr->yr.lo, fr->yr.hi, t, MAX_TICKS, &step);
    for (size_t k = 0; k < n; k++) {
        double y = py(fr, t[k]);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>\n",
                fr->x0, y, fr->x0 + fr->w, y);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", fr->x0 - 8, y + 4);
        put_num(f, t[k], step);
        fputs("</text>\n", f);
    }
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" class=\"frame\"/>\n",
            fr->x0, fr->y0, fr->w, fr->h);
    if (pn->ylabel) {
        double cx = fr->x0 - 58, cy = fr->y0 + fr->h / 2;
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
                   "transform=\"rotate(-90 %.1f %.1f)\">", cx, cy, cx, cy);
        put_text(f, pn->ylabel);
        fputs("</text>\n", f);
    }
    if (xlabel) {
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", fr->x0 + fr->w / 2,
                fr->y0 + fr->h + 40);
        put_text(f, xlabel);
        fputs("</text>\n", f);
    }
}

static int usable(const eo_plot_series *s, size_t i)
{
    return isfinite(s->x[i]) && isfinite(s->y[i]);
}

/* Up to this many points a series also gets a dot per point: with 4
 * epochs a bare line hides where the measurements are. */
#define MARKERS_UP_TO 24

/* One polyline per run of finite points; a run of one point is a dot. */
static void series(FILE *f, const frame *fr, const eo_plot_series *s, const char *color)
{
    size_t finite = 0;
    for (size_t j = 0; j < s->n; j++)
        finite += usable(s, j);
    if (finite > 1 && finite <= MARKERS_UP_TO)
        for (size_t j = 0; j < s->n; j++)
            if (usable(s, j)) {
                fprintf(f, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3\" fill=\"", px(fr, s->x[j]),
                        py(fr, s->y[j]));
                put_text(f, color);
                fputs("\"/>\n", f);
            }
    size_t i = 0;
    while (i < s->n) {
        while (i < s->n && !usable(s, i))
            i++;
        size_t start = i;
        while (i < s->n && usable(s, i))
            i++;
        if (i - start == 1) {
            fprintf(f, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3\" fill=\"", px(fr, s->x[start]),
                    py(fr, s->y[start]));
            put_text(f, color);
            fputs("\"/>\n", f);
        } else if (i - start > 1) {
            fputs("<polyline fill=\"none\" stroke-width=\"2\" stroke=\"", f);
            put_text(f, color);
            fputs("\" points=\"", f);
            for (size_t k = start; k < i; k++)
                fprintf(f, "%s%.2f,%.2f", k > start ? " " : "", px(fr, s->x[k]), py(fr, s->y[k]));
            fputs("\"/>\n", f);
        }
    }
}

static void legend(FILE *f, const frame *fr, const eo_plot_panel *pn)
{
    size_t labelled = 0;
    for (size_t k = 0; k < pn->nseries; k++)
        labelled += pn->series[k].label != NULL;
    if (labelled == 0)
        return;
    /* Top right, unless the curves end up there (an accuracy curve rising
     * to the right): then bottom right. Count the points in the right
     * third of the plot that lie in its upper half. */
    size_t upper = 0, right = 0;
    for (size_t k = 0; k < pn->nseries; k++)
        for (size_t i = 0; i < pn->series[k].n; i++) {
            double x = pn->series[k].x[i], yv = pn->series[k].y[i];
            if (!isfinite(x) || !isfinite(yv) || px(fr, x) < fr->x0 + fr->w * 2.0 / 3.0)
                continue;
            right++;
            upper += py(fr, yv) < fr->y0 + fr->h / 2.0;
        }
    /* The box fits the longest label: about 7 px per character at 12 px
     * sans-serif (UTF-8 continuation bytes take no width), plus the line
     * sample and the margins. */
    size_t longest = 0;
    for (size_t k = 0; k < pn->nseries; k++) {
        size_t n = 0;
        for (const char *c = pn->series[k].label; c && *c; c++)
            n += ((unsigned char)*c & 0xC0) != 0x80;
        longest = n > longest ? n : longest;
    }
    double box_w = 7.0 * (double)longest + 44;
    if (box_w > fr->w - 8)
        box_w = fr->w - 8;
    double box_h = 18.0 * (double)labelled + 6;
    double top = 2 * upper > right ? fr->y0 + fr->h - box_h - 4 : fr->y0 + 4;
    /* A backing box keeps the legend readable where a curve runs under it. */
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"white\" "
               "fill-opacity=\"0.85\" stroke=\"#d1d5db\"/>\n",
            fr->x0 + fr->w - box_w - 12, top, box_w, box_h);
    double y = top + 16;
    for (size_t k = 0; k < pn->nseries; k++) {
        const eo_plot_series *s = &pn->series[k];
        if (!s->label)
            continue;
        const char *c = s->color ? s->color : palette[k % (sizeof palette / sizeof *palette)];
        double x = fr->x0 + fr->w - box_w - 6;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke-width=\"3\" "
                   "stroke=\"", x, y - 4, x + 22, y - 4);
        put_text(f, c);
        fprintf(f, "\"/>\n<text x=\"%.1f\" y=\"%.1f\">", x + 28, y);
        put_text(f, s->label);
        fputs("</text>\n", f);
        y += 18;
    }
}

static eo_status check(const eo_plot *p, char *err, size_t errlen)
{
    if (!p->panels || p->npanels == 0)
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_svg_plot: no panels, expected at least 1");
    for (size_t i = 0; i < p->npanels; i++) {
        const eo_plot_panel *pn = &p->panels[i];
        if (pn->nseries > 0 && !pn->series)
            return eo_errf(err, errlen, EO_ERR_ARG, "eo_svg_plot: panel %zu: NULL series", i);
        for (size_t k = 0; k < pn->nseries; k++)
            if (pn->series[k].n > 0 && (!pn->series[k].x || !pn->series[k].y))
                return eo_errf(err, errlen, EO_ERR_ARG,
                               "eo_svg_plot: panel %zu series %zu: %zu points but NULL x or y", i,
                               k, pn->series[k].n);
    }
    return EO_OK;
}

eo_status eo_svg_plot(const char *path, const eo_plot *p, char *err, size_t errlen)
{
    if (!path || !p)
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_svg_plot: NULL %s", path ? "plot" : "path");
    eo_status st = check(p, err, errlen);
    if (st != EO_OK)
        return st;
    int width = p->width > 0 ? p->width : 760;
    int ph = p->panel_height > 0 ? p->panel_height : 280;
    int top = TOP + (p->subtitle ? 16 : 0);
    int height = top + (int)p->npanels * (ph + GAP) - GAP + BOTTOM;

    /* One x range for every panel, so stacked panels line up. */
    range xr = {0};
    for (size_t i = 0; i < p->npanels; i++)
        for (size_t k = 0; k < p->panels[i].nseries; k++) {
            const eo_plot_series *s = &p->panels[i].series[k];
            for (size_t j = 0; j < s->n; j++)
                if (usable(s, j))
                    widen(&xr, s->x[j]);
        }
    settle(&xr);

    FILE *f;
    st = eo_file_create(path, &f, err, errlen);
    if (st != EO_OK)
        return st;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n",
            width, height, width, height);
    fputs("<style>.grid{stroke:#e5e7eb;stroke-width:1} "
          ".frame{fill:none;stroke:#374151;stroke-width:1} text{fill:#111827}</style>\n", f);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", width, height);
    if (p->title) {
        fprintf(f, "<text x=\"%d\" y=\"26\" text-anchor=\"middle\" font-size=\"16\" "
                   "font-weight=\"bold\">", width / 2);
        put_text(f, p->title);
        fputs("</text>\n", f);
    }
    if (p->subtitle) {
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#4b5563\">",
                width / 2, p->title ? 46 : 26);
        put_text(f, p->subtitle);
        fputs("</text>\n", f);
    }
    for (size_t i = 0; i < p->npanels; i++) {
        const eo_plot_panel *pn = &p->panels[i];
        frame fr = {.x0 = LEFT, .y0 = top + (double)i * (ph + GAP), .w = width - LEFT - RIGHT,
                    .h = ph, .xr = xr};
        for (size_t k = 0; k < pn->nseries; k++) {
            const eo_plot_series *s = &pn->series[k];
            for (size_t j = 0; j < s->n; j++)
                if (usable(s, j))
                    widen(&fr.yr, s->y[j]);
        }
        settle(&fr.yr);
        axes(f, &fr, pn, p->xlabel);
        for (size_t k = 0; k < pn->nseries; k++) {
            const char *c = pn->series[k].color;
            series(f, &fr, &pn->series[k], c ? c : palette[k % (sizeof palette / sizeof *palette)]);
        }
        legend(f, &fr, pn);
    }
    fputs("</svg>\n", f);
    return eo_file_close(f, path, err, errlen);
}
