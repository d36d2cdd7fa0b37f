/* core/format.c — a small bounded formatter for error messages.
 *
 * The library is freestanding, so there is no snprintf. Messages only
 * need strings, integers, a few floats and tensor shapes; this is that
 * and nothing more. Output is always NUL-terminated and truncated to fit.
 *
 * The dtype names live here, not in tensor.c: printing is what they are
 * for, and it keeps the dependency one way (tensor.c reports errors
 * through eo_fail; the formatter needs nothing of tensor.c, only the
 * eo_tensor struct's shape fields). */
#include "alloc/text.h"
#include "core/internal.h"

const char *eo_dtype_name(eo_dtype dt)
{
    switch (dt) {
    case EO_F32: return "f32";
    case EO_I32: return "i32";
    case EO_BF16: return "bf16";
    case EO_F16: return "f16";
    default: return "?";
    }
}

const char *eo_device_name(eo_device dev)
{
    switch (dev) {
    case EO_CPU: return "cpu";
    case EO_CUDA: return "cuda";
    default: return "?";
    }
}

typedef struct { char *buf; size_t cap, len; } sink;

static void put(sink *s, char c)
{
    if (s->len + 1 < s->cap)
        s->buf[s->len] = c;
    s->len++;
}

static void puts_(sink *s, const char *str)
{
    if (!str)
        str = "(null)";
    while (*str)
        put(s, *str++);
}

static void put_u(sink *s, unsigned long long v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        put(s, tmp[--n]);
}

static void put_i(sink *s, long long v)
{
    if (v < 0) {
        put(s, '-');
        put_u(s, (unsigned long long)(-(v + 1)) + 1);
    } else {
        put_u(s, (unsigned long long)v);
    }
}

/* Fixed-point with up to 6 significant decimals: enough for messages. */
static void put_f(sink *s, double v)
{
    if (v != v) { puts_(s, "nan"); return; }
    if (v < 0) { put(s, '-'); v = -v; }
    if (v > 1e18) { puts_(s, "inf"); return; }
    unsigned long long ip = (unsigned long long)v;
    double frac = v - (double)ip;
    unsigned long long fp = (unsigned long long)(frac * 1e6 + 0.5);
    if (fp >= 1000000ull) { ip++; fp -= 1000000ull; }
    put_u(s, ip);
    if (fp) {
        char d[6];
        for (int i = 5; i >= 0; i--) { d[i] = (char)('0' + fp % 10); fp /= 10; }
        int last = 5;
        while (last > 0 && d[last] == '0') last--;
        put(s, '.');
        for (int i = 0; i <= last; i++) put(s, d[i]);
    }
}

static void put_shape(sink *s, const eo_tensor *t)
{
    if (!t) { puts_(s, "NULL"); return; }
    if (t->rank < 0 || t->rank > EO_MAX_RANK) { puts_(s, "[bad rank]"); return; }
    put(s, '[');
    for (int i = 0; i < t->rank; i++) {
        if (i) put(s, 'x');
        put_i(s, t->shape[i]);
    }
    if (t->rank) put(s, ' ');
    puts_(s, eo_dtype_name(t->dtype));
    if (t->device != EO_CPU) puts_(s, " cuda");
    put(s, ']');
}

size_t eo_vformat(char *buf, size_t cap, const char *fmt, va_list ap)
{
    sink s = { buf, cap, 0 };
    for (const char *p = fmt; *p; p++) {
        if (*p != '%') { put(&s, *p); continue; }
        p++;
        switch (*p) {
        case 's': puts_(&s, va_arg(ap, const char *)); break;
        case 'd': put_i(&s, va_arg(ap, int)); break;
        case 'u': put_u(&s, va_arg(ap, unsigned)); break;
        case 'f': put_f(&s, va_arg(ap, double)); break;
        case 'T': put_shape(&s, va_arg(ap, const eo_tensor *)); break;
        case 'z': p++; put_u(&s, va_arg(ap, size_t)); break;   /* %zu */
        case 'l':
            if (p[1] == 'l' && p[2] == 'u') { p += 2; put_u(&s, va_arg(ap, unsigned long long)); }
            else if (p[1] == 'l') { p += 2; put_i(&s, va_arg(ap, long long)); }
            else { p++; put_i(&s, va_arg(ap, long)); }           /* %ld */
            break;
        case '%': put(&s, '%'); break;
        default: put(&s, '%'); if (*p) put(&s, *p); else p--; break;
        }
    }
    if (cap)
        buf[s.len < cap ? s.len : cap - 1] = '\0';
    return s.len;
}

size_t eo_format(char *buf, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t n = eo_vformat(buf, cap, fmt, ap);
    va_end(ap);
    return n;
}

/* Does msg start with "op:"? */
static int names(const char *msg, const char *op)
{
    return eo_text_starts(msg, op) && msg[eo_text_len(op)] == ':';
}

eo_status eo_fail(eo_ctx *ctx, eo_status s, const char *fmt, ...)
{
    if (!ctx)
        return s;
    char msg[sizeof ctx->err];
    va_list ap;
    va_start(ap, fmt);
    eo_vformat(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* The call the caller made comes first, whatever inner op failed. */
    if (ctx->op && !names(msg, ctx->op))
        eo_format(ctx->err, sizeof ctx->err, "%s: %s", ctx->op, msg);
    else
        eo_format(ctx->err, sizeof ctx->err, "%s", msg);
    ctx->last_status = s;
    return s;
}

eo_status eo_refail(eo_ctx *ctx, eo_status s, const char *what, const char *which)
{
    char rest[sizeof ctx->err];
    const char *m = ctx->err;
    if (ctx->op && names(m, ctx->op)) { /* eo_fail puts it back in front */
        m += eo_text_len(ctx->op) + 1;
        if (*m == ' ')
            m++;
    }
    eo_format(rest, sizeof rest, "%s", m);
    if (what)
        return eo_fail(ctx, s, "%s %s: %s", what, which, rest);
    return eo_fail(ctx, s, "%s", rest);
}

eo_status eo_need(eo_ctx *ctx, int ok, const char *what, const char *rule, double v)
{
    return ok ? EO_OK : eo_fail(ctx, EO_ERR_ARG, "%s must be %s, got %f", what, rule, v);
}
