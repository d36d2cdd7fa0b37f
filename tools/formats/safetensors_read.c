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
#include <sys/stat.h>
#include "tools/cli/errbuf.h"
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
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return eo_errf(err, errlen, EO_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    /* The size comes from fstat, and only a regular file has one: fopen
     * opens a directory for reading, where seeking to the end and ftell
     * give LLONG_MAX on Linux (a malloc of 8 EiB), and a FIFO or device
     * has no size at all. st_size is an off_t, so a file larger than this
     * process can address is refused here, before anything is allocated. */
    struct stat sb;
    if (fstat(fileno(fp), &sb) != 0) {
        int e = errno;
        fclose(fp);
        return eo_errf(err, errlen, EO_ERR_IO, "%s: cannot find the file size: %s", path,
                       strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        fclose(fp);
        return eo_errf(err, errlen, EO_ERR_IO, "%s: is %s, expected a regular safetensors file",
                       path, S_ISDIR(sb.st_mode) ? "a directory" : "not a regular file");
    }
    if (sb.st_size < 0 || (uintmax_t)sb.st_size > (uintmax_t)PTRDIFF_MAX) {
        fclose(fp);
        return eo_errf(err, errlen, EO_ERR_IO,
                       "%s: %jd bytes is more than this process can hold (at most %td)", path,
                       (intmax_t)sb.st_size, (ptrdiff_t)PTRDIFF_MAX);
    }
    size_t size = (size_t)sb.st_size;
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
