/* ops/cuda/elementwise.c — CUDA launchers for copying, filling, accumulating, binary and unary elementwise ops:
 * the host side of ptx/elementwise.ptx, behind the kernel types of ops/kernels.h.
 *
 * Two paths per op. The fast path: contiguous data (and, for the binary
 * ops, operands that are contiguous, a [cols] row vector, a [rows] column
 * vector or a scalar over the flat output index) goes to kernels with
 * 128-bit chunks and no division per element, and broadcast gradients
 * become deterministic row or column reductions. Everything else takes
 * the general 4-D strided kernels (stride 0 expresses broadcasting; their
 * broadcast gradients use atomics).
 * Each launcher checks that every size fits the PTX's 32-bit indexing
 * (else the failure is recorded in the device state and the launch is
 * skipped) and passes its arguments in the order of ops/cuda/kernels.def. */
#include "ops/cuda/launch.h"

void eo_cuda_k_copy32(const int64_t shape[4], void *dst, const int64_t sd[4], const void *src,
                      const int64_t ss[4], const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    shape4 sh;
    strides4 a, b;
    if (!cu || !eo_cuda_shape4(cu, "copy32", shape, &sh) || sh.total == 0)
        return;
    uint64_t d = eo_cuda_dp(dst), s = eo_cuda_dp(src);
    if (eo_cuda_contiguous(shape, sd) && eo_cuda_contiguous(shape, ss)) {
        uint32_t n = (uint32_t)sh.total;
        LAUNCH(cu, EO_CUK_COPY32_FLAT, eo_cuda_grid_v4(cu, sh.total), 1, 1, BLOCK, 1, &d, &s, &n);
        return;
    }
    if (!eo_cuda_strides4(cu, "copy32", shape, sd, &a) || !eo_cuda_strides4(cu, "copy32", shape, ss, &b))
        return;
    LAUNCH(cu, EO_CUK_COPY32_4D, eo_cuda_grid(sh.total), 1, 1, BLOCK, 1, N4(sh), &d, S4(a), &s,
           S4(b));
}

void eo_cuda_k_accumulate(const int64_t shape[4], float *dst, const int64_t sd[4],
                          const float *src, const int64_t ss[4], const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    shape4 sh;
    strides4 a, b;
    if (!cu || !eo_cuda_shape4(cu, "accumulate", shape, &sh) || sh.total == 0)
        return;
    uint64_t d = eo_cuda_dp(dst), s = eo_cuda_dp(src);
    if (eo_cuda_contiguous(shape, sd) && eo_cuda_contiguous(shape, ss)) {
        uint32_t n = (uint32_t)sh.total;
        LAUNCH(cu, EO_CUK_ACCUMULATE_FLAT, eo_cuda_grid_v4(cu, sh.total), 1, 1, BLOCK, 1, &d, &s, &n);
        return;
    }
    if (!eo_cuda_strides4(cu, "accumulate", shape, sd, &a) ||
        !eo_cuda_strides4(cu, "accumulate", shape, ss, &b))
        return;
    LAUNCH(cu, EO_CUK_ACCUMULATE_4D, eo_cuda_grid(sh.total), 1, 1, BLOCK, 1, N4(sh), &d, S4(a), &s,
           S4(b));
}

void eo_cuda_k_fill(int64_t n, float *x, float value, const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu || !eo_cuda_fits(cu, "fill", n) || n == 0)
        return;
    uint64_t p = eo_cuda_dp(x);
    uint32_t nn = (uint32_t)n;
    LAUNCH(cu, EO_CUK_FILL, eo_cuda_grid_v4(cu, n), 1, 1, BLOCK, 1, &p, &nn, &value);
}

/* ---- the binary ops' fast path ----------------------------------------------
 * How an operand's elements follow the flat index i = r*cols + c of a
 * contiguous tensor of `shape` (the modes of ptx/elementwise.ptx): FM_FULL
 * (element i), FM_ROW (c: a [cols] vector repeated over the leading axes,
 * a bias), FM_COL (r: a vector over the leading axes repeated along the
 * trailing ones) or FM_SCALAR (element 0). */
enum { FM_FULL, FM_ROW, FM_COL, FM_SCALAR };

/* Contiguous over axes ax[from..to) of shape: stride of each is the
 * product of the sizes after it within the range; the range's size. */
static int run_contiguous(const int64_t shape[4], const int64_t s[4], const int ax[4], int from,
                          int to, int64_t *size)
{
    int64_t want = 1;
    int ok = 1;
    for (int j = to - 1; j >= from; j--) {
        ok &= s[ax[j]] == want;
        want *= shape[ax[j]];
    }
    *size = want;
    return ok;
}

/* The mode of strides s (NULL: scalar) and, for FM_ROW and FM_COL, the
 * row length in *cols; -1 when the operand follows none of the patterns.
 * Axes of size 1 are left out: their strides never matter. */
static int flat_mode(const int64_t shape[4], const int64_t *s, int64_t *cols)
{
    int ax[4], m = 0, z = 0, k;
    int64_t size;
    *cols = 0;
    if (!s)
        return FM_SCALAR;
    for (int i = 0; i < 4; i++)
        if (shape[i] > 1)
            ax[m++] = i;
    if (run_contiguous(shape, s, ax, 0, m, &size))
        return FM_FULL;
    while (z < m && s[ax[z]] == 0)
        z++; /* leading broadcast axes */
    if (z == m)
        return FM_SCALAR;
    if (run_contiguous(shape, s, ax, z, m, cols))
        return FM_ROW;
    for (k = m; k > 0 && s[ax[k - 1]] == 0; k--) {
    } /* trailing broadcast axes start at k */
    if (k == m || !run_contiguous(shape, s, ax, 0, k, &size))
        return -1;
    *cols = 1;
    for (int j = k; j < m; j++)
        *cols *= shape[ax[j]];
    return FM_COL;
}

/* The modes of n operands (strides st[i]; NULL: not read) and their
 * common row length: 0 when some operand fits no pattern or two disagree
 * on cols. cols is the total when every operand is full or scalar. */
static int flat_plan(const int64_t shape[4], int64_t total, const int64_t *const st[], int n,
                     int mode[], int64_t *cols)
{
    *cols = 0;
    for (int i = 0; i < n; i++) {
        int64_t c;
        mode[i] = flat_mode(shape, st[i], &c);
        if (mode[i] < 0 || (c && *cols && c != *cols))
            return 0;
        if (c)
            *cols = c;
    }
    if (!*cols)
        *cols = total;
    return 1;
}

static int aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* 128-bit chunks are safe: every full or row operand 16-byte aligned, and
 * four consecutive elements never cross a row when there are rows. */
static int flat_vec(const int mode[], const void *const ptr[], int n, int64_t cols,
                    int64_t total)
{
    int v = cols == total || cols % 4 == 0;
    for (int i = 0; i < n; i++)
        if (ptr[i] && mode[i] <= FM_ROW)
            v &= aligned16(ptr[i]);
    return v;
}

void eo_cuda_k_binary(eo_binop op, const int64_t shape[4], float *out, const int64_t so[4],
                      const float *a, const int64_t sa[4], const float *b, const int64_t sb[4],
                      const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    shape4 sh;
    strides4 t_o, t_a, t_b;
    if (!cu || !eo_cuda_shape4(cu, "binary", shape, &sh) || sh.total == 0)
        return;
    uint32_t o = (uint32_t)op;
    uint64_t po = eo_cuda_dp(out), pa = eo_cuda_dp(a), pb = eo_cuda_dp(b);
    int mode[3];
    int64_t cols;
    const int64_t *const st[3] = {so, sa, sb};
    if (flat_plan(shape, sh.total, st, 3, mode, &cols) && mode[0] == FM_FULL) {
        const void *const ptr[3] = {out, a, b};
        uint32_t n = (uint32_t)sh.total, c = (uint32_t)cols, vec = (uint32_t)flat_vec(mode, ptr, 3, cols, sh.total);
        uint32_t am = (uint32_t)mode[1], bm = (uint32_t)mode[2];
        LAUNCH(cu, EO_CUK_BINARY_FAST, eo_cuda_grid_v4(cu, sh.total), 1, 1, BLOCK, 1, &o, &n, &c,
               &vec, &po, &pa, &am, &pb, &bm);
        return;
    }
    if (!eo_cuda_strides4(cu, "binary", shape, so, &t_o) ||
        !eo_cuda_strides4(cu, "binary", shape, sa, &t_a) ||
        !eo_cuda_strides4(cu, "binary", shape, sb, &t_b))
        return;
    LAUNCH(cu, EO_CUK_BINARY_4D, eo_cuda_grid(sh.total), 1, 1, BLOCK, 1, &o, N4(sh), &po, S4(t_o),
           &pa, S4(t_a), &pb, S4(t_b));
}

/* Can reduce_grad sum a gradient of this mode: a row of parts must fit
 * the work buffer, the rows of a column-mode one the grid. */
static int reducible(int mode, int64_t total, int64_t cols)
{
    if (mode == FM_ROW)
        return cols <= WORK_BYTES / 4;
    return mode == FM_COL && (total / cols + 7) / 8 <= MAX_GRID;
}

/* A broadcast gradient (mode FM_ROW or FM_COL) of the fast path, summed
 * without atomics: a row-mode gradient (a bias) is a column sum in two
 * passes through the work buffer (eo_binary_bwd_colpart over chunks of
 * rows, then eo_colsum), a column-mode one a warp per row
 * (eo_binary_bwd_rows). The chunk depends on the shape only, so the order
 * of the additions, and the bits of the result, are the same on any GPU.
 * full (row mode only; 0: none): the other operand's gradient, full, which
 * the column sum's pass updates too, so dout is read once. */
static void reduce_grad(eo_cuda *cu, uint32_t op, int mode, uint32_t which, int64_t total,
                        int64_t cols, uint64_t pdo, uint64_t pa, uint32_t am, uint64_t pb,
                        uint32_t bm, uint64_t dst, uint64_t full)
{
    uint32_t rows = (uint32_t)(total / cols), c = (uint32_t)cols;
    if (mode == FM_COL) {
        LAUNCH(cu, EO_CUK_BINARY_BWD_ROWS, (rows + 7) / 8, 1, 1, BLOCK, 1, &op, &rows, &c, &pdo, &pa,
               &am, &pb, &bm, &which, &dst);
        return;
    }
    /* Chunks of 128 rows (16 per warp: four rounds of four loads in
     * flight), more when the parts would not fit the work buffer; at most
     * 65535 chunks (the grid's y limit). */
    int64_t chunk = 128, max_parts = WORK_BYTES / 4 / cols;
    if ((rows + chunk - 1) / chunk > max_parts)
        chunk = (rows + max_parts - 1) / max_parts;
    while ((rows + chunk - 1) / chunk > MAX_GRID)
        chunk *= 2;
    uint32_t ch = (uint32_t)chunk, R = (uint32_t)((rows + chunk - 1) / chunk);
    unsigned gx = (unsigned)((cols + 31) / 32);
    uint64_t work = (uint64_t)cu->scratch + SCRATCH_WORK;
    /* Up to 4096 strips (131072 columns) the last block of each strip adds
     * its parts into dst: one launch. Wider, eo_colsum does it after. */
    uint64_t done = gx <= COLDONE_STRIPS ? (uint64_t)cu->scratch + SCRATCH_COLDONE : 0;
    LAUNCH(cu, EO_CUK_BINARY_BWD_COLPART, gx, R, 1, BLOCK, 1, &op, &rows, &c, &ch, &pdo, &pa, &am,
           &pb, &bm, &which, &work, &full, &dst, &done);
    if (!done)
        LAUNCH(cu, EO_CUK_COLSUM, gx, 1, 1, BLOCK, 1, &R, &c, &work, &dst);
}

void eo_cuda_k_binary_backward(eo_binop op, const int64_t shape[4], const float *dout,
                               const int64_t sdo[4], const float *a, const int64_t sa[4],
                               const float *b, const int64_t sb[4], float *da,
                               const int64_t sda[4], float *db, const int64_t sdb[4], const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    shape4 sh;
    strides4 t_do, t_a, t_b, t_da, t_db;
    if (!cu || !eo_cuda_shape4(cu, "binary_backward", shape, &sh) || sh.total == 0 || (!da && !db))
        return;
    uint32_t o = (uint32_t)op;
    uint64_t pdo = eo_cuda_dp(dout), pa = eo_cuda_dp(a), pb = eo_cuda_dp(b), pda = eo_cuda_dp(da), pdb = eo_cuda_dp(db);
    /* The fast path: dout contiguous, a and b (when the op reads them) and
     * each wanted gradient in one of the modes with one row length; a
     * scalar gradient (a full reduction) stays on the 4-D kernel. */
    int reads = op >= EO_BIN_MUL, mode[5];
    int64_t cols;
    const int64_t *const st[5] = {sdo, reads && a ? sa : NULL, reads && b ? sb : NULL,
                                  da ? sda : NULL, db ? sdb : NULL};
    if (flat_plan(shape, sh.total, st, 5, mode, &cols) && mode[0] == FM_FULL &&
        (!da || mode[3] == FM_FULL || reducible(mode[3], sh.total, cols)) &&
        (!db || mode[4] == FM_FULL || reducible(mode[4], sh.total, cols))) {
        const void *const ptr[5] = {dout, st[1] ? a : NULL, st[2] ? b : NULL, da, db};
        uint32_t n = (uint32_t)sh.total, c = (uint32_t)cols, vec = (uint32_t)flat_vec(mode, ptr, 5, cols, sh.total);
        uint32_t am = (uint32_t)mode[1], bm = (uint32_t)mode[2];
        uint64_t fda = da && mode[3] == FM_FULL ? pda : 0, fdb = db && mode[4] == FM_FULL ? pdb : 0;
        /* One full gradient and a row-mode one (a bias add or scale): the
         * column sum's pass updates the full one as it goes. */
        if (fda && !fdb && db && mode[4] == FM_ROW) {
            reduce_grad(cu, o, FM_ROW, 1, sh.total, cols, pdo, pa, am, pb, bm, pdb, fda);
            return;
        }
        if (fdb && !fda && da && mode[3] == FM_ROW) {
            reduce_grad(cu, o, FM_ROW, 0, sh.total, cols, pdo, pa, am, pb, bm, pda, fdb);
            return;
        }
        if (fda || fdb)
            LAUNCH(cu, EO_CUK_BINARY_BWD_FAST, eo_cuda_grid_v4(cu, sh.total), 1, 1, BLOCK, 1, &o, &n,
                   &c, &vec, &pdo, &pa, &am, &pb, &bm, &fda, &fdb);
        if (da && !fda)
            reduce_grad(cu, o, mode[3], 0, sh.total, cols, pdo, pa, am, pb, bm, pda, 0);
        if (db && !fdb)
            reduce_grad(cu, o, mode[4], 1, sh.total, cols, pdo, pa, am, pb, bm, pdb, 0);
        return;
    }
    /* Inputs that are not read (add/sub, absent gradients) count as stride 0. */
    if (!eo_cuda_strides4(cu, "binary_backward", shape, sdo, &t_do) ||
        !eo_cuda_strides4(cu, "binary_backward", shape, a ? sa : NULL, &t_a) ||
        !eo_cuda_strides4(cu, "binary_backward", shape, b ? sb : NULL, &t_b) ||
        !eo_cuda_strides4(cu, "binary_backward", shape, da ? sda : NULL, &t_da) ||
        !eo_cuda_strides4(cu, "binary_backward", shape, db ? sdb : NULL, &t_db))
        return;
    LAUNCH(cu, EO_CUK_BINARY_BWD_4D, eo_cuda_grid(sh.total), 1, 1, BLOCK, 1, &o, N4(sh), &pdo,
           S4(t_do), &pa, S4(t_a), &pb, S4(t_b), &pda, S4(t_da), &pdb, S4(t_db));
}

void eo_cuda_k_unary(eo_unop op, int64_t n, const float *x, float *y, float alpha,
                     const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu || !eo_cuda_fits(cu, "unary", n) || n == 0)
        return;
    uint32_t o = (uint32_t)op, nn = (uint32_t)n;
    uint64_t px = eo_cuda_dp(x), py = eo_cuda_dp(y);
    LAUNCH(cu, EO_CUK_UNARY, eo_cuda_grid_v4(cu, n), 1, 1, BLOCK, 1, &o, &nn, &px, &py, &alpha);
}

void eo_cuda_k_unary_backward(eo_unop op, int64_t n, const float *x, const float *y,
                              const float *dy, float *dx, float alpha, const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu || !eo_cuda_fits(cu, "unary_backward", n) || n == 0)
        return;
    uint32_t o = (uint32_t)op, nn = (uint32_t)n;
    uint64_t px = eo_cuda_dp(x), py = eo_cuda_dp(y), pdy = eo_cuda_dp(dy), pdx = eo_cuda_dp(dx);
    LAUNCH(cu, EO_CUK_UNARY_BWD, eo_cuda_grid_v4(cu, n), 1, 1, BLOCK, 1, &o, &nn, &px, &py, &pdy, &pdx,
           &alpha);
}
