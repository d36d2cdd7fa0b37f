/* tools/bench/predicted.c — reading the model's estimates back for the GPU
 * benchmark (predicted.h says why). A small fixed table: the sim bench
 * writes a few dozen rows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tools/bench/perfmodel.h"
#include "tools/bench/predicted.h"
#include "tools/cli/files.h"

#define MAX_ROWS 256

static struct row {
    char gpu[16], kernel[32], shape[32], limiter[16];
    double ms;
} rows[MAX_ROWS];
static int nrows;

int eo_predicted_load(const char *csv_path)
{
    FILE *f;
    char err[256];
    if (eo_file_open_read(csv_path, "CSV", &f, NULL, err, sizeof err) != EO_OK)
        return -1;
    char line[512];
    nrows = 0;
    while (fgets(line, sizeof line, f) && nrows < MAX_ROWS) {
        struct row r;
        if (sscanf(line, "%15[^,],%31[^,],%31[^,],%lf,%15[^,]", r.gpu, r.kernel, r.shape, &r.ms,
                   r.limiter) == 5)
            rows[nrows++] = r;
    }
    fclose(f);
    return 0;
}

double eo_predicted_ms(const char *device_name, const char *kernel, const char *shape,
                       const char **limiter)
{
    const eo_gpu_spec *g = eo_gpu_find(device_name);
    for (int i = 0; g && i < nrows; i++)
        if (!strcmp(rows[i].gpu, g->name) && !strcmp(rows[i].kernel, kernel) &&
            !strcmp(rows[i].shape, shape)) {
            if (limiter)
                *limiter = rows[i].limiter;
            return rows[i].ms;
        }
    return -1;
}
