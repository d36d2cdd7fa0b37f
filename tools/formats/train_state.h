/* tools/formats/train_state.h — a whole training run's state in one
 * safetensors file, so a stopped run resumes bit for bit (eo-train
 * --checkpoint / --resume; experimental).
 *
 * The tensors (readable by PyTorch's safetensors like any checkpoint):
 *   NAME               every parameter, F32 (the f32 master under mixed
 *                      precision), so the file also loads with --load
 *   optimizer.m.NAME   AdamW's first moment (F32)
 *   optimizer.v.NAME   AdamW's second moment, or SGD's momentum buffer
 * The scalars, in the metadata as text that round-trips exactly
 * (integers in decimal, floats as the hex of their bits):
 *   everyo.kind = "train_state", optimizer.step, and the pairs the
 *   training loop gives (eo_ts_set): its position (step, epoch, batch
 *   index or loader position), the random generators' states, the loss
 *   scaler's, and "setting.*" pairs: the run's settings, which a resume
 *   must match (eo_ts_check names the first that differs).
 * The file goes through the durable writer (durable.h) with a CRC-32 of
 * the data (safetensors.h), so a crash mid-write leaves the previous
 * checkpoint, and a damaged one is refused, never loaded.
 *
 * Not supported: a ZeRO-1 optimizer (each rank holds a shard of m and
 * v); EO_ERR_ARG names it. */
#ifndef EO_TOOLS_TRAIN_STATE_H
#define EO_TOOLS_TRAIN_STATE_H

#include <stddef.h>
#include <stdint.h>
#include "core/everyo.h"
#include "core/nn.h"

#define EO_TS_MAX 64

/* Key/value pairs, fixed size (no allocation). */
typedef struct eo_ts_kv {
    int n;
    char key[EO_TS_MAX][48];
    char value[EO_TS_MAX][128];
} eo_ts_kv;

/* Set key to the formatted value (replacing an earlier one). Returns 0
 * when the table is full or the key or value is too long (a programming
 * error in the caller's fixed set of keys), 1 otherwise. */
int eo_ts_set(eo_ts_kv *kv, const char *key, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* The value of key, or NULL. */
const char *eo_ts_get(const eo_ts_kv *kv, const char *key);

/* Exact text forms of the scalars and back. The getters return 0 (and
 * leave *out) when the key is missing or malformed. */
int eo_ts_set_f32(eo_ts_kv *kv, const char *key, float v);
int eo_ts_set_i64(eo_ts_kv *kv, const char *key, int64_t v);
int eo_ts_set_u64(eo_ts_kv *kv, const char *key, uint64_t v);
/* A float as the shortest decimal that reads back as the same float
 * ("0.001", not "0.00100000005"): for settings a person compares. */
int eo_ts_set_decimal(eo_ts_kv *kv, const char *key, float v);
int eo_ts_get_f32(const eo_ts_kv *kv, const char *key, float *out);
int eo_ts_get_i64(const eo_ts_kv *kv, const char *key, int64_t *out);
int eo_ts_get_u64(const eo_ts_kv *kv, const char *key, uint64_t *out);

/* Every "setting.*" pair of `now` against `saved`: EO_OK when all are
 * equal and saved has no other setting; else EO_ERR_ARG with
 * "PATH: was saved with SETTING VALUE, this run has VALUE: resume with
 * the same settings". */
eo_status eo_ts_check(const eo_ts_kv *saved, const eo_ts_kv *now, const char *path, char *err,
                      size_t errlen);

/* Write the parameters ps, the optimizer's state and `kv` to path
 * (atomically: durable.h). EO_ERR_ARG for a sharded optimizer or a
 * parameter without a name; the checkpoint writer's statuses. */
eo_status eo_train_state_save(eo_ctx *ctx, const eo_params *ps, const eo_optimizer *o,
                              const char *path, const eo_ts_kv *kv, char *err, size_t errlen);

/* Read path: check it is a training state, its settings against `now`
 * (eo_ts_check), then copy the parameters and optimizer state into ps
 * and o (all or nothing: every name, dtype and shape is checked before a
 * value is copied; the 16-bit working copies are refreshed), set
 * o->step, and fill *kv with the file's metadata. EO_ERR_ARG (different
 * settings, a sharded optimizer), EO_ERR_FORMAT (not a training state,
 * a missing or mis-shaped tensor, a corrupt file), EO_ERR_IO. */
eo_status eo_train_state_load(eo_ctx *ctx, const eo_params *ps, eo_optimizer *o,
                              const char *path, const eo_ts_kv *now, eo_ts_kv *kv, char *err,
                              size_t errlen);

#endif
