/* tools/formats/safetensors_read.c — reading safetensors files with the
 * library's parser (core/safetensors.h, eo_st_image_parse): the file is
 * read into memory, the parser's workspace comes from malloc, and the
 * result is the same eo_st_file the tools always used. No parsing here. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tools/cli/errbuf.h"
#include "tools/cli/files.h"
#include "tools/formats/safetensors.h"

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
    return EO_OK;
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
