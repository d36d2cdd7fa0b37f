/* tools/ptxsim/eo-ptxsim.c — run one PTX kernel on the CPU interpreter, for
 * people studying (or debugging) a kernel without a GPU.
 *
 *   eo-ptxsim FILE.ptx KERNEL --grid X[,Y,Z] --block X[,Y,Z]
 *             --arg KIND ... [--shared BYTES] [--print N] [--max-steps N]
 *             [--trace] [--trace-thread BLOCK,THREAD]
 *             [--profile [--gpu NAME]] [--sample BLOCKS]
 *
 * One --arg per kernel parameter, in order:
 *   f32buf:N[=INIT]  u32buf:N[=INIT]  s32buf:N[=INIT]   a device buffer of
 *                    N elements (the parameter receives its address);
 *                    INIT is a number (every element), ramp (0,1,2,...),
 *                    ramp:START,STEP, rand:SEED (uniform in [-1,1)) or
 *                    file:PATH (whitespace-separated numbers); default 0;
 *   u32:V s32:V u64:V s64:V f32:V f64:V   a scalar.
 * After the run every buffer is printed (the first N elements, default 64).
 * --trace prints each executed warp instruction with its active mask and
 * the values every thread wrote; --trace-thread B,T restricts that to
 * block B (linear index) and to the values of thread T (linear index in
 * the block). --max-steps raises
 * the interpreter's guard against endless loops (1e8 warp instructions).
 * --profile prints the launch's performance counters (instruction mix,
 * global sectors per request and sector efficiency, shared-memory
 * wavefronts and bank conflicts, active lanes: ptxsim.h says what each
 * means) and, when ptxas is installed, registers, shared memory and the
 * occupancy they allow, then the performance model's estimate for the
 * named GPU (--gpu, default H200; tools/bench/perfmodel.h lists them).
 * --sample B runs only B blocks spread over the grid (counters scale to
 * the grid in the estimate; buffers are then incomplete).
 *
 * Exit status: 0 the kernel ran cleanly; 1 it faulted (the fault is
 * printed); 2 bad usage, or the PTX did not load. */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tools/cli/files.h"
#include "tools/bench/perfmodel.h"
#include "tools/cli/args.h"
#include "tools/ptxsim/ptxsim.h"

#define MAX_ARGS 32
/* The largest PTX file read (64 MiB): the generated modules are < 1 MiB. */
#define EO_PTXSIM_MAX_FILE ((size_t)64 << 20)

typedef struct arg {
    char kind[8];     /* "f32", "u32", ... */
    int is_buf;
    size_t n;         /* buffer elements */
    uint64_t dev;     /* buffer address */
    unsigned char scalar[8];
    size_t size;      /* bytes the parameter takes */
} arg;

static void usage(FILE *f)
{
    fprintf(f, "usage: eo-ptxsim FILE.ptx KERNEL --grid X[,Y,Z] --block X[,Y,Z] --arg KIND... [options]\n"
               "Run one PTX kernel on the CPU interpreter and print its buffers.\n"
               "\n"
               "  -g, --grid X[,Y,Z]     blocks in the grid (1)\n"
               "  -b, --block X[,Y,Z]    threads per block (1)\n"
               "  -a, --arg KIND         one per kernel parameter, in order:\n"
               "                         f32buf:N[=INIT] u32buf:N[=INIT] s32buf:N[=INIT] (a buffer\n"
               "                         of N elements) or u32:V s32:V u64:V s64:V f32:V f64:V;\n"
               "                         INIT: NUMBER | ramp | ramp:START,STEP | rand:SEED | file:PATH\n"
               "      --shared BYTES     dynamic shared memory per block (0)\n"
               "      --print N          elements of each buffer to print (64)\n"
               "      --max-steps N      guard against endless loops, warp instructions (1e8)\n"
               "      --trace            print every executed warp instruction\n"
               "      --trace-thread B,T trace only block B, with the values of thread T\n"
               "      --profile          print the launch's performance counters, the occupancy\n"
               "                         ptxas allows and the model's estimated time (estimates)\n"
               "      --gpu NAME         with --profile: the GPU to estimate for (H200)\n"
               "      --sample BLOCKS    run only BLOCKS blocks spread over the grid; counters\n"
               "                         are scaled to the whole grid\n"
               "  -h, --help             this text\n"
               "      --version          the program's and the library's version\n"
               "Exit status: 0 ran cleanly, 1 the kernel faulted, 2 bad usage or PTX that does not load.\n");
}

/* Digits only: strtoul would also take " 5", "+5" and "-1" (as 2^64-1). */
static int plain_number(const char *s) { return isdigit((unsigned char)*s) != 0; }

/* "B,T": two whole numbers. */
static int parse_pair(const char *s, long *a, long *b)
{
    char *end;
    if (!plain_number(s))
        return -1;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (errno || *end != ',' || !plain_number(end + 1))
        return -1;
    const char *p = end + 1;
    long y = strtol(p, &end, 10);
    if (errno || *end)
        return -1;
    *a = x;
    *b = y;
    return 0;
}

/* A double written plainly (no leading space), all of the string. */
static int parse_double(const char *s, double *out)
{
    char *end;
    if (!*s || isspace((unsigned char)*s))
        return -1;
    errno = 0;
    *out = strtod(s, &end);
    return *end || errno ? -1 : 0;
}

static int parse_dim(const char *s, eo_px_dim *d)
{
    unsigned v[3] = {1, 1, 1};
    int n = 0;
    const char *p = s;
    while (n < 3) {
        char *end;
        errno = 0;
        if (!plain_number(p))
            return -1;
        unsigned long x = strtoul(p, &end, 10);
        if (end == p || errno || x == 0 || x > 0x7fffffffu)
            return -1;
        v[n++] = (unsigned)x;
        if (*end == 0)
            break;
        if (*end != ',')
            return -1;
        p = end + 1;
    }
    d->x = v[0];
    d->y = v[1];
    d->z = v[2];
    return 0;
}

/* A 32-bit pseudo-random sequence (xorshift) so that rand:SEED gives the
 * same data on every machine. */
static uint32_t next_rand(uint32_t *s)
{
    uint32_t x = *s ? *s : 0x9e3779b9u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

/* Fill a host copy of a buffer from INIT text; values are doubles turned
 * into the element type. */
static int fill(const char *kind, void *host, size_t n, const char *init)
{
    double start = 0, step = 0;
    uint32_t seed = 0;
    FILE *f = NULL;
    int mode = 0; /* 0 constant/ramp, 1 random, 2 file */
    if (!init || !*init) {
        start = 0;
    } else if (strncmp(init, "ramp", 4) == 0) {
        step = 1;
        if (init[4] == ':') {
            char a[64];
            const char *comma = strchr(init + 5, ',');
            if (!comma || (size_t)(comma - (init + 5)) >= sizeof a)
                return -1;
            memcpy(a, init + 5, (size_t)(comma - (init + 5)));
            a[comma - (init + 5)] = 0;
            if (parse_double(a, &start) || parse_double(comma + 1, &step))
                return -1;
        } else if (init[4]) {
            return -1;
        }
    } else if (strncmp(init, "rand:", 5) == 0) {
        mode = 1;
        char *end;
        errno = 0;
        unsigned long x = plain_number(init + 5) ? strtoul(init + 5, &end, 10) : 0;
        if (!plain_number(init + 5) || *end || errno || x > 0xffffffffu)
            return -1;
        seed = (uint32_t)x;
    } else if (strncmp(init, "file:", 5) == 0) {
        mode = 2;
        char err[512];
        if (eo_file_open_read(init + 5, "text", &f, NULL, err, sizeof err) != EO_OK) {
            fprintf(stderr, "eo-ptxsim: %s\n", err);
            return -1;
        }
    } else if (parse_double(init, &start)) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        double v = start + step * (double)i;
        if (mode == 1)
            v = (double)next_rand(&seed) / 2147483648.0 - 1.0;
        if (mode == 2 && fscanf(f, "%lf", &v) != 1) {
            fprintf(stderr, "eo-ptxsim: %s has fewer than %zu numbers\n", init + 5, n);
            fclose(f);
            return -1;
        }
        if (kind[0] == 'f')
            ((float *)host)[i] = (float)v;
        else if (kind[0] == 'u')
            ((uint32_t *)host)[i] = (uint32_t)v;
        else
            ((int32_t *)host)[i] = (int32_t)v;
    }
    if (f)
        fclose(f);
    return 0;
}

static int parse_arg(const char *s, arg *a, eo_px_heap *h)
{
    memset(a, 0, sizeof *a);
    const char *colon = strchr(s, ':');
    if (!colon || colon - s > 6)
        return -1;
    size_t kl = (size_t)(colon - s);
    if (kl == 6 && strncmp(s + 3, "buf", 3) == 0) {
        memcpy(a->kind, s, 3);
        if (strcmp(a->kind, "f32") && strcmp(a->kind, "u32") && strcmp(a->kind, "s32"))
            return -1;
        char *end;
        errno = 0;
        if (!plain_number(colon + 1))
            return -1;
        a->n = strtoul(colon + 1, &end, 10);
        /* At most 2^32 elements, and n * 4 bytes must fit a size_t (a
         * 32-bit one too). */
        const uint64_t max_n = SIZE_MAX / 4 < ((uint64_t)1 << 32) ? SIZE_MAX / 4 : (uint64_t)1 << 32;
        if (errno || (uint64_t)a->n > max_n || (*end && *end != '='))
            return -1;
        a->is_buf = 1;
        a->size = 8;
        if (eo_px_heap_alloc(h, a->n * 4, &a->dev) != EO_OK)
            return -1;
        return fill(a->kind, eo_px_heap_span(h, a->dev, a->n * 4), a->n, *end ? end + 1 : NULL);
    }
    if (kl != 3)
        return -1;
    memcpy(a->kind, s, 3);
    const char *v = colon + 1;
    char *end;
    errno = 0;
    if (!*v || isspace((unsigned char)*v) || (a->kind[0] == 'u' && *v == '-'))
        return -1;
    if (a->kind[0] == 'f') {
        double d = strtod(v, &end);
        if (strcmp(a->kind, "f32") == 0) {
            if (isfinite(d) && (d > FLT_MAX || d < -FLT_MAX)) {
                fprintf(stderr, "eo-ptxsim: --arg '%s': out of range for f32\n", s);
                return -1;
            }
            float x = (float)d;
            memcpy(a->scalar, &x, 4);
            a->size = 4;
        } else if (strcmp(a->kind, "f64") == 0) {
            memcpy(a->scalar, &d, 8);
            a->size = 8;
        } else {
            return -1;
        }
    } else {
        long long x = a->kind[0] == 's' ? strtoll(v, &end, 0) : (long long)strtoull(v, &end, 0);
        /* A 32-bit scalar must fit 32 bits: u32:4294967296 is not 0. */
        int wide = 0;
        if (!strcmp(a->kind, "u32"))
            wide = (unsigned long long)x > UINT32_MAX;
        else if (!strcmp(a->kind, "s32"))
            wide = x < INT32_MIN || x > INT32_MAX;
        if (wide && !errno && end != v && !*end) {
            fprintf(stderr, "eo-ptxsim: --arg '%s': out of range for %s (%s)\n", s, a->kind,
                    a->kind[0] == 'u' ? "0 to 4294967295" : "-2147483648 to 2147483647");
            return -1;
        }
        if (!strcmp(a->kind, "u32") || !strcmp(a->kind, "s32")) {
            uint32_t u = (uint32_t)x;
            memcpy(a->scalar, &u, 4);
            a->size = 4;
        } else if (!strcmp(a->kind, "u64") || !strcmp(a->kind, "s64")) {
            uint64_t u = (uint64_t)x;
            memcpy(a->scalar, &u, 8);
            a->size = 8;
        } else {
            return -1;
        }
    }
    return end == v || *end || errno ? -1 : 0;
}

static void print_buf(const arg *a, int index, eo_px_heap *h, size_t limit)
{
    const void *p = eo_px_heap_span(h, a->dev, a->n * 4);
    printf("arg %d (%sbuf[%zu]):", index, a->kind, a->n);
    for (size_t i = 0; i < a->n && i < limit; i++) {
        if (a->kind[0] == 'f')
            printf(" %.9g", (double)((const float *)p)[i]);
        else if (a->kind[0] == 'u')
            printf(" %u", ((const uint32_t *)p)[i]);
        else
            printf(" %d", ((const int32_t *)p)[i]);
    }
    printf(a->n > limit ? " ...\n" : "\n");
    fflush(stdout);
}

/* --profile: the counters, then what ptxas and the model make of them. */
static void profile(const char *text, size_t len, const char *kname, const eo_px_counters *c,
                    const char *gpu_name)
{
    printf("\n-- performance counters (PTX as interpreted; see tools/ptxsim/ptxsim.h) --\n");
    eo_px_counters_print(stdout, kname, c);
    const eo_gpu_spec *g = eo_gpu_find(gpu_name);
    if (!g) {
        printf("no GPU named '%s' in the model's table (tools/bench/perfmodel.c)\n", gpu_name);
        return;
    }
    eo_kernel_resources res;
    char why[256];
    int known = eo_ptxas_resources(text, len, kname, g->arch, &res, why, sizeof why) == 0;
    if (!known)
        printf("registers: unknown (%s); occupancy assumed full\n", why);
    eo_occupancy occ;
    eo_occupancy_compute(g, c->threads_per_block, known ? &res : NULL, c->shared_per_block, &occ);
    if (known)
        printf("ptxas -arch=%s: %d registers/thread, %d bytes static shared/block\n", g->arch,
               res.regs, res.shared_static);
    printf("occupancy on %s: %d block(s)/SM, %d warps/SM (%.0f %%), limited by %s\n", g->name,
           occ.blocks_per_sm, occ.warps_per_sm, 100.0 * occ.occupancy, occ.limiter);
    eo_prediction p;
    eo_predict(g, c, &occ, &p);
    eo_prediction_print(stdout, g, &p);
}

int main(int argc, char **argv)
{
    eo_args_program("eo-ptxsim");
    eo_px_config c;
    memset(&c, 0, sizeof c);
    c.grid.x = c.grid.y = c.grid.z = 1;
    c.block.x = c.block.y = c.block.z = 1;
    c.trace_block = -1;
    c.trace_thread = -1;
    unsigned long long print_limit = 64, u;
    const char *argspec[MAX_ARGS];
    int nargs = 0, do_trace = 0, do_profile = 0;
    const char *gpu = "H200";
    enum { O_SHARED = 256, O_MAX_STEPS, O_PRINT, O_TRACE, O_TRACE_THREAD, O_VERSION, O_PROFILE,
           O_GPU, O_SAMPLE };
    static const struct option opts[] = {
        {"grid", required_argument, NULL, 'g'},       {"block", required_argument, NULL, 'b'},
        {"arg", required_argument, NULL, 'a'},        {"shared", required_argument, NULL, O_SHARED},
        {"max-steps", required_argument, NULL, O_MAX_STEPS},
        {"print", required_argument, NULL, O_PRINT},  {"trace", no_argument, NULL, O_TRACE},
        {"trace-thread", required_argument, NULL, O_TRACE_THREAD},
        {"profile", no_argument, NULL, O_PROFILE},    {"gpu", required_argument, NULL, O_GPU},
        {"sample", required_argument, NULL, O_SAMPLE},
        {"help", no_argument, NULL, 'h'},             {"version", no_argument, NULL, O_VERSION},
        {NULL, 0, NULL, 0},
    };
    int o;
    while ((o = getopt_long(argc, argv, "g:b:a:h", opts, NULL)) != -1) {
        const char *v = optarg;
        switch (o) {
        case 'h': usage(stdout); return 0;
        case O_VERSION: eo_args_version(stdout); return 0;
        case 'g':
        case 'b':
            if (parse_dim(v, o == 'g' ? &c.grid : &c.block) != 0) {
                fprintf(stderr, "eo-ptxsim: --%s: '%s' is not X[,Y,Z] with each from 1 to "
                                "2147483647\n", o == 'g' ? "grid" : "block", v);
                return 2;
            }
            break;
        case 'a':
            if (nargs == MAX_ARGS) {
                fprintf(stderr, "eo-ptxsim: --arg: at most %d parameters\n", MAX_ARGS);
                return 2;
            }
            argspec[nargs++] = v;
            break;
        case O_SHARED:
            if (!eo_arg_u64("--shared", v, &u))
                return 2;
            if (u > (1u << 20)) {
                fprintf(stderr, "eo-ptxsim: --shared: '%s' is more than 1 MiB\n", v);
                return 2;
            }
            c.dyn_shared = (size_t)u;
            break;
        case O_MAX_STEPS:
            if (!eo_arg_u64("--max-steps", v, &u))
                return 2;
            c.step_limit = u;
            break;
        case O_PRINT:
            if (!eo_arg_u64("--print", v, &print_limit))
                return 2;
            break;
        case O_TRACE: do_trace = 1; break;
        case O_TRACE_THREAD:
            if (parse_pair(v, &c.trace_block, &c.trace_thread) != 0) {
                fprintf(stderr, "eo-ptxsim: --trace-thread: '%s' is not BLOCK,THREAD\n", v);
                return 2;
            }
            do_trace = 1;
            break;
        case O_PROFILE: do_profile = 1; break;
        case O_GPU: gpu = v; break;
        case O_SAMPLE:
            if (!eo_arg_u64("--sample", v, &u))
                return 2;
            if (u > 1u << 30) {
                fprintf(stderr, "eo-ptxsim: --sample: '%s' is more blocks than a grid holds\n", v);
                return 2;
            }
            c.sample_blocks = (unsigned)u;
            break;
        default: return eo_args_try_help(); /* getopt_long named the problem */
        }
    }
    if (argc - optind != 2) {
        fprintf(stderr, "eo-ptxsim: need FILE.ptx and KERNEL, %d argument%s given\n",
                argc - optind, argc - optind == 1 ? "" : "s");
        return eo_args_try_help();
    }
    const char *path = argv[optind], *kname = argv[optind + 1];
    size_t len = 0;
    char err[512], *text;
    /* A regular file only (a FIFO would wait forever, /dev/zero never
     * end), and a bound far above any real module (ours are < 1 MiB). */
    if (eo_file_read_all(path, "PTX", EO_PTXSIM_MAX_FILE, &text, &len, err, sizeof err) != EO_OK) {
        fprintf(stderr, "eo-ptxsim: %s\n", err);
        return 2;
    }
    eo_px_module *m = NULL;
    eo_status st = eo_px_module_load(text, len, &m, err, sizeof err);
    if (st != EO_OK) {
        /* "line N: ..." becomes "FILE:N: ...", the form editors jump to. */
        fprintf(stderr, "%s:%s\n", path, strncmp(err, "line ", 5) == 0 ? err + 5 : err);
        free(text);
        return 2;
    }
    const eo_px_kernel *k = eo_px_module_kernel(m, kname);
    if (!k) {
        fprintf(stderr, "eo-ptxsim: %s has no kernel '%s'; it has:", path, kname);
        for (int i = 0; i < eo_px_module_kernel_count(m); i++)
            fprintf(stderr, " %s", eo_px_kernel_name(eo_px_module_kernel_at(m, i)));
        fputc('\n', stderr);
        eo_px_module_free(m);
        free(text);
        return 2;
    }
    int rc = 2;
    eo_px_heap *h = eo_px_heap_new();
    arg args[MAX_ARGS];
    unsigned char params[4096];
    memset(params, 0, sizeof params);
    if (!h)
        goto out;
    if (nargs != eo_px_kernel_param_count(k)) {
        fprintf(stderr, "eo-ptxsim: %s takes %d parameter(s), %d --arg given\n", kname,
                eo_px_kernel_param_count(k), nargs);
        goto out;
    }
    for (int i = 0; i < nargs; i++) {
        size_t off, size;
        const char *type;
        eo_px_kernel_param(k, i, &off, &size, &type);
        if (parse_arg(argspec[i], &args[i], h) != 0) {
            fprintf(stderr, "eo-ptxsim: bad --arg '%s'\n", argspec[i]);
            goto out;
        }
        if (args[i].size != size) {
            fprintf(stderr, "eo-ptxsim: parameter %d is %s (%zu bytes) but --arg '%s' gives %zu\n",
                    i, type, size, argspec[i], args[i].size);
            goto out;
        }
        if (args[i].is_buf)
            memcpy(params + off, &args[i].dev, 8);
        else
            memcpy(params + off, args[i].scalar, size);
    }
    c.params = params;
    c.params_size = eo_px_kernel_param_bytes(k);
    c.trace = do_trace ? stdout : NULL;
    eo_px_counters counters;
    memset(&counters, 0, sizeof counters);
    if (do_profile)
        c.counters = &counters;
    eo_px_fault f;
    st = eo_px_run(k, h, &c, &f);
    if (st == EO_ERR_ARG) {
        fprintf(stderr, "eo-ptxsim: invalid launch configuration\n");
        goto out;
    }
    for (int i = 0; i < nargs; i++)
        if (args[i].is_buf)
            print_buf(&args[i], i, h, print_limit);
    if (st != EO_OK) {
        fprintf(stderr, "%s:%d: %s\n", path, f.line, f.msg);
        rc = 1;
    } else {
        rc = 0;
        if (do_profile)
            profile(text, len, kname, &counters, gpu);
    }
out:
    free(text);
    eo_px_heap_free(h);
    eo_px_module_free(m);
    return rc;
}
