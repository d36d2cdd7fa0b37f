/* tools/train/resume.c — see resume.h. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tools/cli/errbuf.h"
#include "tools/cli/files.h"
#include "tools/train/resume.h"

eo_status eo_resume_log_open(const char *path, const char *header, long long steps, FILE **out,
                             char *err, size_t errlen)
{
    *out = NULL;
    /* A symlink or device is refused here as by every other writer. */
    eo_status ok = eo_file_check_target(path, err, errlen);
    if (ok != EO_OK)
        return ok;
    struct stat st;
    if (stat(path, &st) != 0 && errno == ENOENT) {
        eo_status s = eo_file_create(path, out, err, errlen);
        if (s == EO_OK)
            fprintf(*out, "%s\n", header);
        return s;
    }
    FILE *f = fopen(path, "r+");
    if (!f)
        return eo_errf(err, errlen, EO_ERR_IO, "%s: cannot open the log to continue it: %s", path,
                       strerror(errno));
    /* The end of line 1 + steps: the header and one line per step. */
    long long lines = 0;
    long off = 0;
    int ch;
    while (lines < steps + 1 && (ch = fgetc(f)) != EOF) {
        off++;
        lines += ch == '\n';
    }
    if (lines < steps + 1) {
        fclose(f);
        return eo_errf(err, errlen, EO_ERR_IO,
                       "%s: has %lld step lines, the checkpoint is at step %lld: not this run's "
                       "log (give another --log)", path, lines > 0 ? lines - 1 : 0, steps);
    }
    if (fflush(f) != 0 || ftruncate(fileno(f), (off_t)off) != 0 || fseek(f, 0, SEEK_END) != 0) {
        int e = errno;
        fclose(f);
        return eo_errf(err, errlen, EO_ERR_IO, "%s: cannot cut the log at step %lld: %s", path,
                       steps, strerror(e));
    }
    *out = f;
    return EO_OK;
}
