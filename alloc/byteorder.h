/* alloc/byteorder.h — little-endian loads and stores, the one place the
 * library and its tools deal with byte order.
 *
 * File formats fix their byte order (safetensors: little-endian data and
 * header length; IDX: big-endian header), the host does not. Reading a
 * value byte by byte and shifting gives the same number on any host, so
 * code that goes through these helpers needs no #ifdef; eo_host_is_le
 * says whether a little-endian buffer can be used in place (a float
 * array in a caller's flash image, core/safetensors.h) or must be
 * converted. memcpy is the only library call (the freestanding set). */
#ifndef EO_BYTEORDER_H
#define EO_BYTEORDER_H

#include <stdint.h>
#include <string.h>

/* 1 on a little-endian host. A constant after optimisation. */
static inline int eo_host_is_le(void)
{
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

static inline uint16_t eo_le16_load(const void *p)
{
    const unsigned char *b = (const unsigned char *)p;
    return (uint16_t)(b[0] | b[1] << 8);
}

static inline uint32_t eo_le32_load(const void *p)
{
    const unsigned char *b = (const unsigned char *)p;
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static inline uint64_t eo_le64_load(const void *p)
{
    const unsigned char *b = (const unsigned char *)p;
    return (uint64_t)eo_le32_load(b) | (uint64_t)eo_le32_load(b + 4) << 32;
}

static inline void eo_le16_store(void *p, uint16_t v)
{
    unsigned char *b = (unsigned char *)p;
    b[0] = (unsigned char)v;
    b[1] = (unsigned char)(v >> 8);
}

static inline void eo_le32_store(void *p, uint32_t v)
{
    unsigned char *b = (unsigned char *)p;
    for (int k = 0; k < 4; k++)
        b[k] = (unsigned char)(v >> 8 * k);
}

static inline void eo_le64_store(void *p, uint64_t v)
{
    eo_le32_store(p, (uint32_t)v);
    eo_le32_store((unsigned char *)p + 4, (uint32_t)(v >> 32));
}

#endif
