/* tools/dist/eo-bench-dist.c — all-reduce bandwidth against the ring model.
 *
 *   mpirun -np 2 build/eo-bench-dist [--sizes 4K,256K,1M,16M,64M] [--min-time S]
 *
 * For each message size it times eo_dist_sum_f32 — the rank-order sum
 * eo-train uses (reduce-scatter by MPI_Alltoallv, add in rank order,
 * MPI_Allgatherv) — and Open MPI's own MPI_Allreduce, median of repeats
 * after a warm-up, each repeat starting from a barrier. It prints the
 * time and the bus bandwidth, busbw = 2 (n-1)/n x bytes / time: the bytes
 * each rank must send (and receive) in a bandwidth-optimal all-reduce
 * (Patarasuk & Yuan 2009) per second, so busbw equals the link bandwidth
 * when the link is the limit. The ring model's time is
 * 2 (n-1)/n x bytes / link; the "link" between processes on one machine
 * is memory, measured here as single-thread memcpy bandwidth of the same
 * size in the same run (bytes copied per second). Only rank 0 prints. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tools/cli/args.h"
#include "tools/dist/dist.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

enum { REPS_MAX = 201 };

/* Median seconds of one all-reduce of n floats; the same on every rank
 * (the ranks' medians are averaged). */
static double time_sum(eo_dist *d, float *x, size_t n, int ordered, double min_time)
{
    double t[REPS_MAX];
    char err[256];
    d->ordered = ordered;
    for (int w = 0; w < 3; w++)
        eo_dist_sum_f32(d, x, n, err, sizeof err);
    int reps = 0;
    double spent = 0, go;
    /* Every rank must run the same number of repeats: rank 0 decides. */
    do {
        d->mpi.Barrier(d->mpi.comm_world);
        go = now();
        if (eo_dist_sum_f32(d, x, n, err, sizeof err) != EO_OK) {
            fprintf(stderr, "eo-bench-dist: %s\n", err);
            eo_dist_abort(d, 1);
            exit(1);
        }
        t[reps] = now() - go;
        spent += t[reps++];
        double more = reps < 5 || (spent < min_time && reps < REPS_MAX);
        eo_dist_bcast(d, &more, sizeof more, 0, err, sizeof err);
        if (!more)
            break;
    } while (1);
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    double med = t[reps / 2];
    eo_dist_sum(d, &med, 1, err, sizeof err);
    return med / d->size;
}

/* Median seconds of one memcpy of n floats; small copies are timed in
 * batches so the clock's own cost does not count. */
static double time_memcpy(float *dst, float *src, size_t n, double min_time)
{
    double t[REPS_MAX], spent = 0;
    int reps = 0;
    size_t inner = n * sizeof *dst >= 65536 ? 1 : 65536 / (n * sizeof *dst);
    memcpy(dst, src, n * sizeof *dst);
    while (reps < 5 || (spent < min_time && reps < REPS_MAX)) {
        double go = now();
        for (size_t k = 0; k < inner; k++) {
            memcpy(dst, src, n * sizeof *dst);
            src[k % n] += 1.0f; /* a dependence, so the copies are not merged */
        }
        t[reps] = (now() - go) / (double)inner;
        spent += t[reps++] * (double)inner;
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    return t[reps / 2];
}

/* "4K", "1M", "64M", "1G" or plain bytes: digits, then at most one
 * suffix; 4 bytes (one float) to 16 GiB. 0 when it is anything else —
 * strtod took "abc" as 0 bytes and "-5" or "1e30G" into an undefined cast. */
static size_t parse_size(const char *s)
{
    char *end;
    if (!isdigit((unsigned char)*s))
        return 0;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    unsigned shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20
                     : *end == 'G' || *end == 'g' ? 30 : 0;
    if (errno || (shift ? end[1] : *end) || v > (16ull << 30) >> shift)
        return 0;
    v <<= shift;
    return v >= sizeof(float) ? (size_t)v : 0;
}

/* Every entry of the comma-separated --sizes list is a size: 1, else 0
 * after naming the bad entry. */
static int sizes_ok(const char *sizes)
{
    char list[256];
    if (snprintf(list, sizeof list, "%s", sizes) >= (int)sizeof list || !*sizes) {
        fprintf(stderr, "eo-bench-dist: --sizes: '%s' is not a list of 1 to 255 characters\n",
                sizes);
        return 0;
    }
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ","))
        if (!parse_size(tok)) {
            fprintf(stderr, "eo-bench-dist: --sizes: '%s' is not a size from 4 bytes to 16G "
                            "(digits, then K, M or G)\n", tok);
            return 0;
        }
    return 1;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: mpirun -np N eo-bench-dist [options]\n"
               "All-reduce time and bus bandwidth of the rank-order sum eo-train uses and of\n"
               "Open MPI's MPI_Allreduce, against the ring model on this machine's memcpy.\n"
               "\n"
               "      --sizes LIST       message sizes, e.g. 4K,1M,64M (4K,64K,1M,4M,16M,64M)\n"
               "      --min-time S       seconds to repeat each size at least (0.3)\n"
               "  -h, --help             this text\n"
               "      --version          the program's and the library's version\n");
}

int main(int argc, char **argv)
{
    eo_args_program("eo-bench-dist");
    const char *sizes = "4K,64K,1M,4M,16M,64M";
    float min_time = 0.3f;
    enum { O_SIZES = 256, O_MIN_TIME, O_VERSION };
    static const struct option opts[] = {
        {"sizes", required_argument, NULL, O_SIZES},
        {"min-time", required_argument, NULL, O_MIN_TIME},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, O_VERSION},
        {NULL, 0, NULL, 0},
    };
    int o;
    while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (o) {
        case 'h': usage(stdout); return 0;
        case O_VERSION: eo_args_version(stdout); return 0;
        case O_SIZES: sizes = optarg; break;
        case O_MIN_TIME:
            if (!eo_arg_float("--min-time", optarg, &min_time))
                return 2;
            if (!(min_time > 0 && min_time <= 3600)) {
                fprintf(stderr, "eo-bench-dist: --min-time: '%s' is not from 0 (excluded) to "
                                "3600 seconds\n", optarg);
                return 2;
            }
            break;
        default: return eo_args_try_help();
        }
    }
    if (!eo_args_no_operands(argc, argv) || !sizes_ok(sizes))
        return 2;
    eo_dist d;
    char err[512];
    if (eo_dist_init(&d, "auto", err, sizeof err) != EO_OK) {
        fprintf(stderr, "eo-bench-dist: %s\n", err);
        return 1;
    }
    if (d.size < 2) {
        fprintf(stderr, "eo-bench-dist: run it under mpirun -np N with N >= 2 (one rank has "
                        "nothing to reduce)\n");
        eo_dist_finalize(&d);
        return 2;
    }
    int n = d.size;
    double f = 2.0 * (n - 1) / n;
    if (d.rank == 0) {
        printf("all-reduce of f32 across %d ranks (Open MPI, one machine); busbw = 2(n-1)/n x "
               "bytes / time; ring model = 2(n-1)/n x bytes / memcpy bandwidth\n", n);
        printf("| size | rank-order sum | busbw | MPI_Allreduce | busbw | memcpy | ring model "
               "| rank-order / model |\n|---|---|---|---|---|---|---|---|\n");
    }
    char list[256];
    snprintf(list, sizeof list, "%s", sizes);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        size_t bytes = parse_size(tok), cnt = bytes / sizeof(float);
        float *x = malloc(cnt * sizeof *x), *y = malloc(cnt * sizeof *y);
        if (!x || !y) {
            fprintf(stderr, "eo-bench-dist: out of memory for %s\n", tok);
            free(x);
            free(y);
            eo_dist_finalize(&d);
            return 1;
        }
        for (size_t i = 0; i < cnt; i++)
            x[i] = (float)(i % 97) * 1e-3f;
        double t_ord = time_sum(&d, x, cnt, 1, min_time);
        double t_mpi = time_sum(&d, x, cnt, 0, min_time);
        double t_cpy = time_memcpy(y, x, cnt, min_time);
        double link = (double)bytes / t_cpy, model = f * (double)bytes / link;
        if (d.rank == 0)
            printf("| %s | %.1f us | %.2f GB/s | %.1f us | %.2f GB/s | %.1f GB/s | %.1f us | "
                   "%.2fx |\n", tok, 1e6 * t_ord, f * bytes / t_ord / 1e9, 1e6 * t_mpi,
                   f * bytes / t_mpi / 1e9, link / 1e9, 1e6 * model, t_ord / model);
        free(x);
        free(y);
    }
    eo_dist_finalize(&d);
    return 0;
}
