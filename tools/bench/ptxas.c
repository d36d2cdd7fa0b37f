/* tools/bench/ptxas.c — registers and shared memory of a PTX kernel, asked
 * of ptxas (the CUDA toolkit's PTX assembler), for the occupancy the
 * performance model needs.
 *
 * Why ask ptxas: PTX registers are virtual (a kernel may declare hundreds);
 * only the assembler knows how many physical registers the SASS uses, and
 * that number decides how many warps fit on an SM. `ptxas -v` prints it
 * per kernel, the same figure `make ptx-check` reports. Optional: without
 * ptxas the model says registers are unknown and does not limit by them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tools/bench/perfmodel.h"

/* One module's results for one target: the kernels ptxas listed. */
typedef struct {
    unsigned long long hash;
    char arch[16];
    int n;
    char name[64][64];
    eo_kernel_resources res[64];
    int failed;
} cached;

static cached cache[48];
static int ncache;

static unsigned long long fnv(const char *s, size_t n)
{
    unsigned long long h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static const char *find_ptxas(void)
{
    static char path[512];
    const char *env = getenv("EO_PTXAS");
    if (env && *env)
        return env;
    const char *p = getenv("PATH");
    while (p && *p) {
        size_t n = strcspn(p, ":");
        snprintf(path, sizeof path, "%.*s/ptxas", (int)n, p);
        if (n && access(path, X_OK) == 0)
            return path;
        p += n + (p[n] == ':');
    }
    if (access("/usr/local/cuda/bin/ptxas", X_OK) == 0)
        return "/usr/local/cuda/bin/ptxas";
    return NULL;
}

/* ptxas -v prints per kernel "Compiling entry function 'K' for 'sm_XX'"
 * and later "Used N registers, ... N bytes smem, ..." (smem only when the
 * kernel has static shared memory). */
static void parse(FILE *f, cached *c)
{
    char line[1024];
    int cur = -1;
    while (fgets(line, sizeof line, f)) {
        const char *q = strstr(line, "Compiling entry function '");
        if (q && c->n < 64) {
            q += strlen("Compiling entry function '");
            size_t n = strcspn(q, "'");
            cur = c->n++;
            snprintf(c->name[cur], sizeof c->name[cur], "%.*s", (int)n, q);
            c->res[cur].regs = 0;
            c->res[cur].shared_static = 0;
            continue;
        }
        const char *u = strstr(line, "Used ");
        if (u && cur >= 0 && strstr(u, "registers")) {
            c->res[cur].regs = atoi(u + 5);
            const char *sm = strstr(u, "bytes smem");
            if (sm) {
                const char *b = sm;
                while (b > u && b[-1] == ' ')
                    b--;
                while (b > u && b[-1] >= '0' && b[-1] <= '9')
                    b--;
                c->res[cur].shared_static = atoi(b);
            }
        }
    }
}

static cached *assemble(const char *ptx, size_t len, const char *arch, char *why, size_t whylen)
{
    unsigned long long h = fnv(ptx, len);
    for (int i = 0; i < ncache; i++)
        if (cache[i].hash == h && !strcmp(cache[i].arch, arch))
            return cache[i].failed ? NULL : &cache[i];
    const char *ptxas = find_ptxas();
    if (!ptxas) {
        snprintf(why, whylen, "ptxas not found (set EO_PTXAS or put it on PATH)");
        return NULL;
    }
    cached *c = &cache[ncache < 48 ? ncache++ : 47];
    memset(c, 0, sizeof *c);
    c->hash = h;
    snprintf(c->arch, sizeof c->arch, "%s", arch);
    const char *tmp = getenv("TMPDIR");
    char path[600];
    snprintf(path, sizeof path, "%s/eo-ptxas-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) {
        snprintf(why, whylen, "cannot create a temporary file for ptxas");
        c->failed = 1;
        return NULL;
    }
    int ok = write(fd, ptx, len) == (ssize_t)len;
    close(fd);
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "'%s' -arch=%s -v '%s' -o /dev/null 2>&1", ptxas, arch, path);
    FILE *f = ok ? popen(cmd, "r") : NULL;
    if (f) {
        parse(f, c);
        ok = pclose(f) == 0;
    }
    remove(path);
    if (!ok || !c->n) {
        snprintf(why, whylen, "ptxas -arch=%s failed on the module", arch);
        c->failed = 1;
        return NULL;
    }
    return c;
}

int eo_ptxas_resources(const char *ptx, size_t len, const char *kernel, const char *arch,
                       eo_kernel_resources *out, char *why, size_t whylen)
{
    cached *c = assemble(ptx, len, arch, why, whylen);
    if (!c)
        return -1;
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->name[i], kernel)) {
            *out = c->res[i];
            return 0;
        }
    snprintf(why, whylen, "ptxas did not list kernel '%s'", kernel);
    return -1;
}
