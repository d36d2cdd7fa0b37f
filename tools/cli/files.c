/* tools/cli/files.c — see files.h. One place decides what a program may
 * open by name, so the FIFO / device / symlink checks cannot be forgotten
 * by the next reader or writer someone adds. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tools/cli/errbuf.h"
#include "tools/cli/files.h"

const char *eo_file_kind(unsigned mode)
{
    mode_t m = (mode_t)mode;
    if (S_ISREG(m)) return "a regular file";
    if (S_ISDIR(m)) return "a directory";
    if (S_ISLNK(m)) return "a symbolic link";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

/* Clears O_NONBLOCK again: it was there only so that open could not wait
 * on a FIFO; reads from the regular file behave the same either way, but
 * the stream handed out should be an ordinary one. */
static int blocking(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0;
}

eo_status eo_file_open_read(const char *path, const char *what, FILE **fp, uint64_t *size,
                            char *err, size_t errlen)
{
    if (!path || !fp)
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_file_open_read: NULL %s",
                       path ? "stream" : "path");
    *fp = NULL;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return eo_errf(err, errlen, EO_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return eo_errf(err, errlen, EO_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return eo_errf(err, errlen, EO_ERR_IO, "%s: is %s, expected a regular %s%sfile", path,
                       eo_file_kind((unsigned)sb.st_mode), what ? what : "", what ? " " : "");
    }
    FILE *f = blocking(fd) ? fdopen(fd, "rb") : NULL;
    if (!f) {
        int e = errno;
        close(fd);
        return eo_errf(err, errlen, EO_ERR_IO, "%s: cannot open: %s", path, strerror(e));
    }
    if (size)
        *size = sb.st_size > 0 ? (uint64_t)sb.st_size : 0;
    *fp = f;
    return EO_OK;
}

eo_status eo_file_read_all(const char *path, const char *what, size_t max, char **buf,
                           size_t *len, char *err, size_t errlen)
{
    if (!buf || !len)
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_file_read_all: NULL %s",
                       buf ? "length" : "buffer");
    *buf = NULL;
    *len = 0;
    FILE *f;
    uint64_t size;
    eo_status st = eo_file_open_read(path, what, &f, &size, err, errlen);
    if (st != EO_OK)
        return st;
    /* max < SIZE_MAX keeps size + 1 (the NUL) from wrapping. */
    if (max >= SIZE_MAX)
        max = SIZE_MAX - 1;
    if (size > max) {
        fclose(f);
        return eo_errf(err, errlen, EO_ERR_IO, "%s: %llu bytes, more than the %zu this reads",
                       path, (unsigned long long)size, max);
    }
    char *b = malloc((size_t)size + 1);
    if (!b) {
        fclose(f);
        return eo_errf(err, errlen, EO_ERR_OOM, "%s: cannot allocate %llu bytes", path,
                       (unsigned long long)size);
    }
    /* One byte more than the size: a file that grew since fstat is seen. */
    size_t got = fread(b, 1, (size_t)size, f);
    int more = got == size && fgetc(f) != EOF;
    int bad = ferror(f);
    fclose(f);
    if (bad || got != size || more) {
        free(b);
        return eo_errf(err, errlen, EO_ERR_IO, "%s: %s while reading (%zu of %llu bytes)", path,
                       bad ? "read error" : more ? "the file grew" : "the file shrank", got,
                       (unsigned long long)size);
    }
    b[got] = '\0';
    *buf = b;
    *len = got;
    return EO_OK;
}

eo_status eo_file_check_target(const char *path, char *err, size_t errlen)
{
    if (!path || !*path)
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_file_check_target: %s path",
                       path ? "empty" : "NULL");
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return errno == ENOENT ? EO_OK
                               : eo_errf(err, errlen, EO_ERR_IO, "%s: cannot stat: %s", path,
                                         strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return eo_errf(err, errlen, EO_ERR_IO,
                       "%s: is %s; refusing to replace it (give the name of a regular file)",
                       path, eo_file_kind((unsigned)sb.st_mode));
    return EO_OK;
}

eo_status eo_file_create(const char *path, FILE **fp, char *err, size_t errlen)
{
    if (!fp)
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_file_create: NULL stream");
    *fp = NULL;
    eo_status st = eo_file_check_target(path, err, errlen);
    if (st != EO_OK)
        return st;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
    if (fd < 0)
        return eo_errf(err, errlen, EO_ERR_IO, "%s: cannot create: %s", path,
                       errno == ELOOP ? "it is a symbolic link" : strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        int e = errno;
        close(fd);
        return S_ISREG(sb.st_mode) ? eo_errf(err, errlen, EO_ERR_IO, "%s: cannot stat: %s", path,
                                             strerror(e))
                                   : eo_errf(err, errlen, EO_ERR_IO, "%s: is %s; refusing to "
                                             "write to it", path,
                                             eo_file_kind((unsigned)sb.st_mode));
    }
    FILE *f = blocking(fd) ? fdopen(fd, "wb") : NULL;
    if (!f) {
        int e = errno;
        close(fd);
        return eo_errf(err, errlen, EO_ERR_IO, "%s: cannot create: %s", path, strerror(e));
    }
    *fp = f;
    return EO_OK;
}

eo_status eo_file_probe_target(const char *path, char *err, size_t errlen)
{
    eo_status st = eo_file_check_target(path, err, errlen);
    if (st != EO_OK)
        return st;
    size_t n = strlen(path) + 5;
    char *probe = malloc(n);
    if (!probe)
        return eo_errf(err, errlen, EO_ERR_OOM, "%s: out of memory", path);
    snprintf(probe, n, "%s.tmp", path);
    FILE *f;
    st = eo_file_create(probe, &f, err, errlen);
    if (st == EO_OK) {
        fclose(f);
        remove(probe);
    }
    free(probe);
    return st;
}

eo_status eo_file_close(FILE *fp, const char *path, char *err, size_t errlen)
{
    if (!fp)
        return EO_OK;
    /* ferror first: errno from a failed fprintf long ago is gone, but a
     * flush at fclose usually fails again the same way and says why. */
    int bad = ferror(fp);
    errno = 0;
    int closed = fclose(fp) == 0;
    if (bad || !closed)
        return eo_errf(err, errlen, EO_ERR_IO, "%s: write failed: %s", path ? path : "(output)",
                       !closed && errno ? strerror(errno) : "an earlier write failed");
    return EO_OK;
}

static const char *stdout_program = "eo";

static void close_stdout(void)
{
    int bad = ferror(stdout);
    errno = 0;
    int flushed = fflush(stdout) == 0;
    int e = errno;
    /* Closing a standard output that was closed before the program ran
     * (EBADF) loses nothing if nothing was written. */
    int closed = fclose(stdout) == 0 || (errno == EBADF && !bad && flushed);
    if (bad || !flushed || !closed) {
        if (flushed)
            e = errno;
        fprintf(stderr, "%s: write error on standard output: %s\n", stdout_program,
                e ? strerror(e) : "an earlier write failed");
        _exit(1);
    }
}

void eo_close_stdout_at_exit(const char *program)
{
    static int registered;
    if (program)
        stdout_program = program;
    if (!registered && atexit(close_stdout) == 0)
        registered = 1;
}
