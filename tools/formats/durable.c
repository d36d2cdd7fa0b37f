/* tools/formats/durable.c — see durable.h. The steps are in one function
 * so their order (data synced before the rename, the rename synced by the
 * directory) can be read in one place and cannot drift apart between the
 * writers that use it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tools/cli/errbuf.h"
#include "tools/cli/files.h"
#include "tools/formats/durable.h"

static int posix_open(const char *path, int flags, mode_t mode)
{
    return open(path, flags, mode);
}

const eo_durable_io eo_durable_posix = {posix_open, write, fsync, close, rename, unlink};

/* Process-wide only so that tests can reach the writers under the
 * checkpoint and safetensors calls; nothing else changes it. */
static const eo_durable_io *current = &eo_durable_posix;

const eo_durable_io *eo_durable_set_io(const eo_durable_io *io)
{
    const eo_durable_io *old = current;
    current = io ? io : &eo_durable_posix;
    return old;
}

struct eo_durable_file {
    const eo_durable_io *io;
    int fd;
    int failed;             /* a write failed: errno in err_no */
    int err_no;
    unsigned long long written; /* bytes that reached io->write */
    size_t n;               /* bytes waiting in buf */
    unsigned char buf[1 << 16];
};

/* Every byte of p, continuing after a short write and an EINTR. A write
 * that makes no progress without an errno reads as a full disk. */
static int write_out(eo_durable_file *f, const unsigned char *p, size_t n)
{
    while (n > 0) {
        errno = 0;
        ssize_t w = f->io->write(f->fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            f->failed = 1;
            f->err_no = w < 0 && errno ? errno : ENOSPC;
            return 0;
        }
        p += (size_t)w;
        n -= (size_t)w;
        f->written += (unsigned long long)w;
    }
    return 1;
}

static int flush(eo_durable_file *f)
{
    size_t n = f->n;
    f->n = 0;
    return f->failed ? 0 : write_out(f, f->buf, n);
}

int eo_durable_put(eo_durable_file *f, const void *buf, size_t n)
{
    const unsigned char *p = buf;
    if (f->failed)
        return 0;
    if (n >= sizeof f->buf) /* large tensors go straight through */
        return flush(f) && write_out(f, p, n);
    if (f->n + n > sizeof f->buf && !flush(f))
        return 0;
    memcpy(f->buf + f->n, p, n);
    f->n += n;
    return 1;
}

/* The directory holding path: its fsync makes the rename durable. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t n = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, slash ? path : ".", n);
        d[n] = '\0';
    }
    return d;
}

static eo_status fail(char *err, size_t errlen, const char *path, const char *step, int e,
                      const char *after)
{
    return eo_errf(err, errlen, EO_ERR_IO, "%s: %s failed: %s%s", path, step, strerror(e), after);
}

static eo_status sync_dir(const eo_durable_io *io, const char *path, char *err, size_t errlen)
{
    static const char *const kept = " (the new file is in place and complete, but its name may "
                                    "not survive a power cut)";
    char *dir = dir_of(path);
    if (!dir)
        return eo_errf(err, errlen, EO_ERR_OOM, "%s: out of memory", path);
    eo_status st = EO_OK;
    int fd = io->open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (fd < 0) {
        st = fail(err, errlen, path, "directory fsync", errno, kept);
    } else {
        /* EINVAL: a file system that cannot sync a directory; there is
         * nothing more to do for the name there. */
        if (io->fsync(fd) != 0 && errno != EINVAL)
            st = fail(err, errlen, path, "directory fsync", errno, kept);
        io->close(fd);
    }
    free(dir);
    return st;
}

eo_status eo_durable_replace(const char *path, eo_durable_fill fill, void *arg, char *err,
                             size_t errlen)
{
    if (!path || !*path || !fill)
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_durable_replace: %s",
                       !path ? "NULL path" : !*path ? "empty path" : "NULL fill function");
    const eo_durable_io *io = current;
    /* The finished file is renamed over path, which replaces whatever the
     * name is: only a regular file (or nothing) may be there, and the
     * temporary name gets the same check. */
    eo_status st = eo_file_check_target(path, err, errlen);
    if (st != EO_OK)
        return st;
    size_t tl = strlen(path) + 5;
    char *tmp = malloc(tl);
    eo_durable_file *f = malloc(sizeof *f);
    if (!tmp || !f) {
        free(tmp);
        free(f);
        return eo_errf(err, errlen, EO_ERR_OOM, "%s: out of memory", path);
    }
    snprintf(tmp, tl, "%s.tmp", path);
    st = eo_file_check_target(tmp, err, errlen);
    int fd = -1, made = 0;
    if (st == EO_OK) {
        /* O_NOFOLLOW: a link put in place since the check is refused;
         * O_NONBLOCK: so is a FIFO, at once, instead of waiting for a
         * reader (writes to a regular file do not heed it). */
        fd = io->open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                      0666);
        if (fd < 0)
            st = eo_errf(err, errlen, EO_ERR_IO, "%s: cannot create %s: %s", path, tmp,
                         errno == ELOOP ? "it is a symbolic link" : strerror(errno));
        made = fd >= 0;
    }
    struct stat sb;
    if (st == EO_OK && (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))) {
        st = eo_errf(err, errlen, EO_ERR_IO, "%s: %s is not a regular file; refusing to write it",
                     path, tmp);
        made = 0; /* not ours to remove */
    }
    if (st == EO_OK) {
        f->io = io;
        f->fd = fd;
        f->failed = 0;
        f->err_no = 0;
        f->written = 0;
        f->n = 0;
        /* A fill that stops at a failed put returns EO_OK: the write's
         * own errno is the message. */
        st = fill(f, arg, err, errlen);
        if (st == EO_OK && !flush(f))
            st = eo_errf(err, errlen, EO_ERR_IO,
                         "%s: write failed after %llu bytes: %s (the previous file is kept)", path,
                         f->written, strerror(f->err_no));
    }
    static const char *const kept = " (the previous file is kept)";
    if (st == EO_OK && io->fsync(fd) != 0)
        st = fail(err, errlen, path, "fsync", errno, kept);
    if (fd >= 0) {
        int closed = io->close(fd) == 0;
        int e = errno;
        fd = -1;
        if (st == EO_OK && !closed)
            st = fail(err, errlen, path, "close", e, kept);
    }
    int renamed = 0;
    if (st == EO_OK) {
        renamed = io->rename(tmp, path) == 0;
        if (!renamed)
            st = fail(err, errlen, path, "rename", errno, kept);
    }
    if (st != EO_OK && made && !renamed)
        io->unlink(tmp); /* best effort: a crash here leaves it for the next write */
    if (st == EO_OK)
        st = sync_dir(io, path, err, errlen);
    free(f);
    free(tmp);
    return st;
}
