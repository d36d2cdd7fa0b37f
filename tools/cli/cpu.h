/* tools/cli/cpu.h — the CPU kernel variant as the programs see it: the
 * EO_CPU environment variable, and one line saying what runs.
 *
 * The library picks the widest kernel variant the CPU runs at
 * eo_ctx_init and reads no environment (core/everyo.h, "CPU kernel
 * variants"). The programs, the benchmarks and the test harness let a
 * person force a lower one with EO_CPU=base|avx2|avx512 — how every
 * variant is tested and timed on a machine that has the wider ones. */
#ifndef EO_TOOLS_CPU_H
#define EO_TOOLS_CPU_H

#include <stddef.h>
#include "core/everyo.h"

/* Apply EO_CPU to ctx when it is set (and not empty). EO_OK when unset or
 * applied; otherwise a status and a message in err naming the value and
 * why (an unknown name, or the variant this build or CPU lacks). */
eo_status eo_tool_cpu_apply(eo_ctx *ctx, char *err, size_t errlen);

/* "CPU kernels: avx2 (CPU: sse2 avx avx2 fma f16c)", with ", forced by
 * EO_CPU" after the name where it was; into buf. */
void eo_tool_cpu_describe(const eo_ctx *ctx, char *buf, size_t len);

/* The CPU kernel table a context would use here, EO_CPU applied: for
 * the programs that call kernels by name (tools/cli/cpu_kernels.h).
 * Made once per process; an EO_CPU this machine cannot honour is
 * reported on stderr once and the process exits with status 2. */
const struct eo_backend *eo_tool_cpu_kernels(void);
/* The variant of that table, the CPU's EO_CPUF_* features, and
 * eo_tool_cpu_describe's line for it. */
eo_cpu_isa eo_tool_cpu_kernels_isa(void);
uint32_t eo_tool_cpu_features(void);
const char *eo_tool_cpu_kernels_line(void);

/* The variant named s ("base", "avx2", "avx512", "native"); -1: none. */
int eo_tool_cpu_parse(const char *s);

#endif
