/* tools/dist/accum.c — see accum.h. */
#include <stdlib.h>
#include <string.h>
#include "tools/cli/errbuf.h"
#include "tools/dist/accum.h"

eo_status eo_grad_accum_add(eo_grad_accum *a, eo_ctx *ctx, const eo_params *ps, int k,
                            char *err, size_t errlen)
{
    size_t n = (size_t)eo_params_numel(ps);
    if (a->n != n) {
        free(a->sum);
        free(a->tmp);
        a->sum = malloc(n * sizeof(float));
        a->tmp = malloc(n * sizeof(float));
        a->n = a->sum && a->tmp ? n : 0;
        if (!a->n)
            return eo_errf(err, errlen, EO_ERR_OOM, "micro-batches: no memory for %zu floats", n);
    }
    float *dst = k == 0 ? a->sum : a->tmp;
    size_t at = 0;
    for (int i = 0; i < ps->count; i++) {
        const eo_tensor *g = ps->items[i]->grad;
        size_t c = (size_t)eo_numel(g);
        eo_status s = eo_read(ctx, g, dst + at, c * sizeof(float));
        if (s != EO_OK)
            return eo_errf(err, errlen, s, "%s", eo_last_error(ctx));
        at += c;
    }
    if (k > 0)
        for (size_t i = 0; i < n; i++)
            a->sum[i] += a->tmp[i];
    return EO_OK;
}

eo_status eo_grad_accum_store(eo_grad_accum *a, eo_ctx *ctx, const eo_params *ps, char *err,
                              size_t errlen)
{
    size_t at = 0;
    for (int i = 0; i < ps->count; i++) {
        eo_tensor *g = ps->items[i]->grad;
        size_t c = (size_t)eo_numel(g);
        eo_status s = eo_write(ctx, g, a->sum + at, c * sizeof(float));
        if (s != EO_OK)
            return eo_errf(err, errlen, s, "%s", eo_last_error(ctx));
        at += c;
    }
    return EO_OK;
}

void eo_grad_accum_free(eo_grad_accum *a)
{
    free(a->sum);
    free(a->tmp);
    memset(a, 0, sizeof *a);
}
