#!/usr/bin/env python3
"""tools/bench/bench_torch.py - PyTorch's side of eo-bench.

eo-bench (tools/bench/eo-bench.c) writes the kernels it wants timed to a job
file, runs this script on it and reads back CSV on stdout. Keeping PyTorch
in its own process means eo-bench never links it and runs fine on a
machine without it: a failed import just becomes "skipped (reason)".

Job file: one job per line, comma-separated:
    id,kernel,threads,reps,p1,p2,...
  matmul:  p = ta,tb,batch,M,N,K   (C = op(A) op(B), row-major, as eo_k_matmul)
  attention, attention_bwd:  p = B,H,T,D   (causal, q k v [B,H,T,D])
  others:  p = rows,cols
Output, one line per job:
    id,ms                 median milliseconds of `reps` timed calls
    id,skipped,REASON     when PyTorch could not run it
plus a first line "#torch,VERSION".

Each kernel is called the way a PyTorch user gets it (the public function
or the aten kernel autograd itself calls), after two warm-up calls, with
torch.set_num_threads(threads)."""
import statistics
import sys
import time


def make_matmul(torch, p):
    ta, tb, batch, m, n, k = p
    # Stored shapes as eo_k_matmul sees them; .t() gives the transposed view
    # PyTorch hands to its BLAS with a transpose flag, not a copy.
    a = torch.randn(batch, k, m) if ta else torch.randn(batch, m, k)
    b = torch.randn(batch, n, k) if tb else torch.randn(batch, k, n)
    opa = a.transpose(1, 2) if ta else a
    opb = b.transpose(1, 2) if tb else b
    out = torch.empty(batch, m, n)
    if batch == 1:
        opa2, opb2, out2 = opa[0], opb[0], out[0]
        return lambda: torch.mm(opa2, opb2, out=out2)
    return lambda: torch.bmm(opa, opb, out=out)


def make_attention(torch, kernel, b, h, t, d):
    # Causal attention spelled as matmul + softmax + matmul, which every
    # PyTorch version has (scaled_dot_product_attention is 2.0 and later,
    # and picks a different kernel per version and build). The backward
    # is the aten kernels autograd runs for that graph: the matmul
    # gradients and the softmax backward, from the saved probabilities.
    q, k, v = torch.randn(b, h, t, d), torch.randn(b, h, t, d), torch.randn(b, h, t, d)
    dout = torch.randn(b, h, t, d)
    scale = 1.0 / d ** 0.5
    mask = torch.full((t, t), float("-inf")).triu(1)
    kt = k.transpose(-1, -2)

    def probs():
        return torch.softmax(torch.matmul(q, kt) * scale + mask, -1)
    if kernel == "attention":
        return lambda: torch.matmul(probs(), v)
    p = probs()

    def backward():
        dv = torch.matmul(p.transpose(-1, -2), dout)
        dp = torch.matmul(dout, v.transpose(-1, -2))
        ds = torch._softmax_backward_data(dp, p, -1, torch.float32) * scale
        return torch.matmul(ds, k), torch.matmul(ds.transpose(-1, -2), q), dv
    return backward


def make_rows(torch, kernel, rows, cols):
    F = torch.nn.functional
    aten = torch.ops.aten
    x = torch.randn(rows, cols)
    dy = torch.randn(rows, cols)
    if kernel == "softmax":
        return lambda: torch.softmax(x, -1)
    if kernel == "log_softmax":
        return lambda: torch.log_softmax(x, -1)
    if kernel == "softmax_bwd":
        y = torch.softmax(x, -1)
        return lambda: torch._softmax_backward_data(dy, y, -1, torch.float32)
    if kernel == "layernorm":
        w, b = torch.randn(cols), torch.randn(cols)
        return lambda: F.layer_norm(x, (cols,), w, b, 1e-5)
    if kernel == "layernorm_bwd":
        w, b = torch.randn(cols), torch.randn(cols)
        _, mean, rstd = aten.native_layer_norm(x, [cols], w, b, 1e-5)
        return lambda: aten.native_layer_norm_backward(dy, x, [cols], mean, rstd, w, b,
                                                       [True, True, True])
    if kernel == "gelu":
        return lambda: F.gelu(x, approximate="tanh")
    if kernel == "gelu_bwd":
        return lambda: aten.gelu_backward(dy, x, approximate="tanh")
    if kernel == "xent":
        t = torch.randint(0, cols, (rows,))
        return lambda: F.cross_entropy(x, t)
    if kernel == "xent_bwd":
        # What autograd runs for cross_entropy's backward: the two aten
        # kernels it is made of.
        t = torch.randint(0, cols, (rows,))
        lsm = torch.log_softmax(x, -1)
        g = torch.tensor(1.0)

        def run():
            d = aten.nll_loss_backward(g, lsm, t, None, 1, -100, torch.tensor(0.0))
            return aten._log_softmax_backward_data(d, lsm, 1, torch.float32)
        return run
    if kernel == "adamw":
        w = torch.nn.Parameter(torch.randn(rows * cols))
        w.grad = torch.randn(rows * cols)
        opt = torch.optim.AdamW([w], lr=1e-3, weight_decay=0.01)
        opt.step()  # creates the state (m, v) outside the timing
        return opt.step
    return None


def cpu_kernels(torch):
    """Which CPU kernels this PyTorch runs: its ATen CPU capability (the
    vector set its own kernels were dispatched to: DEFAULT, AVX2, AVX512)
    and the BLAS it was built with, from torch.backends.cpu (2.0 and
    later) or the build summary torch.__config__.show() (1.x)."""
    cap, blas = None, None
    try:
        cap = torch.backends.cpu.get_cpu_capability()
    except Exception:
        pass
    try:
        for line in torch.__config__.show().splitlines():
            line = line.strip()
            if cap is None and line.startswith("CPU capability usage:"):
                cap = line.split(":", 1)[1].strip()
            for part in line.replace(",", " ").split():
                if part.startswith("BLAS_INFO="):
                    blas = part.split("=", 1)[1]
    except Exception:
        pass
    return ("CPU capability %s; BLAS %s" % (cap or "unknown", blas or "unknown")).replace(",", ";")


def main():
    print_flush = lambda s: (sys.stdout.write(s + "\n"), sys.stdout.flush())
    if len(sys.argv) != 2:
        print_flush("usage: bench_torch.py JOBFILE")
        return 2
    try:
        import torch
    except Exception as e:  # any import failure is a reason, not a crash
        print_flush("#torch,skipped (%s)" % str(e).replace(",", ";")[:60])
        return 0
    print_flush("#torch," + torch.__version__)
    print_flush("#torch-cpu," + cpu_kernels(torch))
    torch.manual_seed(0)
    with open(sys.argv[1]) as f:
        jobs = [line.strip().split(",") for line in f if line.strip()]
    for job in jobs:
        jid, kernel, threads, reps = job[0], job[1], int(job[2]), int(job[3])
        p = [int(v) for v in job[4:]]
        try:
            torch.set_num_threads(threads)
            with torch.no_grad():
                if kernel == "matmul":
                    fn = make_matmul(torch, p)
                elif kernel.startswith("attention"):
                    fn = make_attention(torch, kernel, *p)
                else:
                    fn = make_rows(torch, kernel, p[0], p[1])
                if fn is None:
                    print_flush("%s,skipped,no PyTorch equivalent" % jid)
                    continue
                fn()
                fn()
                times = []
                for _ in range(reps):
                    t0 = time.perf_counter()
                    fn()
                    times.append(time.perf_counter() - t0)
            print_flush("%s,%.6f" % (jid, 1e3 * statistics.median(times)))
        except Exception as e:
            print_flush("%s,skipped,%s" % (jid, str(e).replace(",", ";").splitlines()[0][:60]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
