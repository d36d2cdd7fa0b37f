/* tools/reference/eo-transformer-fixture.c — the EveryO half of the PyTorch parity
 * fixtures (see tools/reference/ref_transformer.py and `make fixtures`):
 *
 *   eo-transformer-fixture gpt OUT.safetensors
 *   eo-transformer-fixture vit OUT.safetensors
 *
 * builds the tiny GPT (V 11, C 16, 2 heads, 2 layers, T 8) or tiny ViT
 * (28x28, 4x4 patches, C 16, 2 heads, 2 layers, 10 classes), initialises
 * it with a fixed seed, then adds N(0, 0.2²) to every parameter so that
 * attention is far from uniform and every bias and LayerNorm parameter
 * matters (GPT-2's N(0, 0.02²) start would make the comparison weak), and
 * writes the weights, a fixed batch of 3 and the sizes (metadata). The
 * reference script then computes logits, loss and gradients from exactly
 * these values, so the parity test never depends on this generator. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h> /* optind */
#include "core/transformer.h"
#include "tools/cli/args.h"
#include "tools/formats/checkpoint.h"
#include "tools/train/pcg32.h"
#include "tools/formats/safetensors.h"

#define B 3

static int fail(eo_ctx *ctx, const char *what)
{
    fprintf(stderr, "eo-transformer-fixture: %s: %s\n", what, eo_last_error(ctx));
    return 1;
}

/* Every parameter += 0.2 N(0, 1), drawn from the context's generator. */
static int perturb(eo_ctx *ctx, const eo_params *ps)
{
    for (int i = 0; i < ps->count; i++) {
        eo_tensor *t = ps->items[i];
        float *d = t->data;
        for (int64_t j = 0; j < eo_numel(t); j++)
            d[j] += 0.2f * eo_rand_normal(ctx);
    }
    return 0;
}

/* Parameters plus the batch tensors, in one file. */
static int write_fixture(eo_ctx *ctx, const eo_params *ps, const char *path, const eo_st_tensor *extra,
                 int nextra, const eo_st_meta *meta, int nmeta)
{
    eo_st_tensor ts[128];
    int n = 0;
    for (int i = 0; i < ps->count && n < 120; i++, n++) {
        const eo_tensor *t = ps->items[i];
        memset(&ts[n], 0, sizeof ts[n]);
        ts[n].name = t->name;
        ts[n].dtype = EO_ST_F32;
        ts[n].rank = t->rank;
        for (int d = 0; d < t->rank; d++)
            ts[n].shape[d] = (uint64_t)t->shape[d];
        ts[n].data = t->data;
    }
    for (int i = 0; i < nextra; i++)
        ts[n++] = extra[i];
    char err[256];
    if (eo_st_write(path, ts, (size_t)n, meta, (size_t)nmeta, err, sizeof err) != EO_OK) {
        fprintf(stderr, "eo-transformer-fixture: %s\n", err);
        return 1;
    }
    (void)ctx;
    printf("wrote %s (%d tensors)\n", path, n);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: eo-transformer-fixture gpt|vit OUT.safetensors\n"
               "Write the tiny GPT or ViT weights and batch the PyTorch parity fixtures start\n"
               "from (make fixtures runs it, then tools/reference/ref_transformer.py).\n"
               "\n"
               "  -h, --help     this text\n"
               "      --version  the program's and the library's version\n");
}

int main(int argc, char **argv)
{
    eo_args_program("eo-transformer-fixture");
    int done = eo_args_help_version(argc, argv, usage);
    if (done >= 0)
        return done;
    static const char *const models[] = {"gpt", "vit"};
    int which;
    if (argc - optind != 2) {
        fprintf(stderr, "eo-transformer-fixture: need a model (gpt or vit) and OUT.safetensors\n");
        return eo_args_try_help();
    }
    if (!eo_arg_choice("model", argv[optind], models, 2, &which))
        return eo_args_try_help();
    argv += optind - 1; /* argv[1] the model, argv[2] the file, as below */
    size_t pb = 8u << 20, sb = 8u << 20;
    void *p = malloc(pb), *s = malloc(sb);
    eo_ctx ctx;
    if (!p || !s || eo_ctx_init(&ctx, p, pb, s, sb) != EO_OK)
        return 1;
    eo_seed(&ctx, 1234);
    eo_pcg32 rng;
    eo_pcg32_seed(&rng, 99, 1);
    int rc;
    if (strcmp(argv[1], "gpt") == 0) {
        const eo_gpt_config c = { 11, 8, 16, 2, 2, 0 };
        eo_gpt m;
        if (eo_gpt_build(&ctx, EO_CPU, &c, &m) != EO_OK)
            return fail(&ctx, "gpt_build");
        perturb(&ctx, &m.params);
        int32_t idx[B * 8], tgt[B * 8];
        for (int i = 0; i < B * 8; i++) {
            idx[i] = (int32_t)eo_pcg32_below(&rng, 11);
            tgt[i] = (int32_t)eo_pcg32_below(&rng, 11);
        }
        eo_st_tensor ex[2] = { { "batch.idx", EO_ST_I32, 2, { B, 8 }, idx, 0, 0, 0, 0 },
                               { "batch.targets", EO_ST_I32, 2, { B, 8 }, tgt, 0, 0, 0, 0 } };
        eo_st_meta meta[6] = { { "model", "gpt" }, { "vocab", "11" }, { "context", "8" },
                               { "d_model", "16" }, { "heads", "2" }, { "layers", "2" } };
        rc = write_fixture(&ctx, &m.params, argv[2], ex, 2, meta, 6);
    } else {
        const eo_vit_config c = { 28, 4, 16, 2, 2, 10 };
        eo_vit m;
        if (eo_vit_build(&ctx, EO_CPU, &c, &m) != EO_OK)
            return fail(&ctx, "vit_build");
        perturb(&ctx, &m.params);
        static float x[B * 784];
        int32_t y[B];
        for (int i = 0; i < B * 784; i++)
            x[i] = (float)eo_pcg32_next(&rng) / 4294967296.0f;
        for (int i = 0; i < B; i++)
            y[i] = (int32_t)eo_pcg32_below(&rng, 10);
        eo_st_tensor ex[2] = { { "batch.x", EO_ST_F32, 2, { B, 784 }, x, 0, 0, 0, 0 },
                               { "batch.y", EO_ST_I32, 1, { B }, y, 0, 0, 0, 0 } };
        eo_st_meta meta[7] = { { "model", "vit" }, { "image", "28" }, { "patch", "4" },
                               { "d_model", "16" }, { "heads", "2" }, { "layers", "2" },
                               { "classes", "10" } };
        rc = write_fixture(&ctx, &m.params, argv[2], ex, 2, meta, 7);
    }
    free(p);
    free(s);
    return rc;
}
