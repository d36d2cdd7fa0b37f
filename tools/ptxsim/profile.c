/* tools/ptxsim/profile.c — what is done with the interpreter's performance
 * counters once a launch has produced them: adding, printing, and the
 * driver double's per-kernel record (driver.h, "performance counters").
 *
 * The record is a small table keyed by kernel name, outside the fake
 * device's state on purpose: resetting the device (as every test does)
 * must not lose what a benchmark or a counter test is about to read. */
#include <string.h>
#include "tools/ptxsim/driver.h"

void eo_px_counters_add(eo_px_counters *into, const eo_px_counters *c)
{
    into->launches += c->launches;
    into->blocks += c->blocks;
    into->blocks_run += c->blocks_run;
    if (c->launches) {
        into->threads_per_block = c->threads_per_block;
        into->shared_per_block = c->shared_per_block;
    }
    for (int i = 0; i < EO_PX_NCLASS; i++)
        into->warp_inst[i] += c->warp_inst[i];
    into->warp_insts += c->warp_insts;
    into->thread_insts += c->thread_insts;
    eo_px_mem *dm[3] = {&into->gld, &into->gst, &into->gatom};
    const eo_px_mem *sm[3] = {&c->gld, &c->gst, &c->gatom};
    for (int i = 0; i < 3; i++) {
        dm[i]->requests += sm[i]->requests;
        dm[i]->sectors += sm[i]->sectors;
        dm[i]->bytes += sm[i]->bytes;
    }
    into->sld.requests += c->sld.requests;
    into->sld.wavefronts += c->sld.wavefronts;
    into->sld.ideal += c->sld.ideal;
    into->sst.requests += c->sst.requests;
    into->sst.wavefronts += c->sst.wavefronts;
    into->sst.ideal += c->sst.ideal;
    into->unique_sectors += c->unique_sectors;
    into->rw_sectors += c->rw_sectors;
    into->block_sectors += c->block_sectors;
    into->alloc_bytes += c->alloc_bytes;
    into->pair_new_sectors += c->pair_new_sectors;
    into->pair_blocks += c->pair_blocks;
    into->mlp_loads += c->mlp_loads;
    into->mlp_sq += c->mlp_sq;
    into->load_groups += c->load_groups;
    into->tensor_flops += c->tensor_flops;
    into->idiv_insts += c->idiv_insts;
}

const char *eo_px_class_name(int cls)
{
    static const char *const names[EO_PX_NCLASS] = {
        "ffma", "fmul", "fadd", "fp other", "sfu", "integer", "convert", "ld.shared",
        "st.shared", "ld.global", "st.global", "atom.global", "shuffle", "barrier", "branch",
        "other", "mma",
    };
    return cls >= 0 && cls < EO_PX_NCLASS ? names[cls] : "?";
}

double eo_px_sector_efficiency(const eo_px_mem *m)
{
    return m->sectors ? (double)m->bytes / (32.0 * (double)m->sectors) : 0.0;
}

static void print_mem(FILE *f, const char *what, const eo_px_mem *m)
{
    if (!m->requests)
        return;
    fprintf(f, "  %-14s %12llu requests %12llu sectors %6.2f sectors/request %6.1f %% sector "
               "efficiency\n", what, (unsigned long long)m->requests,
            (unsigned long long)m->sectors, (double)m->sectors / (double)m->requests,
            100.0 * eo_px_sector_efficiency(m));
}

static void print_smem(FILE *f, const char *what, const eo_px_smem *m)
{
    if (!m->requests)
        return;
    fprintf(f, "  %-14s %12llu requests %12llu wavefronts %12llu bank conflicts (%.2f "
               "wavefronts/request, %.2f ideal)\n", what, (unsigned long long)m->requests,
            (unsigned long long)m->wavefronts, (unsigned long long)(m->wavefronts - m->ideal),
            (double)m->wavefronts / (double)m->requests, (double)m->ideal / (double)m->requests);
}

void eo_px_counters_print(FILE *f, const char *kernel, const eo_px_counters *c)
{
    fprintf(f, "%s: %llu launch(es), %llu block(s)", kernel, (unsigned long long)c->launches,
            (unsigned long long)c->blocks);
    if (c->blocks_run != c->blocks)
        fprintf(f, " of which %llu ran (sampled: per-block counts, not grid totals)",
                (unsigned long long)c->blocks_run);
    fprintf(f, ", %u threads/block, %zu bytes shared/block\n", c->threads_per_block,
            c->shared_per_block);
    double wi = c->warp_insts ? (double)c->warp_insts : 1.0;
    fprintf(f, "  warp instructions %llu, active lanes %.1f %%\n",
            (unsigned long long)c->warp_insts, 100.0 * (double)c->thread_insts / (32.0 * wi));
    for (int i = 0; i < EO_PX_NCLASS; i++)
        if (c->warp_inst[i])
            fprintf(f, "    %-12s %12llu  %5.1f %%\n", eo_px_class_name(i),
                    (unsigned long long)c->warp_inst[i], 100.0 * (double)c->warp_inst[i] / wi);
    if (c->idiv_insts)
        fprintf(f, "    (of integer: %llu div/rem)\n", (unsigned long long)c->idiv_insts);
    print_mem(f, "global loads", &c->gld);
    print_mem(f, "global stores", &c->gst);
    print_mem(f, "global atomics", &c->gatom);
    print_smem(f, "shared loads", &c->sld);
    print_smem(f, "shared stores", &c->sst);
    if (c->unique_sectors)
        fprintf(f, "  footprint      %llu distinct sectors (%.3f MB), per-block sum %llu sectors, "
                   "allocations touched %.3f MB\n", (unsigned long long)c->unique_sectors,
                (double)c->unique_sectors * 32e-6, (unsigned long long)c->block_sectors,
                (double)c->alloc_bytes * 1e-6);
    if (c->rw_sectors)
        fprintf(f, "  read and written %llu of them (moved twice: in, and back out)\n",
                (unsigned long long)c->rw_sectors);
    if (c->mlp_loads)
        fprintf(f, "  global loads in flight per warp (load-weighted mean): %.2f\n",
                (double)c->mlp_sq / (double)c->mlp_loads);
}

/* ---- the driver double's record ----------------------------------------------- */

#define MAX_KERNELS 128

static struct {
    eo_px_counters last;
    char name[MAX_KERNELS][64];
    eo_px_counters total[MAX_KERNELS];
    int n;
    unsigned sample;
} rec;

const eo_px_counters *eo_ptxsim_last_counters(void) { return &rec.last; }

void eo_ptxsim_counters_reset(void)
{
    unsigned sample = rec.sample;
    memset(&rec, 0, sizeof rec);
    rec.sample = sample;
}

void eo_ptxsim_set_sample(unsigned blocks) { rec.sample = blocks; }
unsigned eo_ptxsim_sample(void) { return rec.sample; }

void eo_ptxsim_counters_record(const char *kernel, const eo_px_counters *c)
{
    rec.last = *c;
    int i = 0;
    while (i < rec.n && strcmp(rec.name[i], kernel) != 0)
        i++;
    if (i == rec.n) {
        if (rec.n == MAX_KERNELS)
            return; /* past the table: only "last" is kept */
        snprintf(rec.name[rec.n++], sizeof rec.name[0], "%s", kernel);
    }
    eo_px_counters_add(&rec.total[i], c);
}

int eo_ptxsim_kernel_counters(int i, const char **name, eo_px_counters *out)
{
    if (i < 0 || i >= rec.n)
        return 0;
    if (name)
        *name = rec.name[i];
    if (out)
        *out = rec.total[i];
    return 1;
}

int eo_ptxsim_counters_of(const char *name, eo_px_counters *out)
{
    for (int i = 0; i < rec.n; i++)
        if (strcmp(rec.name[i], name) == 0) {
            if (out)
                *out = rec.total[i];
            return 1;
        }
    return 0;
}
