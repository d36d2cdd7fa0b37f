/* tests/fuzz/fuzz_gpt2.c — GPT-2 files (tools/formats/gpt2.c): the bytes
 * parsed as safetensors (eo_st_parse), then eo_gpt2_inspect, and when the
 * model it describes fits a small arena, eo_gpt2_load into it.
 *
 * What must hold for any input: a refusal is EO_ERR_FORMAT with a message
 * naming the input; an accepted inspection describes a model that can be
 * asked for (sizes >= 1, heads dividing d_model, tied 0 or 1); a load is
 * all or nothing (a failed one leaves every parameter's bits as they
 * were), and a successful one gives each parameter exactly its tensor's
 * values (F32 entries; BF16/F16 widenings are fuzz_weights.c's), the four
 * Conv1D weights of a Hugging Face file transposed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "alloc/byteorder.h"
#include "tests/fuzz/fuzz.h"
#include "tools/formats/gpt2.h"
#include "tools/formats/safetensors.h"

enum { PERSIST = 1 << 20, STEP = 1 << 16 };
static unsigned char persist[PERSIST], step[STEP];

static int conv1d(const char *n)
{
    static const char *const tails[4] = { ".attn.c_attn.weight", ".attn.c_proj.weight",
                                          ".mlp.c_fc.weight", ".mlp.c_proj.weight" };
    size_t len = strlen(n);
    for (int i = 0; i < 4; i++) {
        size_t k = strlen(tails[i]);
        if (len >= k && strcmp(n + len - k, tails[i]) == 0)
            return 1;
    }
    return 0;
}

/* Every parameter against its F32 entry. */
static void check_loaded(const eo_gpt *m, const eo_st_file *f, const eo_gpt2_info *info)
{
    for (int i = 0; i < m->params.count; i++) {
        const eo_tensor *p = m->params.items[i];
        char name[300];
        int head = strcmp(p->name, "lm_head.weight") == 0;
        snprintf(name, sizeof name, "%s%s", info->prefixed && !head ? "transformer." : "",
                 p->name);
        const eo_st_tensor *t = eo_st_find(f, name);
        EO_FUZZ_CHECK(t != NULL, "loaded, but %s is not in the file", name);
        if (t->dtype != EO_ST_F32)
            continue;
        const float *v = p->data;
        int tr = info->layout == EO_GPT2_HF && conv1d(p->name);
        int64_t rows = p->rank == 2 ? p->shape[0] : 1, cols = p->shape[p->rank - 1];
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++) {
                int64_t at = tr ? c * rows + r : r * cols + c; /* file [in, out] */
                uint32_t want = eo_le32_load((const unsigned char *)t->data + 4 * at), got;
                memcpy(&got, &v[r * cols + c], 4);
                EO_FUZZ_CHECK(got == want, "%s[%lld, %lld]: %08x, the file has %08x", p->name,
                              (long long)r, (long long)c, got, want);
            }
    }
}

int eo_fuzz_gpt2(const uint8_t *data, size_t size)
{
    eo_st_file f;
    char err[512];
    if (eo_st_parse(data, size, "input", &f, err, sizeof err) != EO_OK)
        return 0; /* the parser's own target is fuzz_safetensors */
    eo_gpt2_info info;
    eo_status s = eo_gpt2_inspect(&f, "input", 0, &info, err, sizeof err);
    if (s != EO_OK) {
        EO_FUZZ_CHECK(s == EO_ERR_FORMAT && eo_fuzz_mentions(err, "input"),
                      "inspect: status %d, message '%s'", (int)s, err);
        eo_st_close(&f);
        return 0;
    }
    const eo_gpt_config *c = &info.cfg;
    EO_FUZZ_CHECK(c->vocab >= 1 && c->context >= 1 && c->d_model >= 1 && c->layers >= 1 &&
                      c->heads >= 1 && c->d_model % c->heads == 0 && (c->tied | 1) == 1,
                  "inspect accepted vocab %lld context %lld d_model %lld heads %lld layers %lld "
                  "tied %d", (long long)c->vocab, (long long)c->context, (long long)c->d_model,
                  (long long)c->heads, (long long)c->layers, c->tied);
    eo_ctx ctx;
    eo_gpt m;
    if (eo_ctx_init(&ctx, persist, PERSIST, step, STEP) != EO_OK ||
        eo_gpt_build(&ctx, EO_CPU, c, &m) != EO_OK) { /* too large for the arena */
        eo_st_close(&f);
        return 0;
    }
    int64_t n = eo_params_numel(&m.params);
    float *before = malloc((size_t)(n ? n : 1) * sizeof *before), *at = before;
    for (int i = 0; before && i < m.params.count; i++) {
        size_t k = (size_t)eo_numel(m.params.items[i]);
        memcpy(at, m.params.items[i]->data, k * sizeof *at);
        at += k;
    }
    s = eo_gpt2_load(&ctx, &m, &f, &info, "input", err, sizeof err);
    if (s != EO_OK) {
        EO_FUZZ_CHECK(s == EO_ERR_FORMAT && eo_fuzz_mentions(err, "input"),
                      "load: status %d, message '%s'", (int)s, err);
        at = before;
        for (int i = 0; before && i < m.params.count; i++) {
            size_t k = (size_t)eo_numel(m.params.items[i]);
            EO_FUZZ_CHECK(memcmp(at, m.params.items[i]->data, k * sizeof *at) == 0,
                          "a failed load changed %s", m.params.items[i]->name);
            at += k;
        }
    } else {
        check_loaded(&m, &f, &info);
    }
    free(before);
    eo_st_close(&f);
    return 0;
}

EO_FUZZ_ENTRY(gpt2)
