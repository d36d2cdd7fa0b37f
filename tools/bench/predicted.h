/* tools/bench/predicted.h — the performance model's estimates beside GPU
 * measurements: `eo-bench --device cuda --predicted FILE` reads the CSV
 * that `eo-bench --device sim --csv FILE` wrote, and bench_gpu.c prints
 * each kernel's estimate next to its measured time, with their ratio, so
 * that every GPU run checks the model (make gpu-report does both). */
#ifndef EO_TOOLS_BENCH_PREDICTED_H
#define EO_TOOLS_BENCH_PREDICTED_H

/* Load the estimates (columns gpu,kernel,shape,est_ms,limiter,...).
 * 0 on success, -1 if the file cannot be read. Replaces earlier ones. */
int eo_predicted_load(const char *csv_path);
/* The estimate in ms for a kernel and shape on the GPU this device name
 * denotes (matched as tools/bench/perfmodel.h's eo_gpu_find does), with
 * its limiter; -1 when there is none. */
double eo_predicted_ms(const char *device_name, const char *kernel, const char *shape,
                       const char **limiter);

#endif
