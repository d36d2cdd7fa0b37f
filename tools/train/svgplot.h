/* tools/train/svgplot.h — line charts as standalone SVG files.
 *
 * Training writes its curves (loss, accuracy) where a person can open them
 * in any browser, without Python or a plotting library on the machine. A
 * chart is one or more panels stacked vertically that share the x axis
 * (e.g. loss above, accuracy below), each with its own y axis, ticks at
 * round numbers (1, 2 or 5 times a power of ten) and a legend sized to its
 * labels. A series of a few points also gets a dot per point.
 *
 * Non-finite points (NaN, +-inf) are skipped and break the line there, so a
 * diverged run still plots what it has; a lone point is drawn as a dot. */
#ifndef EO_TOOLS_SVGPLOT_H
#define EO_TOOLS_SVGPLOT_H

#include <stddef.h>
#include "alloc/status.h"

typedef struct eo_plot_series {
    const char *label; /* legend text; NULL for none */
    const char *color; /* any SVG colour ("#1f6feb", "red"); NULL picks one */
    const double *x, *y;
    size_t n;
} eo_plot_series;

typedef struct eo_plot_panel {
    const char *ylabel;
    const eo_plot_series *series;
    size_t nseries;
} eo_plot_panel;

typedef struct eo_plot {
    const char *title;
    const char *xlabel;
    const eo_plot_panel *panels;
    size_t npanels;   /* >= 1 */
    int width;        /* pixels; 0 means 760 */
    int panel_height; /* pixels per panel; 0 means 280 */
    const char *subtitle; /* a smaller second line under the title (the run's
                             settings, the machine), or NULL */
} eo_plot;

/* Writes the chart to path. EO_ERR_ARG for NULL arguments, no panels, or a
 * series with n > 0 and NULL x or y; EO_ERR_IO if the file cannot be
 * written. */
eo_status eo_svg_plot(const char *path, const eo_plot *p, char *err, size_t errlen);

/* Round tick positions covering [lo, hi]: writes at most max_ticks values
 * into ticks and returns how many, with *step the spacing. Exposed for
 * tests; lo < hi required (returns 0 otherwise). */
size_t eo_plot_ticks(double lo, double hi, double *ticks, size_t max_ticks, double *step);

#endif
