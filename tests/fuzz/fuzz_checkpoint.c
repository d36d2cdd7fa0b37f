/* tests/fuzz/fuzz_checkpoint.c — checkpoint loading
 * (tools/formats/checkpoint.c) into a small model: fc1 3->4 and fc2 4->2,
 * both with bias.
 *
 * The property is the one checkpoint.h promises: all or nothing. When the
 * load fails, every parameter holds exactly its old bits; when it
 * succeeds, every parameter holds exactly the file's bits (F32; BF16 and
 * F16 entries are widened, which fuzz_weights.c checks value by value). The model is
 * put back to its initial values after each input, so runs do not depend
 * on one another. */
#include <stdlib.h>
#include <string.h>
#include "alloc/byteorder.h"
#include "core/nn.h"
#include "tests/fuzz/fuzz.h"
#include "tools/formats/checkpoint.h"
#include "tools/formats/safetensors.h"

enum { ARENA = 64 << 10, MAXVALS = 64 };

static struct model {
    int ready;
    eo_ctx ctx;
    eo_params ps;
    eo_module fc1, fc2;
    float initial[MAXVALS];
    size_t nvals;
} M;
static unsigned char persist[ARENA], step[ARENA];

static size_t gather(float *out)
{
    size_t n = 0;
    for (int i = 0; i < M.ps.count; i++) {
        size_t k = (size_t)eo_numel(M.ps.items[i]);
        memcpy(out + n, M.ps.items[i]->data, k * sizeof(float));
        n += k;
    }
    return n;
}

static void scatter(const float *in)
{
    size_t n = 0;
    for (int i = 0; i < M.ps.count; i++) {
        size_t k = (size_t)eo_numel(M.ps.items[i]);
        memcpy(M.ps.items[i]->data, in + n, k * sizeof(float));
        n += k;
    }
}

static void build(void)
{
    if (M.ready)
        return;
    if (eo_ctx_init(&M.ctx, persist, sizeof persist, step, sizeof step) != EO_OK ||
        eo_params_init(&M.ctx, &M.ps, 4) != EO_OK ||
        eo_linear_init(&M.ctx, &M.ps, EO_CPU, "fc1", 3, 4, 1, EO_INIT_KAIMING_UNIFORM, &M.fc1) !=
            EO_OK ||
        eo_linear_init(&M.ctx, &M.ps, EO_CPU, "fc2", 4, 2, 1, EO_INIT_KAIMING_UNIFORM, &M.fc2) !=
            EO_OK)
        eo_fuzz_fail("cannot build the model: %s", eo_last_error(&M.ctx));
    M.nvals = gather(M.initial);
    M.ready = 1;
}

int eo_fuzz_checkpoint(const uint8_t *data, size_t size)
{
    build();
    const char *path = eo_fuzz_file(data, size);
    if (!path)
        return 0;
    char err[512] = "";
    eo_status st = eo_checkpoint_load(&M.ctx, &M.ps, path, err, sizeof err);
    float now[MAXVALS];
    gather(now);
    if (st != EO_OK) {
        EO_FUZZ_CHECK(memcmp(now, M.initial, M.nvals * sizeof(float)) == 0,
                      "a failed load (%s) changed the parameters", err);
        EO_FUZZ_CHECK(eo_fuzz_mentions(err, path), "message lacks the file: %s", err);
        return 0;
    }
    /* Accepted: each parameter now holds its entry's bytes exactly. */
    eo_st_file f;
    EO_FUZZ_CHECK(eo_st_parse(data, size, "again", &f, err, sizeof err) == EO_OK,
                  "the loader accepted what the reader refuses: %s", err);
    for (int i = 0; i < M.ps.count; i++) {
        const eo_tensor *t = M.ps.items[i];
        const eo_st_tensor *e = eo_st_find(&f, t->name);
        EO_FUZZ_CHECK(e && (e->dtype == EO_ST_F32 || e->dtype == EO_ST_BF16 ||
                            e->dtype == EO_ST_F16) &&
                          e->nbytes == (size_t)eo_numel(t) * eo_st_dtype_size(e->dtype),
                      "'%s' was loaded from a tensor that does not fit it", t->name);
        if (e->dtype == EO_ST_F32) /* 16-bit widening: the weights target checks it */
            for (size_t k = 0; k < e->nbytes / 4; k++) {
                uint32_t u;
                memcpy(&u, (const char *)t->data + 4 * k, 4);
                EO_FUZZ_CHECK(eo_le32_load((const char *)e->data + 4 * k) == u,
                              "'%s' does not hold the file's values", t->name);
            }
    }
    eo_st_close(&f);
    scatter(M.initial);
    return 0;
}

EO_FUZZ_ENTRY(checkpoint)
