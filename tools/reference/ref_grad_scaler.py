#!/usr/bin/python3
"""tools/reference/ref_grad_scaler.py -- PyTorch's GradScaler on scripted
sequences of finite, inf and NaN gradients, written as a C header the test
suite includes (tests/fixtures/grad_scaler.h), so CI needs no Python:

    /usr/bin/python3 tools/reference/ref_grad_scaler.py tests/fixtures/grad_scaler.h

(`make fixtures` runs it.) tests/test_grad_scaler.c replays each sequence
with eo_grad_scaler_* and compares, exactly, after every step: whether the
optimizer step was skipped, the scale, the growth tracker and the weights.

Each step k: loss = sum(w * c_k) for 4 weights w and a scripted row c_k,
so the scaled gradient is c_k * S (an overflow of that product is a real
inf, as in f16 training); then scaler.scale(loss).backward(), optionally
scaler.unscale_(opt) first (as before clipping), scaler.step(opt) with
torch.optim.SGD(lr=0.5), scaler.update(). Values are chosen so every
product is exact, and floats are written as C hex floats.

The GradScaler used is torch's own class (torch.cuda.amp.GradScaler in
1.13, the same code as torch.amp.GradScaler later): its Python state
machine -- when it unscales, when it skips the step, how it combines the
checks and updates the scale -- runs unchanged. This torch build has no
CPU kernels for the class's two device primitives and refuses CPU
tensors, so the script (a) lets the class run on CPU tensors and (b)
supplies the two primitives in Python with their documented arithmetic:
  _amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale):
      found_inf = 1 if any element of any grad is inf or NaN;
      every grad *= inv_scale (float32 multiply);
  _amp_update_scale_(scale, tracker, found_inf, growth, backoff, interval):
      found_inf: scale = float32(scale * backoff), tracker = 0; else
      tracker + 1 == interval: scale = float32(scale * growth) if that is
      finite, tracker = 0; else tracker += 1.
"""
import math
import sys

import torch
import torch.cuda.amp.grad_scaler as gs


def check_and_unscale(grads, found_inf, inv_scale):
    with torch.no_grad():
        for g in grads:
            if not bool(torch.isfinite(g).all()):
                found_inf.fill_(1.0)
            g.mul_(inv_scale)


def update_scale(scale, tracker, found_inf, growth, backoff, interval):
    s = float(scale.item())
    if float(found_inf.item()) != 0.0:
        scale.fill_(torch.tensor(s * backoff, dtype=torch.float32).item())
        tracker.fill_(0)
    elif int(tracker.item()) + 1 == interval:
        grown = torch.tensor(s * growth, dtype=torch.float32)
        if bool(torch.isfinite(grown)):
            scale.fill_(grown.item())
        tracker.fill_(0)
    else:
        tracker.add_(1)
    return scale


class Replicator:  # gs._MultiDeviceReplicator without its CUDA-only assert
    def __init__(self, master):
        self.master = master
        self._per_device_tensors = {}

    def get(self, device):
        t = self._per_device_tensors.get(device)
        if t is None:
            t = self.master.to(device=device, copy=True)
            self._per_device_tensors[device] = t
        return t


gs.amp_definitely_not_available = lambda: False
gs._MultiDeviceReplicator = Replicator
torch._amp_foreach_non_finite_check_and_unscale_ = check_and_unscale
torch._amp_update_scale_ = update_scale

INF, NAN = math.inf, math.nan
W0 = [1.0, -1.0, 0.5, 2.0]
FIN = [0.25, -0.5, 1.0, 0.125]


def run(rows, explicit_unscale, init_scale, interval, record_every=1):
    w = torch.tensor(W0, dtype=torch.float32, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.5)
    sc = gs.GradScaler(init_scale=init_scale, growth_interval=interval)
    out = []
    for k, c in enumerate(rows):
        opt.zero_grad()
        loss = (w * torch.tensor(c, dtype=torch.float32)).sum()
        if sc._scale is None:
            sc._lazy_init_scale_growth_tracker(loss.device)
        (loss * sc._scale).backward()  # what scale() does on a CUDA tensor
        if explicit_unscale[k]:
            sc.unscale_(opt)
        before = w.detach().clone()
        sc.step(opt)
        skipped = int(torch.equal(before, w.detach()) and
                      float(sum(v.item() for v in
                                sc._per_optimizer_states[id(opt)]["found_inf_per_device"].values())) != 0)
        sc.update()
        out.append((skipped, float(sc._scale.item()), int(sc._growth_tracker.item()),
                    [float(x) for x in w.detach()]))
    return out


def hexf(x):
    if math.isnan(x):
        return "NAN"
    return "INFINITY" if x > 0 else "-INFINITY"


def fmt(x):
    if math.isnan(x) or math.isinf(x):
        return hexf(x)
    x = torch.tensor(x, dtype=torch.float32).item()  # the float32 the run used
    h = float(x).hex()  # 0x1.8000000000000p+1 -> trim trailing zeros
    mant, exp = h.split("p")
    mant = mant.rstrip("0").rstrip(".")
    return "%sp%s" % (mant, exp) + "f"


def main(path):
    # Sequence A: GradScaler's defaults except growth_interval 3, so the
    # scale both grows and backs off in 16 steps; infs, a NaN and an
    # overflow of c * S (3e38 * 65536) make steps skip.
    big = 3.0e38
    rows_a = [FIN, FIN, FIN,                 # 3 good steps: S doubles to 2^17
              [1.0, INF, 0.0, 0.0],          # skipped, S halves
              FIN,
              [NAN, 1.0, 1.0, 1.0],          # skipped
              [big, 0.0, 0.0, 0.0],          # finite c, but c * S overflows: skipped
              FIN, FIN, FIN,                 # grows again
              [-INF, 0.0, 0.0, 0.0],
              FIN, FIN, FIN, FIN, FIN]
    explicit_a = [0, 1, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0]
    a = run(rows_a, explicit_a, 2.0 ** 16, 3)
    # Sequence B: the defaults (2^16, growth after 2000 good steps):
    # 2001 finite steps; the scale doubles after step 2000 (index 1999).
    rows_b = [FIN] * 2001
    b = run(rows_b, [0] * 2001, 2.0 ** 16, 2000)
    # Sequence C: growth that would overflow: from 2^126 with interval 1
    # the scale reaches 2^127 and then stays (2^128 is inf in float32).
    rows_c = [FIN] * 3
    c = run(rows_c, [0] * 3, 2.0 ** 126, 1)

    o = []
    o.append("/* tests/fixtures/grad_scaler.h — PyTorch %s's GradScaler on scripted\n"
             " * gradient sequences (see tools/reference/ref_grad_scaler.py, which\n"
             " * generates this file: make fixtures); do not edit by hand. */\n" % torch.__version__)
    o.append("#ifndef EO_FIXTURES_GRAD_SCALER_H\n#define EO_FIXTURES_GRAD_SCALER_H\n")
    o.append("#include <math.h>\n#include <stdint.h>\n")
    o.append("static const float fx_gs_w0[4] = { %s };\n" % ", ".join(fmt(x) for x in W0))
    o.append("static const float fx_gs_fin[4] = { %s };\n" % ", ".join(fmt(x) for x in FIN))
    o.append("#define FX_GS_LR 0.5f\n")
    o.append("/* one step after another of the scaler's run */\n")
    o.append("typedef struct fx_gs_step { float c[4]; int unscale_first; int skipped; "
             "float scale; int tracker; float w[4]; } fx_gs_step;\n")
    o.append("#define FX_GS_A_STEPS %d\n#define FX_GS_A_INTERVAL 3\n" % len(a))
    o.append("static const fx_gs_step fx_gs_a[%d] = {\n" % len(a))
    for k, (sk, s, t, w) in enumerate(a):
        o.append("    { { %s }, %d, %d, %s, %d, { %s } },\n" % (
            ", ".join(fmt(x) for x in rows_a[k]), explicit_a[k], sk, fmt(s), t,
            ", ".join(fmt(x) for x in w)))
    o.append("};\n")
    o.append("/* sequence B (defaults, %d finite steps): the scale after steps 1999,\n"
             " * 2000 and 2001 (1-based), and the weights at the end */\n" % len(b))
    o.append("#define FX_GS_B_STEPS %d\n" % len(b))
    o.append("static const float fx_gs_b_scale[3] = { %s };\n" %
             ", ".join(fmt(b[i][1]) for i in (1998, 1999, 2000)))
    o.append("static const int fx_gs_b_tracker[3] = { %s };\n" %
             ", ".join(str(b[i][2]) for i in (1998, 1999, 2000)))
    o.append("static const float fx_gs_b_w[4] = { %s };\n" % ", ".join(fmt(x) for x in b[-1][3]))
    o.append("/* sequence C (init 2^126, interval 1): the scale after each step */\n")
    o.append("static const float fx_gs_c_scale[3] = { %s };\n" % ", ".join(fmt(x[1]) for x in c))
    o.append("#endif\n")
    with open(path, "w") as f:
        f.write("".join(o))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/grad_scaler.h")
