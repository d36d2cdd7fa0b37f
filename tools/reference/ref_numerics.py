#!/usr/bin/python3
"""tools/reference/ref_numerics.py -- PyTorch's values for the numerical edge
cases of EveryO's ops, written as a C header the test suite includes
(tests/fixtures/numerics.h), so CI needs no Python:

    /usr/bin/python3 tools/reference/ref_numerics.py tests/fixtures/numerics.h

(`make fixtures` runs it.) Each case is small; inputs are float32 and
written bit-exactly (C hex floats), as are PyTorch's float32 results.

Cases (tests/test_ops_torch.c checks each on the CPU and on CUDA):
  ce_*        torch.nn.functional.cross_entropy at a common offset of 0, 1e4,
              1e6, 1e8, reductions none / sum / mean, with an ignored row,
              and the gradients of the mean and of sum(w * none);
  ce_nan      a NaN logit: that row's loss is NaN;
  sm_*        softmax and log_softmax of a plain row, an offset-1e8 row, a
              row holding NaN and a row holding +inf;
  lse_*       torch.logsumexp of rows plain, offset 1e4 and 1e8, +inf, NaN,
              all -inf; its gradient from float64 (see below);
  mm_*        torch.maximum / torch.minimum with NaN, ties and infinities,
              values and both gradients;
  max_*       torch.max(x, dim=1) values and indices with NaN;
  pool_*      max_pool2d with NaN: values and gradient;
  sgd_*       torch.optim.SGD(momentum=0.9, dampening=0.3, weight_decay=0.01)
              over three steps;
  attn_*      the composed attention softmax(q k^T * scale + mask) v with a
              NaN in q and one in the mask;
  gelu_*      F.gelu (tanh and erf forms) far from 0, at ±inf and NaN; the
              gradient from float64, where PyTorch's float32 tanh form
              overflows to NaN (past 1e19) and EveryO gives the limit;
  relu_*      the ReLU gradient at NaN (it passes), ±0, ±inf, a denormal;
  lsm_*       the log_softmax gradient at -inf entries of rows with mass;
  pool2_*, pool3_*  max_pool2d (k 2 and 3), plain and after a ReLU, with
              several NaNs in a window (the last one takes the gradient).

Where EveryO deliberately differs from PyTorch, the script says so and
writes EveryO's documented value instead (one place: the logsumexp
gradient of an all -inf row, NaN in PyTorch, 0 in EveryO as for softmax).
The logsumexp gradient is taken in float64: PyTorch's float32 gradient,
exp(x - out), carries the rounding of out (at an offset of 1e8 it is 1
instead of 1/3 for three equal entries); EveryO keeps the max and the log
of the sum apart and gives the exact softmax, which float64 is.
"""
import math
import sys

import torch
import torch.nn.functional as F

torch.manual_seed(7)
NAN, INF = float("nan"), float("inf")


def c_float(v):
    v = float(v)
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    if v == 0:
        return "-0.0f" if math.copysign(1, v) < 0 else "0.0f"
    mant, exp = v.hex().split("p")  # exact: a float32 value is exact in double
    return mant.rstrip("0").rstrip(".") + "p" + exp + "f"


class Out:
    def __init__(self):
        self.lines = []

    def floats(self, name, t, note=""):
        vals = [c_float(v) for v in t.detach().reshape(-1).tolist()]
        if note:
            self.lines.append("/* %s */" % note)
        self.lines.append("static const float %s[%d] = {" % (name, len(vals)))
        for i in range(0, len(vals), 6):
            self.lines.append("    " + ", ".join(vals[i:i + 6]) + ",")
        self.lines.append("};")

    def ints(self, name, t):
        vals = [str(int(v)) for v in t.reshape(-1).tolist()]
        self.lines.append("static const int32_t %s[%d] = { %s };" % (name, len(vals), ", ".join(vals)))

    def define(self, name, v):
        self.lines.append("#define %s %s" % (name, v))


o = Out()

# ---- cross-entropy at huge common offsets ---------------------------------------
R, C = 5, 33
o.define("FX_CE_R", R)
o.define("FX_CE_C", C)
base = torch.randn(R, C) * 3
target = torch.tensor([3, 0, -100, 32, 17])
w = torch.tensor([0.5, -1.0, 2.0, 1.5, 0.25])
o.ints("fx_ce_target", target)
o.floats("fx_ce_w", w, "weights of the per-row losses for the gradient of sum(w * none)")
for tag, off in (("0", 0.0), ("1e4", 1e4), ("1e6", 1e6), ("1e8", 1e8)):
    x = (base.double() + off).float().requires_grad_(True)  # offset + noise, rounded to float
    o.floats("fx_ce_x_" + tag, x, "logits at offset %g" % off)
    none = F.cross_entropy(x, target, ignore_index=-100, reduction="none")
    s = F.cross_entropy(x, target, ignore_index=-100, reduction="sum")
    mean = F.cross_entropy(x, target, ignore_index=-100, reduction="mean")
    o.floats("fx_ce_none_" + tag, none)
    o.floats("fx_ce_sum_" + tag, s.reshape(1))
    o.floats("fx_ce_mean_" + tag, mean.reshape(1))
    (gm,) = torch.autograd.grad(mean, x)
    (gw,) = torch.autograd.grad((none * w).sum(), x)
    o.floats("fx_ce_gmean_" + tag, gm)
    o.floats("fx_ce_gnone_" + tag, gw)
    # float64 agrees: PyTorch's float32 result keeps the max and log-sum apart too
    x64 = x.detach().double()
    m64 = F.cross_entropy(x64, target, ignore_index=-100)
    assert abs(m64.item() - mean.item()) <= 1e-5 * abs(m64.item()) + 1e-5, (tag, m64, mean)
x = base.clone()
x[1, 5] = NAN
o.floats("fx_ce_x_nan", x, "a NaN logit in row 1")
o.floats("fx_ce_none_nan", F.cross_entropy(x, target, ignore_index=-100, reduction="none"))

# ---- softmax / log_softmax rows -----------------------------------------------------
x = torch.randn(4, 9) * 2
x[1] += 1e8
x[2, 4] = NAN
x[3, 8] = INF
o.define("FX_SM_R", 4)
o.define("FX_SM_C", 9)
o.floats("fx_sm_x", x, "rows: plain, offset 1e8, a NaN, a +inf")
o.floats("fx_sm_softmax", torch.softmax(x, 1))
o.floats("fx_sm_log_softmax", torch.log_softmax(x, 1))

# ---- logsumexp ------------------------------------------------------------------------
x = torch.randn(6, 5)
x[1] = torch.tensor([1e4, 1e4, 1e4 - 1, 1e4 - 2, 1e4])
x[2] = 1e8
x[3, 2] = INF
x[4, 0] = NAN
x[5] = -INF
o.define("FX_LSE_R", 6)
o.define("FX_LSE_C", 5)
o.floats("fx_lse_x", x, "rows: plain, offset 1e4, offset 1e8, a +inf, a NaN, all -inf")
o.floats("fx_lse_y", torch.logsumexp(x, 1))
x64 = x.double().requires_grad_(True)
(g64,) = torch.autograd.grad(torch.logsumexp(x64, 1).sum(), x64)
assert all(math.isnan(v) for v in g64[5].tolist())  # PyTorch: exp(-inf - -inf)
g64[5] = 0.0  # EveryO: no mass, no gradient (the one deliberate difference)
o.floats("fx_lse_grad", g64.float(),
         "float64 gradient of sum(logsumexp) (the exact softmax); row 5 set to 0: PyTorch "
         "gives NaN there, EveryO 0")

# ---- maximum / minimum ------------------------------------------------------------
a = torch.tensor([1.0, 2.0, NAN, 3.0, 2.0, -INF, INF, NAN], requires_grad=True)
b = torch.tensor([1.0, NAN, 1.0, 4.0, 2.0, -INF, 0.0, NAN], requires_grad=True)
o.floats("fx_mm_a", a)
o.floats("fx_mm_b", b)
for name, fn in (("max", torch.maximum), ("min", torch.minimum)):
    y = fn(a, b)
    ga, gb = torch.autograd.grad(y.sum(), (a, b))
    o.floats("fx_mm_%s_y" % name, y)
    o.floats("fx_mm_%s_ga" % name, ga)
    o.floats("fx_mm_%s_gb" % name, gb)

# ---- max reduction with NaN -------------------------------------------------------
x = torch.tensor([[1.0, NAN, 5.0, NAN], [-INF, -INF, -INF, -INF], [2.0, 7.0, 7.0, -1.0]])
v, i = torch.max(x, 1)
o.floats("fx_max_x", x)
o.floats("fx_max_v", v)
o.ints("fx_max_i", i)

# ---- max pooling with NaN ---------------------------------------------------------
x = torch.randn(1, 1, 4, 4)
x[0, 0, 0, 1] = NAN
x[0, 0, 2, 2] = 9.0
x[0, 0, 3, 3] = NAN
x.requires_grad_(True)
y = F.max_pool2d(x, 2)
(g,) = torch.autograd.grad(y.sum(), x)
o.floats("fx_pool_x", x)
o.floats("fx_pool_y", y)
o.floats("fx_pool_grad", g)

# ---- SGD with dampening -------------------------------------------------------------
p = torch.nn.Parameter(torch.tensor([1.0, -2.0, 0.5]))
opt = torch.optim.SGD([p], lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.01)
grads = torch.tensor([[0.5, 0.25, -1.0], [0.3, -0.6, 0.2], [-0.1, 0.9, 0.4]])
ws = []
for step in range(3):
    p.grad = grads[step].clone()
    opt.step()
    ws.append(p.detach().clone())
o.floats("fx_sgd_grads", grads, "lr 0.1, momentum 0.9, dampening 0.3, weight_decay 0.01; w0 = 1, -2, 0.5")
o.floats("fx_sgd_w", torch.stack(ws), "the weights after each of the three steps")

# ---- attention with NaN scores ---------------------------------------------------------
T, D = 5, 3
q, k, v = torch.randn(1, 1, T, D), torch.randn(1, 1, T, D), torch.randn(1, 1, T, D)
mask = torch.zeros(T, T)
q[0, 0, 1, 2] = NAN
mask[3, 4] = NAN
mask[2, :] = -INF
mask[2, 0] = 0.0
scale = 0.5
out = torch.softmax(q @ k.transpose(-1, -2) * scale + mask, -1) @ v
o.define("FX_ATTN_T", T)
o.define("FX_ATTN_D", D)
o.floats("fx_attn_q", q, "a NaN in q row 1, a NaN mask entry in row 3; row 2 sees key 0 only")
o.floats("fx_attn_k", k)
o.floats("fx_attn_v", v)
o.floats("fx_attn_mask", mask)
o.floats("fx_attn_out", out, "softmax(q k^T * 0.5 + mask) v")

# ---- GELU far from 0, ReLU at NaN ------------------------------------------------------
# (appended after the cases above, so their random draws are unchanged)
x = torch.tensor([-3.4e38, -1e38, -1e20, -1e13, -30.0, -10.0, -5.0, -0.5, 0.0, 0.5, 5.0,
                  10.0, 30.0, 1e13, 1e15, 1e20, 3.4e38, INF, -INF, NAN])
o.define("FX_GELU_N", x.numel())
o.floats("fx_gelu_x", x, "GELU inputs: far out on both sides, the infinities, NaN")
for name, approx in (("tanh", "tanh"), ("erf", "none")):
    o.floats("fx_gelu_%s_y" % name, F.gelu(x, approximate=approx))
    x64 = x.double().requires_grad_(True)
    (g64,) = torch.autograd.grad(F.gelu(x64, approximate=approx).sum(), x64)
    o.floats("fx_gelu_%s_grad" % name, g64.float(),
             "float64 gradient: PyTorch's float32 tanh form overflows to NaN past 1e19")
x = torch.tensor([NAN, -1.0, 2.0, 0.0, -0.0, INF, -INF, 1e-40], requires_grad=True)
w = torch.arange(1.0, 9.0)
(g,) = torch.autograd.grad((F.relu(x) * w).sum(), x)
o.define("FX_RELU_N", x.numel())
o.floats("fx_relu_x", x, "ReLU inputs; the gradient of sum(relu(x) * (1..8)) passes at NaN")
o.floats("fx_relu_grad", g)

# ---- log_softmax's gradient at -inf entries ---------------------------------------------
x = torch.tensor([[-INF, 1.0, 0.0, 2.0], [-INF, -INF, 5.0, -INF], [3.0, -INF, -INF, 1.0]],
                 requires_grad=True)
w = torch.arange(1.0, 13.0).reshape(3, 4)
(g,) = torch.autograd.grad((torch.log_softmax(x, 1) * w).sum(), x)
o.floats("fx_lsm_x", x, "-inf entries in rows with mass: their gradient is dy")
o.floats("fx_lsm_grad", g, "gradient of sum(log_softmax(x) * (1..12))")

# ---- max pooling with several NaNs, and after a ReLU ------------------------------------
x = torch.tensor([[NAN, 1.0, NAN, NAN], [2.0, 3.0, 0.0, NAN],
                  [-1.0, -2.0, 5.0, NAN], [-3.0, -4.0, NAN, 1.0]]).reshape(1, 1, 4, 4)
x3 = torch.tensor([[1.0, NAN, 2.0], [0.0, NAN, 7.0], [NAN, 3.0, 9.0]]).reshape(1, 1, 3, 3)
for tag, t, k in (("2", x, 2), ("3", x3, 3)):
    t = t.clone().requires_grad_(True)
    o.floats("fx_pool%s_x" % tag, t, "k = %d: windows with one NaN, several, none" % k)
    for name, f in (("", lambda v: v), ("relu_", F.relu)):
        y = F.max_pool2d(f(t), k)
        (g,) = torch.autograd.grad(y.sum(), t)
        o.floats("fx_pool%s_%sy" % (tag, name), y)
        o.floats("fx_pool%s_%sgrad" % (tag, name), g)

header = [
    "/* tests/fixtures/numerics.h — PyTorch %s's values for the numerical edge" % torch.__version__,
    " * cases of tests/test_ops_torch.c. Generated by tools/reference/ref_numerics.py",
    " * (make fixtures); do not edit by hand. */",
    "#ifndef EO_FIXTURES_NUMERICS_H",
    "#define EO_FIXTURES_NUMERICS_H",
    "#include <math.h>",
    "#include <stdint.h>",
]
with open(sys.argv[1], "w") as f:
    f.write("\n".join(header + o.lines + ["#endif", ""]))
