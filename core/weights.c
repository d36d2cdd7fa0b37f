/* core/weights.c — binding a safetensors image to a model's parameters
 * (eo_weights_bind, core/safetensors.h), and the read-only rule for
 * parameters whose data stays in the caller's image.
 *
 * All or nothing in two passes: the first parses the image and checks
 * every parameter (name, shape, dtype, whether it can stay in place) and
 * takes the staging buffer the conversions need; only then does the
 * second write anything. The 16-bit widenings are the exact ones of
 * ops/cpu/half.h, the one place the library converts 16-bit floats. */
#include "alloc/byteorder.h"
#include "alloc/text.h"
#include "core/internal.h"
#include "core/safetensors.h"
#include "ops/cpu/half.h"

int eo_tensor_is_readonly(const eo_tensor *t) { return t && t->readonly; }

eo_status eo_expect_writable(eo_ctx *ctx, const char *op, const eo_tensor *t)
{
    if (t && t->readonly)
        return eo_fail(ctx, EO_ERR_STATE,
                       "%s: %s %T uses read-only weights (bound in place from the caller's "
                       "image): it can be read, not written or trained (bind with "
                       "EO_BIND_COPY to train)",
                       op, t->name ? t->name : "tensor", t);
    return EO_OK;
}

eo_status eo_param_borrowed(eo_ctx *ctx, eo_device device, const char *name, int rank,
                            const int64_t *shape, eo_tensor **out)
{
    int64_t n;
    size_t bytes;
    if (device != EO_CPU)
        return eo_fail(ctx, EO_ERR_DEVICE, "'%s': borrowed weights live in a caller's host "
                                           "buffer: the layer must be on the CPU", name);
    if (rank < 0 || rank > EO_MAX_RANK || (rank > 0 && !shape))
        return eo_fail(ctx, EO_ERR_AXIS, "'%s': rank %d outside 0..%d", name, rank, EO_MAX_RANK);
    for (int i = 0; i < rank; i++)
        if (shape[i] < 0)
            return eo_fail(ctx, EO_ERR_SHAPE, "'%s': negative size on axis %d", name, i);
    if (eo_shape_numel(rank, shape, &n) || eo_bytes_overflow(n, sizeof(float), &bytes))
        return eo_fail(ctx, EO_ERR_SHAPE, "'%s': too large", name);
    eo_tensor *t;
    EO_CHECK(eo_host_alloc(ctx, EO_PERSIST, sizeof *t, (void **)&t));
    eo_tensor zero = {0};
    *t = zero;
    t->dtype = EO_F32;
    t->device = EO_CPU;
    t->rank = rank;
    for (int i = 0; i < rank; i++)
        t->shape[i] = shape[i];
    eo_contiguous_strides(rank, t->shape, t->stride);
    t->lifetime = EO_PERSIST;
    t->readonly = 1; /* data NULL: no storage until bound in place */
    t->name = name;
    *out = t;
    return EO_OK;
}

/* How parameter t takes entry e. */
typedef enum { TAKE_IN_PLACE, TAKE_RAW, TAKE_SWAP32, TAKE_SWAP16, TAKE_BF16, TAKE_F16 } take_kind;

static int same_shape(const eo_tensor *t, const eo_st_tensor *e)
{
    if (e->rank != t->rank)
        return 0;
    for (int d = 0; d < t->rank; d++)
        if (e->shape[d] != (uint64_t)t->shape[d])
            return 0;
    return 1;
}

static void st_shape(char *buf, size_t len, const eo_st_tensor *e)
{
    size_t at = eo_format(buf, len, "[");
    for (int d = 0; d < e->rank && at < len; d++)
        at += eo_format(buf + at, len - at, d ? "x%llu" : "%llu", (unsigned long long)e->shape[d]);
    if (at < len)
        eo_format(buf + at, len - at, "]");
}

static eo_status missing(eo_ctx *ctx, const eo_tensor *t, const eo_st_image *im)
{
    /* Name what the image does hold: usually a prefix or a model mismatch
     * that one look at the list explains. */
    char list[200];
    size_t at = 0;
    list[0] = '\0';
    for (size_t k = 0; k < im->count; k++) {
        size_t l = eo_text_len(im->tensors[k].name);
        if (at + l + 6 >= sizeof list) {
            eo_format(list + at, sizeof list - at, " ...");
            break;
        }
        at += eo_format(list + at, sizeof list - at, " %s", im->tensors[k].name);
    }
    return eo_fail(ctx, EO_ERR_ARG, "no tensor '%s' in the image (the model needs it); the "
                                    "image has %zu:%s", t->name, im->count, list);
}

static eo_status plan(eo_ctx *ctx, const eo_tensor *t, const eo_st_tensor *e, int flags,
                      take_kind *k)
{
    char have[96];
    if (!same_shape(t, e)) {
        st_shape(have, sizeof have, e);
        return eo_fail(ctx, EO_ERR_SHAPE, "'%s': the model has %T, the image has %s %s", t->name,
                       t, have, eo_st_dtype_name(e->dtype));
    }
    int le = eo_host_is_le();
    if (t->dtype == EO_F32 && e->dtype == EO_ST_F32) {
        if ((flags & EO_BIND_IN_PLACE) && t->device == EO_CPU && le &&
            (uintptr_t)e->data % sizeof(float) == 0) {
            *k = TAKE_IN_PLACE;
            return EO_OK;
        }
        *k = le ? TAKE_RAW : TAKE_SWAP32;
    } else if (t->dtype == EO_F32 && (e->dtype == EO_ST_BF16 || e->dtype == EO_ST_F16)) {
        *k = e->dtype == EO_ST_BF16 ? TAKE_BF16 : TAKE_F16;
    } else if ((t->dtype == EO_BF16 && e->dtype == EO_ST_BF16) ||
               (t->dtype == EO_F16 && e->dtype == EO_ST_F16)) {
        *k = le ? TAKE_RAW : TAKE_SWAP16;
    } else {
        return eo_fail(ctx, EO_ERR_DTYPE, "'%s': the model's %T cannot take the image's %s "
                                          "(F32, BF16 and F16 go into f32; BF16 into bf16, F16 "
                                          "into f16)",
                       t->name, t, eo_st_dtype_name(e->dtype));
    }
    if (t->readonly)
        return eo_fail(ctx, EO_ERR_STATE, "'%s' is %s and the image's %s data %s: it has no "
                                          "storage of its own to copy into",
                       t->name, t->data ? "bound in place (read-only)" : "borrowed",
                       eo_st_dtype_name(e->dtype),
                       !(flags & EO_BIND_IN_PLACE) ? "is to be copied (EO_BIND_COPY)"
                       : e->dtype != EO_ST_F32     ? "needs converting"
                                                   : "is not 4-byte aligned");
    return EO_OK;
}

/* Staged conversion of e into host memory dst (numel elements of t). */
static void convert(take_kind k, const eo_st_tensor *e, size_t numel, void *dst)
{
    const unsigned char *s = e->data;
    float *f = dst;
    uint16_t *h = dst;
    for (size_t i = 0; i < numel; i++) {
        switch (k) {
        case TAKE_SWAP32: {
            uint32_t u = eo_le32_load(s + 4 * i);
            memcpy(f + i, &u, 4);
            break;
        }
        case TAKE_SWAP16: h[i] = eo_le16_load(s + 2 * i); break;
        case TAKE_BF16: f[i] = eo_bf16_to_f32(eo_le16_load(s + 2 * i)); break;
        case TAKE_F16: f[i] = eo_f16_to_f32(eo_le16_load(s + 2 * i)); break;
        default: break;
        }
    }
}

static eo_status bind(eo_ctx *ctx, const eo_params *ps, const void *image, size_t size, int flags)
{
    if (!ps || (!image && size > 0) || !ps->items)
        return eo_fail(ctx, EO_ERR_ARG, "NULL %s", !ps || !ps->items ? "parameter list" : "image");
    if (flags & ~EO_BIND_IN_PLACE)
        return eo_fail(ctx, EO_ERR_ARG, "unknown flags %d (EO_BIND_COPY or EO_BIND_IN_PLACE)",
                       flags);
    EO_CHECK(eo_expect_params(ctx, "weights_bind", ps));
    char msg[256];
    size_t wb = eo_st_workspace_bytes(image, size);
    void *work = NULL;
    if (wb)
        EO_CHECK(eo_host_alloc(ctx, EO_STEP, wb, &work));
    eo_st_image im;
    eo_status s = eo_st_image_parse(image, size, work, wb, "image", &im, msg, sizeof msg);
    if (s != EO_OK)
        return eo_fail(ctx, s, "%s", msg);
    /* Pass 1: check everything, size the staging buffer. */
    size_t stage = 0;
    take_kind *kinds;
    EO_CHECK(eo_host_alloc(ctx, EO_STEP, (size_t)ps->count * sizeof *kinds + 1, (void **)&kinds));
    for (int i = 0; i < ps->count; i++) {
        const eo_tensor *t = ps->items[i];
        if (!t || !t->name)
            return eo_fail(ctx, EO_ERR_ARG, "parameter %d has no name", i);
        const eo_st_tensor *e = eo_st_image_find(&im, t->name);
        if (!e)
            return missing(ctx, t, &im);
        EO_CHECK(plan(ctx, t, e, flags, &kinds[i]));
        size_t bytes = (size_t)eo_numel(t) * eo_dtype_size(t->dtype);
        if (kinds[i] != TAKE_IN_PLACE && kinds[i] != TAKE_RAW && bytes > stage)
            stage = bytes;
    }
    void *buf = NULL;
    if (stage)
        EO_CHECK(eo_host_alloc(ctx, EO_STEP, stage, &buf));
    /* Pass 2: copies first (the only step that can fail: a device upload),
     * then the in-place pointers. */
    for (int i = 0; i < ps->count; i++) {
        eo_tensor *t = ps->items[i];
        const eo_st_tensor *e = eo_st_image_find(&im, t->name);
        size_t numel = (size_t)eo_numel(t), bytes = numel * eo_dtype_size(t->dtype);
        if (kinds[i] == TAKE_IN_PLACE)
            continue;
        const void *src = e->data;
        if (kinds[i] != TAKE_RAW) {
            convert(kinds[i], e, numel, buf);
            src = buf;
        }
        EO_CHECK(eo_write(ctx, t, src, bytes));
    }
    for (int i = 0; i < ps->count; i++) {
        if (kinds[i] != TAKE_IN_PLACE)
            continue;
        eo_tensor *t = ps->items[i];
        t->data = (void *)(uintptr_t)eo_st_image_find(&im, t->name)->data;
        t->readonly = 1;
    }
    return EO_OK;
}

EO_PUBLIC(weights_bind, (eo_ctx *ctx, const eo_params *ps, const void *image, size_t size,
                         int flags),
          (ctx, ps, image, size, flags))
{
    /* The workspace and staging live only for the call. */
    eo_mark m = eo_mark_get(ctx);
    eo_status s = bind(ctx, ps, image, size, flags);
    if (s == EO_OK)
        eo_rewind(ctx, m);
    return s;
}
