/* tools/formats/safetensors_read.c — reading safetensors files with the
 * library's parser (core/safetensors.h, eo_st_image_parse): the file is
 * read into memory, the parser's workspace comes from malloc, and the
 * result is the same eo_st_file the tools always used. No parsing here;
 * what is added is the data checksum (EO_ST_CHECKSUM_KEY), which the
 * freestanding library does not know. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tools/cli/errbuf.h"
#include "tools/cli/files.h"
#include "tools/formats/safetensors.h"

/* The data checksum, when the header has one (EO_ST_CHECKSUM_KEY): a
 * value that is not 8 hex digits, or one that the data does not match,
 * is a corrupt file. Files from other writers have none and pass. */
static eo_status verify_checksum(const eo_st_file *f, const char *label, char *err, size_t errlen)
{
    const char *v = eo_st_meta_get(f, EO_ST_CHECKSUM_KEY);
    if (!v)
        return EO_OK;
    uint32_t want = 0;
    size_t k = 0;
    for (; v[k] && k < 9; k++) {
        char c = v[k];
        int d = c >= '0' && c <= '9' ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            break;
        want = want << 4 | (uint32_t)d;
    }
    if (k != 8 || v[k])
        return eo_errf(err, errlen, EO_ERR_FORMAT,
                       "%s: corrupt: metadata \"%s\" is \"%.32s\", expected 8 hex digits (a "
                       "CRC-32)", label, EO_ST_CHECKSUM_KEY, v);
    uint32_t got = eo_st_crc32(0, f->data, f->data_size);
    if (got != want)
        return eo_errf(err, errlen, EO_ERR_FORMAT,
                       "%s: corrupt: the tensor data's CRC-32 is %08lx, the header says %08lx "
                       "(%zu data bytes; the file was damaged or changed after it was written)",
                       label, (unsigned long)got, (unsigned long)want, f->data_size);
    return EO_OK;
}

eo_status eo_st_parse(const void *buf, size_t size, const char *label, eo_st_file *f, char *err,
                      size_t errlen)
{
    if (!f || (!buf && size > 0))
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_st_parse: NULL %s", f ? "buffer" : "file");
    memset(f, 0, sizeof *f);
    label = label ? label : "(buffer)";
    size_t wb = eo_st_workspace_bytes(buf, size);
    char *work = wb ? malloc(wb) : NULL;
    if (wb && !work)
        return eo_errf(err, errlen, EO_ERR_OOM, "%s: cannot allocate %zu bytes for the header",
                       label, wb);
    eo_st_image im;
    eo_status st = eo_st_image_parse(buf, size, work, wb, label, &im, err, errlen);
    if (st != EO_OK) {
        free(work);
        return st;
    }
    /* The tables live in the workspace this file owns: handing them out
     * writable is safe. */
    f->tensors = (eo_st_tensor *)(uintptr_t)im.tensors;
    f->count = im.count;
    f->meta = (eo_st_meta *)(uintptr_t)im.meta;
    f->nmeta = im.nmeta;
    f->data = im.data;
    f->data_size = im.data_size;
    f->strings = work;
    f->image = buf;
    f->size = size;
    st = verify_checksum(f, label, err, errlen);
    if (st != EO_OK) {
        free(work);
        memset(f, 0, sizeof *f);
    }
    return st;
}

eo_status eo_st_read(const char *path, eo_st_file *f, char *err, size_t errlen)
{
    if (!path || !f)
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_st_read: NULL %s", path ? "file" : "path");
    memset(f, 0, sizeof *f);
    /* Only a regular file has a size to check the header against; the
     * shared opener refuses a FIFO (without waiting on it), a device or a
     * directory by name. st_size is an off_t, so a file larger than this
     * process can address is refused here, before anything is allocated. */
    FILE *fp;
    uint64_t fsize;
    eo_status ost = eo_file_open_read(path, "safetensors", &fp, &fsize, err, errlen);
    if (ost != EO_OK)
        return ost;
    if (fsize > (uint64_t)PTRDIFF_MAX) {
        fclose(fp);
        return eo_errf(err, errlen, EO_ERR_IO,
                       "%s: %llu bytes is more than this process can hold (at most %td)", path,
                       (unsigned long long)fsize, (ptrdiff_t)PTRDIFF_MAX);
    }
    size_t size = (size_t)fsize;
    /* Aligned as malloc aligns, so the data area of a file from an
     * aligned writer is float-aligned too. */
    unsigned char *buf = malloc(size ? size : 1);
    if (!buf) {
        fclose(fp);
        return eo_errf(err, errlen, EO_ERR_OOM, "%s: cannot allocate %zu bytes", path, size);
    }
    size_t got = fread(buf, 1, size, fp);
    int bad = ferror(fp);
    fclose(fp);
    if (got != size || bad) {
        free(buf);
        return eo_errf(err, errlen, EO_ERR_IO, "%s: read %zu of %zu bytes%s", path, got, size,
                       bad ? " (read error)" : " (file shrank while reading)");
    }
    eo_status st = eo_st_parse(buf, size, path, f, err, errlen);
    if (st != EO_OK) {
        free(buf);
        return st;
    }
    f->buf = buf;
    return EO_OK;
}
