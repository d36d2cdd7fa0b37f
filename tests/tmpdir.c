/* tests/tmpdir.c — see tmpdir.h. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "tests/tmpdir.h"

enum { SLOTS = 32, PATHLEN = 512 };
static char dir[PATHLEN];
static char paths[SLOTS][2 * PATHLEN];
static int next_slot;

const char *eo_tmpdir_make(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/eo-test-XXXXXX", base && base[0] ? base : "/tmp");
    next_slot = 0;
    return mkdtemp(dir);
}

const char *eo_tmpdir_path(const char *name)
{
    char *p = paths[next_slot++ % SLOTS];
    int w = snprintf(p, sizeof paths[0], "%s/%s", dir, name);
    return w > 0 && (size_t)w < sizeof paths[0] ? p : NULL;
}

const char *eo_tmpdir_file(const char *name, const void *data, size_t n)
{
    const char *p = eo_tmpdir_path(name);
    if (!p)
        return NULL;
    FILE *f = fopen(p, "wb");
    if (!f)
        return NULL;
    size_t w = n ? fwrite(data, 1, n, f) : 0;
    if (fclose(f) != 0 || w != n)
        return NULL;
    return p;
}

const char *eo_tmpdir_gzfile(const char *name, const void *data, size_t n)
{
    const char *p = eo_tmpdir_path(name);
    if (!p)
        return NULL;
    gzFile g = gzopen(p, "wb");
    if (!g)
        return NULL;
    int w = n ? gzwrite(g, data, (unsigned)n) : 0;
    if (gzclose(g) != Z_OK || (size_t)w != n)
        return NULL;
    return p;
}

void eo_tmpdir_remove(void)
{
    if (!dir[0])
        return;
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char p[PATHLEN * 2];
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            int w = snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            if (w > 0 && (size_t)w < sizeof p)
                unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
    dir[0] = '\0';
}
