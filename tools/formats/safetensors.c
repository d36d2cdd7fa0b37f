/* tools/formats/safetensors.c — lookups on a loaded file, releasing it, and
 * the f32 -> 16-bit roundings for writing BF16/F16 (see safetensors.h).
 * The dtype table is the library's (core/safetensors.c). */
#include <stdlib.h>
#include <string.h>
#include "tools/formats/safetensors.h"

/* f32 -> bf16, nearest-even: add 0x7fff plus the lowest kept bit, then
 * truncate; a NaN is made quiet instead (the addition could carry it
 * into an infinity). */
uint16_t eo_st_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)(u >> 16 | 0x40);
    u += 0x7fffu + (u >> 16 & 1);
    return (uint16_t)(u >> 16);
}

/* f32 -> f16, nearest-even, by IEEE 754 binary16's layout: normal
 * numbers keep 10 bits of mantissa, below 2^-14 the value is a multiple
 * of 2^-24 (subnormal), from 65520 up it is an infinity. */
uint16_t eo_st_f32_to_f16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sign = (uint16_t)(u >> 16 & 0x8000);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00 | (a >> 13 & 0x3ff)); /* NaN, quiet */
    if (a >= 0x477ff000u)                                   /* >= 65520: rounds to inf */
        return (uint16_t)(sign | 0x7c00);
    if (a >= 0x38800000u) {                                 /* normal in f16 */
        uint32_t r = a - 0x38000000u;                       /* rebias 127 -> 15 */
        r += 0xfffu + (r >> 13 & 1);
        return (uint16_t)(sign | r >> 13);
    }
    if (a < 0x33000000u) /* below half the smallest subnormal: zero */
        return sign;
    /* Subnormal: the mantissa with its hidden bit, shifted to units of 2^-24. */
    uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e; /* 14..24 */
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1)))
        q++;
    return (uint16_t)(sign | q);
}

const eo_st_tensor *eo_st_find(const eo_st_file *f, const char *name)
{
    if (!f || !name)
        return NULL;
    for (size_t i = 0; i < f->count; i++)
        if (strcmp(f->tensors[i].name, name) == 0)
            return &f->tensors[i];
    return NULL;
}

const char *eo_st_meta_get(const eo_st_file *f, const char *key)
{
    if (!f || !key)
        return NULL;
    for (size_t i = 0; i < f->nmeta; i++)
        if (strcmp(f->meta[i].key, key) == 0)
            return f->meta[i].value;
    return NULL;
}

void eo_st_close(eo_st_file *f)
{
    if (!f)
        return;
    free(f->buf);
    free(f->strings);
    memset(f, 0, sizeof *f);
}
