#!/usr/bin/env python3
"""tools/build/gen-ptx16.py - writes the 16-bit (bf16 / f16 storage) PTX modules.

    python3 tools/build/gen-ptx16.py elementwise16 > ptx/elementwise16.ptx
    python3 tools/build/gen-ptx16.py rows16        > ptx/rows16.ptx
    python3 tools/build/gen-ptx16.py embedding16   > ptx/embedding16.ptx
    python3 tools/build/gen-ptx16.py optim16       > ptx/optim16.ptx
    python3 tools/build/gen-ptx16.py layernorm < ptx/layernorm.ptx  # the file with its
                                                   # generated region (the fused f32 backward)
    python3 tools/build/gen-ptx16.py all           # all four, into ptx/, and that region

Every kernel here stores its tensors as 16-bit values and computes in f32
("16-bit storage, f32 arithmetic"): a value is widened to f32 when it is
loaded and rounded to nearest even once when it is stored. Each kernel
exists twice, for bf16 and for f16, and the two differ only in those
conversions, which is why a script writes them: the kernel bodies are
written once below, the conversions come from `Ty`. The build does not run
this script; its output is committed and checked like hand-written PTX
(`make ptx-check`, the cuda16 suite). Regenerate after editing and commit
both. The comments the script emits are the kernels' documentation.
"""

import sys

# ---------------------------------------------------------------- emitter --


class K:
    """One kernel: a parameter list, registers declared on first use, a body."""

    def __init__(self, name, params, doc):
        self.name, self.params, self.doc = name, params, doc
        self.regs = {}
        self.order = []
        self.body = []
        self.shared = []
        self.n = 0

    def r(self, ty, *names):
        for nm in names:
            for one in nm.split():
                if one not in self.regs:
                    self.regs[one] = ty
                    self.order.append(one)
        return self

    def o(self, text, comment=None):
        if comment:
            text = text.ljust(44) + "// " + comment
        self.body.append("    " + text)

    def c(self, text):
        for line in text.split("\n"):
            self.body.append("    // " + line)

    def label(self, name):
        self.body.append(name + ":")

    def uniq_label(self, stem):
        self.n += 1
        self.last_label = "%s_%d" % (stem, self.n)
        return self.last_label

    def uniq(self, stem):
        self.n += 1
        return "%s_%d" % (stem, self.n)

    def text(self):
        out = []
        for line in self.doc.strip("\n").split("\n"):
            out.append("// " + line if line else "//")
        out.append(".visible .entry %s(" % self.name)
        ps = []
        for ty, nm, cm in self.params:
            ps.append(("    .param .%s p_%s" % (ty, nm), cm))
        for i, (t, cm) in enumerate(ps):
            sep = "," if i + 1 < len(ps) else ")"
            out.append((t + sep).ljust(36) + "// " + cm)
        out.extend(getattr(self, "directives", []))
        out.append("{")
        for s in self.shared:
            out.append("    " + s)
        bytype = {}
        for nm in self.order:
            bytype.setdefault(self.regs[nm], []).append("%" + nm)
        for ty in bytype:
            names = bytype[ty]
            for i in range(0, len(names), 10):
                out.append("    .reg .%s %s;" % (ty, ", ".join(names[i:i + 10])))
        for ty, nm, _ in self.params:
            pty = {"u32": "u32", "s32": "s32", "u64": "u64", "s64": "s64", "f32": "f32"}[ty]
            rty = {"u32": "b32", "s32": "b32", "u64": "b64", "s64": "b64", "f32": "f32"}[ty]
            self.regs.setdefault(nm, rty)
            out.append("    ld.param.%s %%%s, [p_%s];" % (pty, nm, nm))
        # parameter registers are declared with the others (added above)
        decl = []
        for ty, nm, _ in self.params:
            rty = {"u32": "b32", "s32": "b32", "u64": "b64", "s64": "b64", "f32": "f32"}[ty]
            decl.append("    .reg .%s %%%s;" % (rty, nm))
        i = out.index("{") + 1 + len(self.shared)
        out[i:i] = decl
        out.extend(self.body)
        out.append("}")
        return "\n".join(out) + "\n"


class Ty:
    """The 16-bit storage type's conversions, f32 arithmetic around them."""

    def __init__(self, name):
        self.name = name  # "bf16" or "f16"

    def unpack(self, k, w, lo, hi):
        """Two 16-bit values packed in the b32 register w -> f32 lo, hi."""
        k.r("b32", "cv_t").r("b16", "cv_h")
        if self.name == "bf16":
            # a bf16 is the top half of an f32: move it there, no rounding
            k.o("shl.b32 %%cv_t, %s, 16;" % w, "bf16 -> f32: the low half moved up")
            k.o("mov.b32 %s, %%cv_t;" % lo)
            k.o("and.b32 %%cv_t, %s, -65536;" % w, "the high half, low bits cleared")
            k.o("mov.b32 %s, %%cv_t;" % hi)
        else:
            k.o("cvt.u16.u32 %%cv_h, %s;" % w, "low half")
            k.o("cvt.f32.f16 %s, %%cv_h;" % lo, "f16 -> f32 (exact)")
            k.o("shr.u32 %%cv_t, %s, 16;" % w)
            k.o("cvt.u16.u32 %cv_h, %cv_t;", "high half")
            k.o("cvt.f32.f16 %s, %%cv_h;" % hi)

    def pack(self, k, w, lo, hi):
        """f32 lo, hi -> one b32 of two 16-bit values, each rounded to nearest even."""
        k.o("cvt.rn.%sx2.f32 %s, %s, %s;" % (self.name, w, hi, lo), "lo in the low half")

    def load1(self, k, f, addr):
        """One 16-bit value at [addr] -> f32 f."""
        k.r("b16", "cv_h").r("b32", "cv_t")
        k.o("ld.global.u16 %%cv_h, [%s];" % addr)
        self.widen(k, f)

    def widen(self, k, f, h="%cv_h"):
        """The 16-bit value in the b16 register h -> f32 f (exact)."""
        k.r("b32", "cv_t")
        if self.name == "bf16":
            k.o("cvt.u32.u16 %%cv_t, %s;" % h)
            k.o("shl.b32 %cv_t, %cv_t, 16;", "bf16 -> f32")
            k.o("mov.b32 %s, %%cv_t;" % f)
        else:
            k.o("cvt.f32.f16 %s, %s;" % (f, h))

    def round1(self, k, h, f):
        """f32 f -> the b16 register h, rounded to nearest even."""
        k.o("cvt.rn.%s.f32 %s, %s;" % (self.name, h, f), "round to nearest even")

    def store1(self, k, addr, f):
        k.r("b16", "cv_h")
        k.o("cvt.rn.%s.f32 %%cv_h, %s;" % (self.name, f), "round to nearest even")
        k.o("st.global.b16 [%s], %%cv_h;" % addr)


TYPES = [Ty("bf16"), Ty("f16")]

# ------------------------------------------------------------- math blocks --
# The accurate exp/log/tanh/erf of ptx/elementwise.ptx (same sequences, same
# constants: ~2 ulp in f32), for the unary ops, whose f32 result must match
# the f32 kernels' before it is rounded to 16 bits.


def exp_acc(k, dst, src):
    k.r("f32", "ex_a ex_t ex_n ex_r ex_p ex_s1 ex_s2").r("b32", "ex_k ex_k1 ex_k2")
    k.c("%s = exp(%s): x = k*ln2 + r, e^x = 2^(r*log2e) * 2^k1 * 2^k2" % (dst, src))
    k.o("max.f32 %%ex_a, %s, 0fC2DC0000;" % src, "clamp below at -110 (e^-110 rounds to 0)")
    k.o("min.f32 %ex_a, %ex_a, 0f42B20000;", "clamp above at 89 (e^89 overflows to inf)")
    k.o("mul.rn.f32 %ex_t, %ex_a, 0f3FB8AA3B;", "x * log2(e)")
    k.o("cvt.rni.s32.f32 %ex_k, %ex_t;", "k = nearest integer")
    k.o("cvt.rn.f32.s32 %ex_n, %ex_k;")
    k.o("fma.rn.f32 %ex_r, %ex_n, 0fBF317200, %ex_a;", "r = x - k*ln2_hi (exact)")
    k.o("fma.rn.f32 %ex_r, %ex_n, 0fB5BFBE8E, %ex_r;", "r = r - k*ln2_lo")
    k.o("mul.rn.f32 %ex_r, %ex_r, 0f3FB8AA3B;", "r in log2 units, |r| <= 0.5")
    k.o("ex2.approx.f32 %ex_p, %ex_r;", "2^r (relative error ~2^-22)")
    k.o("shr.s32 %ex_k1, %ex_k, 1;", "k1 = floor(k/2), k2 = k - k1")
    k.o("sub.s32 %ex_k2, %ex_k, %ex_k1;")
    k.o("add.s32 %ex_k1, %ex_k1, 127;")
    k.o("shl.b32 %ex_k1, %ex_k1, 23;")
    k.o("mov.b32 %ex_s1, %ex_k1;", "2^k1 exactly")
    k.o("add.s32 %ex_k2, %ex_k2, 127;")
    k.o("shl.b32 %ex_k2, %ex_k2, 23;")
    k.o("mov.b32 %ex_s2, %ex_k2;", "2^k2 exactly")
    k.o("mul.rn.f32 %ex_p, %ex_p, %ex_s1;")
    k.o("mul.rn.f32 %s, %%ex_p, %%ex_s2;" % dst, "e^x")


def tanh_acc(k, dst, src):
    k.r("f32", "th_a th_x2 th_p th_s th_l th_e th_d").r("pred", "th_q")
    k.c("%s = tanh(%s): Taylor to x^9 below |x| = 0.3, (1 - e^-2|x|)/(1 + e^-2|x|) above" % (dst, src))
    k.o("abs.f32 %%th_a, %s;" % src)
    k.o("mul.rn.f32 %%th_x2, %s, %s;" % (src, src))
    k.o("fma.rn.f32 %th_p, %th_x2, 0f3CB327A4, 0fBD5D0DD1;", "-17/315 + x2*62/2835")
    k.o("fma.rn.f32 %th_p, %th_p, %th_x2, 0f3E088889;", "2/15 + x2(...)")
    k.o("fma.rn.f32 %th_p, %th_p, %th_x2, 0fBEAAAAAB;", "-1/3 + x2(...)")
    k.o("mul.rn.f32 %th_p, %th_p, %th_x2;")
    k.o("fma.rn.f32 %%th_s, %%th_p, %s, %s;" % (src, src), "small |x|: x + x^3 P")
    k.o("mul.rn.f32 %th_e, %th_a, 0fC0000000;", "-2|x|")
    exp_acc(k, "%th_e", "%th_e")
    k.o("add.rn.f32 %th_d, %th_e, 0f3F800000;")
    k.o("sub.rn.f32 %th_l, 0f3F800000, %th_e;")
    k.o("div.rn.f32 %th_l, %th_l, %th_d;", "tanh|x|")
    k.o("setp.lt.f32 %%th_q, %s, 0f00000000;" % src)
    k.o("@%th_q neg.f32 %th_l, %th_l;", "odd function")
    k.o("setp.lt.f32 %th_q, %th_a, 0f3E99999A;", "|x| < 0.3?")
    k.o("selp.f32 %th_l, %th_s, %th_l, %th_q;")
    k.o("setp.nan.f32 %%th_q, %s, %s;" % (src, src))
    k.o("selp.f32 %s, %s, %%th_l, %%th_q;" % (dst, src), "NaN in, NaN out")


def erf_acc(k, dst, src, expdst):
    """dst = erf(src); expdst = exp(-src^2) (the backward of gelu_erf uses it)."""
    k.r("f32", "ef_a ef_t ef_p ef_e ef_r").r("pred", "ef_q")
    k.c("%s = erf(%s): Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7), Taylor below 0.3" % (dst, src))
    k.o("abs.f32 %%ef_a, %s;" % src)
    k.o("fma.rn.f32 %ef_t, %ef_a, 0f3EA7BA05, 0f3F800000;", "1 + p|x|, p = 0.3275911")
    k.o("rcp.rn.f32 %ef_t, %ef_t;", "t")
    k.o("fma.rn.f32 %ef_p, %ef_t, 0f3F87DC22, 0fBFBA00E3;", "a4 + t a5")
    k.o("fma.rn.f32 %ef_p, %ef_p, %ef_t, 0f3FB5F0E3;", "a3 + t(...)")
    k.o("fma.rn.f32 %ef_p, %ef_p, %ef_t, 0fBE91A98E;", "a2 + t(...)")
    k.o("fma.rn.f32 %ef_p, %ef_p, %ef_t, 0f3E827906;", "a1 + t(...)")
    k.o("mul.rn.f32 %ef_p, %ef_p, %ef_t;")
    k.o("mul.rn.f32 %ef_e, %ef_a, %ef_a;")
    k.o("neg.f32 %ef_e, %ef_e;", "-x^2")
    exp_acc(k, expdst, "%ef_e")
    k.o("mul.rn.f32 %%ef_p, %%ef_p, %s;" % expdst)
    k.o("sub.rn.f32 %ef_r, 0f3F800000, %ef_p;", "erf|x|")
    k.o("setp.lt.f32 %%ef_q, %s, 0f00000000;" % src)
    k.o("@%ef_q neg.f32 %ef_r, %ef_r;", "erf is odd")
    k.o("mul.rn.f32 %%ef_e, %s, %s;" % (src, src), "Taylor: 2/sqrt(pi) (x - x^3/3 + x^5/10 - x^7/42 + x^9/216)")
    k.o("fma.rn.f32 %ef_p, %ef_e, 0f3B97B426, 0fBCC30C31;")
    k.o("fma.rn.f32 %ef_p, %ef_p, %ef_e, 0f3DCCCCCD;")
    k.o("fma.rn.f32 %ef_p, %ef_p, %ef_e, 0fBEAAAAAB;")
    k.o("mul.rn.f32 %ef_p, %ef_p, %ef_e;")
    k.o("fma.rn.f32 %%ef_p, %%ef_p, %s, %s;" % (src, src))
    k.o("mul.rn.f32 %ef_p, %ef_p, 0f3F906EBB;", "* 2/sqrt(pi)")
    k.o("setp.lt.f32 %ef_q, %ef_a, 0f3E99999A;", "|x| < 0.3?")
    k.o("selp.f32 %s, %%ef_p, %%ef_r, %%ef_q;" % dst)


def log_acc(k, dst, src):
    k.r("f32", "lg_x lg_m lg_s lg_s2 lg_p lg_r lg_e lg_sp").r("b32", "lg_b lg_k lg_t").r("pred", "lg_q")
    k.c("%s = log(%s): x = m 2^k, log m = 2 atanh((m-1)/(m+1)) by its series" % (dst, src))
    k.o("setp.lt.f32 %%lg_q, %s, 0f00800000;" % src, "subnormal: scale by 2^23 first")
    k.o("mul.rn.f32 %%lg_x, %s, 0f4B000000;" % src)
    k.o("selp.f32 %%lg_x, %%lg_x, %s, %%lg_q;" % src)
    k.o("selp.s32 %lg_k, -23, 0, %lg_q;")
    k.o("mov.b32 %lg_b, %lg_x;")
    k.o("shr.u32 %lg_t, %lg_b, 23;")
    k.o("add.s32 %lg_t, %lg_t, -127;")
    k.o("add.s32 %lg_k, %lg_k, %lg_t;", "k")
    k.o("and.b32 %lg_b, %lg_b, 8388607;")
    k.o("or.b32 %lg_b, %lg_b, 1065353216;", "m in [1, 2)")
    k.o("mov.b32 %lg_m, %lg_b;")
    k.o("setp.gt.f32 %lg_q, %lg_m, 0f3FB504F3;", "m > sqrt(2): halve it")
    k.o("@%lg_q mul.rn.f32 %lg_m, %lg_m, 0f3F000000;")
    k.o("@%lg_q add.s32 %lg_k, %lg_k, 1;")
    k.o("add.rn.f32 %lg_s, %lg_m, 0fBF800000;")
    k.o("add.rn.f32 %lg_p, %lg_m, 0f3F800000;")
    k.o("div.rn.f32 %lg_s, %lg_s, %lg_p;", "s = (m-1)/(m+1)")
    k.o("mul.rn.f32 %lg_s2, %lg_s, %lg_s;")
    k.o("fma.rn.f32 %lg_p, %lg_s2, 0f3DE38E39, 0f3E124925;")
    k.o("fma.rn.f32 %lg_p, %lg_p, %lg_s2, 0f3E4CCCCD;")
    k.o("fma.rn.f32 %lg_p, %lg_p, %lg_s2, 0f3EAAAAAB;")
    k.o("mul.rn.f32 %lg_p, %lg_p, %lg_s2;")
    k.o("add.rn.f32 %lg_r, %lg_s, %lg_s;")
    k.o("fma.rn.f32 %lg_r, %lg_r, %lg_p, %lg_r;", "log m")
    k.o("cvt.rn.f32.s32 %lg_e, %lg_k;")
    k.o("fma.rn.f32 %lg_r, %lg_e, 0f35BFBE8E, %lg_r;")
    k.o("fma.rn.f32 %lg_r, %lg_e, 0f3F317200, %lg_r;", "+ k ln2")
    k.o("lg2.approx.f32 %%lg_sp, %s;" % src, "special inputs: 0, < 0, inf, NaN")
    k.o("mul.rn.f32 %lg_sp, %lg_sp, 0f3F317218;")
    k.o("mov.b32 %%lg_b, %s;" % src)
    k.o("add.s32 %lg_b, %lg_b, -1;", "0 < x < inf exactly when bits-1 < 0x7f7fffff")
    k.o("setp.lt.u32 %lg_q, %lg_b, 2139095039;")
    k.o("selp.f32 %s, %%lg_r, %%lg_sp, %%lg_q;" % dst)


def exp_fast(k, dst, src):
    """e^x as 2^(x log2 e) with ex2.approx: relative error about 2^-18 for
    |x| < 100 (the rounding of x log2 e), far below half an ulp of a 16-bit
    result (2^-9 bf16, 2^-12 f16). -inf gives 0, NaN gives NaN."""
    k.o("mul.rn.f32 %s, %s, 0f3FB8AA3B;" % (dst, src), "x log2(e)")
    k.o("ex2.approx.f32 %s, %s;" % (dst, dst), "2^(x log2 e) = e^x")


# -------------------------------------------------------- shared pieces --


def grid_stride(k, i="i", step="step"):
    k.r("b32", "gs_t gs_u", i, step)
    k.c("grid-stride: %s = ctaid.x*ntid.x + tid.x, %s = nctaid.x*ntid.x" % (i, step))
    k.o("mov.u32 %%%s, %%ctaid.x;" % i)
    k.o("mov.u32 %gs_t, %ntid.x;")
    k.o("mov.u32 %%%s, %%nctaid.x;" % step)
    k.o("mul.lo.u32 %%%s, %%%s, %%gs_t;" % (step, step))
    k.o("mov.u32 %gs_u, %tid.x;")
    k.o("mad.lo.u32 %%%s, %%%s, %%gs_t, %%gs_u;" % (i, i))


def tail_start(k, shift, comment=None):
    """%i = this thread's first element past the nvec groups of 2^shift
    values (the one-value-a-thread tail after a group loop)."""
    k.r("b32", "e0")
    k.o("mov.u32 %gs_t, %ntid.x;")
    k.o("mov.u32 %e0, %ctaid.x;")
    k.o("mad.lo.u32 %i, %e0, %gs_t, %gs_u;")
    k.o("shl.b32 %%e0, %%nvec, %d;" % shift)
    k.o("add.u32 %i, %i, %e0;", comment)


def until(k, idx, bound, target):
    """Leave for target once idx >= bound (u32)."""
    k.r("pred", "pg")
    k.o("setp.ge.u32 %%pg, %s, %s;" % (idx, bound))
    k.o("@%%pg bra %s;" % target)


def advance(k, loop):
    """The grid-stride step, back to loop."""
    k.o("add.u32 %i, %i, %step;")
    k.o("bra %s;" % loop)


def finish(k):
    k.label("DONE")
    k.o("ret;")


def addr(k, dst, base, idx, size):
    k.r("b64", dst)
    k.o("mul.wide.u32 %%%s, %%%s, %d;" % (dst, idx, size))
    k.o("add.u64 %%%s, %%%s, %%%s;" % (dst, base, dst))


VEC_NOTE = """Elements [0, 8 nvec) go 8 per thread: one 16-byte load of 8 halves
(ld.global.v4.b32), unpacked to f32; [8 nvec, n) one per thread. The
launcher passes nvec = n/8 when every pointer is 16-byte aligned, else 0,
so the vector path never needs a division or a bounds test per element."""


# =========================================================== elementwise16 --

UNARY_OPS = """op codes (eo_unop): 0 relu, 1 gelu_tanh, 2 gelu_erf, 3 tanh, 4 sigmoid,
5 exp, 6 log, 7 scale; the op is uniform over the launch."""


def unary_f(k, lab, v, r):
    """r = f(v) by op (predicates %p0..%p6), then bra lab_DONE."""
    done = lab + "_DONE"
    for i, name in enumerate(["RELU", "GELU_TANH", "GELU_ERF", "TANH", "SIGMOID", "EXP", "LOG"]):
        k.o("@%%p%d bra %s_%s;" % (i, lab, name))
    k.o("mul.rn.f32 %s, %%alpha, %s;" % (r, v), "scale: alpha x")
    k.o("bra %s;" % done)
    k.r("f32", "u t e").r("pred", "pnan")
    k.label(lab + "_RELU")
    k.o("setp.lt.f32 %%pnan, %s, 0f00000000;" % v, "x < 0 (false for NaN) gives 0")
    k.o("selp.f32 %s, 0f00000000, %s, %%pnan;" % (r, v))
    k.o("bra %s;" % done)
    k.label(lab + "_GELU_TANH")
    k.o("mul.rn.f32 %%t, %s, %s;" % (v, v))
    k.o("mul.rn.f32 %%t, %%t, %s;" % v, "x^3")
    k.o("fma.rn.f32 %%u, %%t, 0f3D372713, %s;" % v, "x + 0.044715 x^3")
    k.o("mul.rn.f32 %u, %u, 0f3F4C422A;", "u = sqrt(2/pi) (...)")
    tanh_acc(k, "%t", "%u")
    k.o("add.rn.f32 %t, %t, 0f3F800000;")
    k.o("mul.rn.f32 %s, %s, 0f3F000000;" % (r, v))
    k.o("mul.rn.f32 %s, %s, %%t;" % (r, r), "x/2 (1 + tanh u)")
    k.o("bra %s_NAN;" % lab)
    k.label(lab + "_GELU_ERF")
    k.o("mul.rn.f32 %%u, %s, 0f3F3504F3;" % v, "x / sqrt 2")
    erf_acc(k, "%t", "%u", "%e")
    k.o("add.rn.f32 %t, %t, 0f3F800000;")
    k.o("mul.rn.f32 %s, %s, 0f3F000000;" % (r, v))
    k.o("mul.rn.f32 %s, %s, %%t;" % (r, r), "x/2 (1 + erf)")
    k.o("bra %s_NAN;" % lab)
    k.label(lab + "_TANH")
    tanh_acc(k, r, v)
    k.o("bra %s;" % done)
    k.label(lab + "_SIGMOID")
    k.o("neg.f32 %%u, %s;" % v)
    exp_acc(k, "%e", "%u")
    k.o("add.rn.f32 %e, %e, 0f3F800000;")
    k.o("rcp.rn.f32 %s, %%e;" % r, "1 / (1 + e^-x)")
    k.o("bra %s_NAN;" % lab)
    k.label(lab + "_EXP")
    exp_acc(k, r, v)
    k.o("bra %s_NAN;" % lab)
    k.label(lab + "_LOG")
    log_acc(k, r, v)
    k.o("bra %s;" % done)
    k.label(lab + "_NAN")
    k.o("setp.nan.f32 %%pnan, %s, %s;" % (v, v))
    k.o("selp.f32 %s, %s, %s, %%pnan;" % (r, v, r), "NaN in, NaN out")
    k.label(done)


def unary_df(k, lab, v, r):
    """r = f'(v) by op, where v is x for relu/gelu/log and y for tanh/sigmoid/exp."""
    done = lab + "_DONE"
    for i, name in enumerate(["RELU", "GELU_TANH", "GELU_ERF", "TANH", "SIGMOID", "EXP", "LOG"]):
        k.o("@%%p%d bra %s_%s;" % (i, lab, name))
    k.o("mov.f32 %s, %%alpha;" % r, "scale: alpha")
    k.o("bra %s;" % done)
    k.r("f32", "u t e s w").r("pred", "pp pfin")
    k.label(lab + "_RELU")
    k.c("the gradient passes where NOT (x <= 0): x > 0 and x = NaN (PyTorch's\n"
        "threshold_backward tests y <= 0, false for NaN); only x <= 0 gets 0")
    k.o("setp.le.f32 %%pp, %s, 0f00000000;" % v)
    k.o("selp.f32 %s, 0f00000000, 0f3F800000, %%pp;" % r)
    k.o("bra %s;" % done)
    k.label(lab + "_GELU_TANH")
    k.o("mul.rn.f32 %%s, %s, %s;" % (v, v), "x^2")
    k.o("mul.rn.f32 %%t, %%s, %s;" % v)
    k.o("fma.rn.f32 %%u, %%t, 0f3D372713, %s;" % v)
    k.o("mul.rn.f32 %u, %u, 0f3F4C422A;", "u")
    tanh_acc(k, "%t", "%u")
    k.o("fma.rn.f32 %s, %s, 0f3E095D4F, 0f3F800000;", "1 + 3*0.044715 x^2")
    k.o("mul.rn.f32 %s, %s, 0f3F4C422A;", "du/dx")
    k.o("mul.rn.f32 %w, %t, %t;")
    k.o("sub.rn.f32 %w, 0f3F800000, %w;", "1 - t^2")
    k.c("where tanh u is exactly +-1 the correction 0.5 x (1 - t^2) du/dx is exactly\n"
        "0 for every finite x, so f' = 0.5 (1 + t) is exactly 1 or 0; past |x| ~ 1.8e19\n"
        "(bf16 reaches it) x^2, and so du/dx, is inf, and 0 * inf would make it NaN")
    k.o("setp.eq.f32 %pp, %w, 0f00000000;", "t = +-1 (false for NaN) ...")
    k.o("abs.f32 %%e, %s;" % v)
    k.o("setp.lt.f32 %pfin, %e, 0f7F800000;", "... and x finite (+-inf keeps the NaN, as PyTorch)")
    k.o("and.pred %pp, %pp, %pfin;")
    k.o("mul.rn.f32 %w, %w, %s;")
    k.o("mul.rn.f32 %%w, %%w, %s;" % v)
    k.o("mul.rn.f32 %w, %w, 0f3F000000;", "0.5 x (1 - t^2) du/dx")
    k.o("@%pp mov.f32 %w, 0f00000000;", "... then the correction is 0")
    k.o("add.rn.f32 %t, %t, 0f3F800000;")
    k.o("mul.rn.f32 %t, %t, 0f3F000000;", "0.5 (1 + t)")
    k.o("add.rn.f32 %s, %%t, %%w;" % r)
    k.o("bra %s;" % done)
    k.label(lab + "_GELU_ERF")
    k.o("mul.rn.f32 %%u, %s, 0f3F3504F3;" % v)
    erf_acc(k, "%t", "%u", "%e")
    k.o("add.rn.f32 %t, %t, 0f3F800000;")
    k.o("mul.rn.f32 %t, %t, 0f3F000000;", "Phi(x)")
    k.o("mul.rn.f32 %%w, %s, %%e;" % v, "x e^(-x^2/2)")
    k.o("mul.rn.f32 %w, %w, 0f3ECC422A;", "/ sqrt(2 pi)")
    k.o("add.rn.f32 %s, %%t, %%w;" % r)
    k.o("bra %s;" % done)
    k.label(lab + "_TANH")
    k.o("mul.rn.f32 %s, %s, %s;" % (r, v, v))
    k.o("sub.rn.f32 %s, 0f3F800000, %s;" % (r, r), "1 - y^2")
    k.o("bra %s;" % done)
    k.label(lab + "_SIGMOID")
    k.o("sub.rn.f32 %s, 0f3F800000, %s;" % (r, v))
    k.o("mul.rn.f32 %s, %s, %s;" % (r, v, r), "y (1 - y)")
    k.o("bra %s;" % done)
    k.label(lab + "_EXP")
    k.o("mov.f32 %s, %s;" % (r, v), "y")
    k.o("bra %s;" % done)
    k.label(lab + "_LOG")
    k.o("rcp.rn.f32 %s, %s;" % (r, v), "1/x")
    k.label(done)


def op_preds(k):
    k.r("pred", "p0 p1 p2 p3 p4 p5 p6")
    for i in range(7):
        k.o("setp.eq.u32 %%p%d, %%op, %d;" % (i, i))


def load8(k, t, base_addr, q):
    """8 values at [base_addr] (16-byte aligned) -> f32 registers q[0..7]."""
    k.r("b32", "w0 w1 w2 w3")
    k.o("ld.global.v4.b32 {%%w0, %%w1, %%w2, %%w3}, [%s];" % base_addr, "8 halves, one 16-byte load")
    for j in range(4):
        t.unpack(k, "%%w%d" % j, q[2 * j], q[2 * j + 1])


def store8(k, t, base_addr, q):
    k.r("b32", "w0 w1 w2 w3")
    for j in range(4):
        t.pack(k, "%%w%d" % j, q[2 * j], q[2 * j + 1])
    k.o("st.global.v4.b32 [%s], {%%w0, %%w1, %%w2, %%w3};" % base_addr, "8 halves, one 16-byte store")


def rotate(k, q, r):
    """q0 <- q1 <- ... <- q7 <- r: the next element moves to the front."""
    for j in range(7):
        k.o("mov.f32 %s, %s;" % (q[j], q[j + 1]))
    k.o("mov.f32 %s, %s;" % (q[7], r))


Q = ["%%q%d" % j for j in range(8)]
QUEUE_NOTE = """The 8 values of a group are processed by one copy of the op's code, not
eight: they sit in a queue q0..q7; each turn computes r = f(q0), shifts
the queue by one and puts r at the back, so after 8 turns q0..q7 hold the
8 results in order (7 register moves a turn, which ptxas mostly renames
away; the op's code is written once)."""


def k_unary(t):
    k = K("eo_unary16_" + t.name, [
        ("u32", "op", "eo_unop"), ("u32", "n", "element count"),
        ("u32", "nvec", "groups of 8 taken 16 bytes at a time (n/8 or 0)"),
        ("u64", "x", "const %s *x" % t.name), ("u64", "y", "%s *y" % t.name),
        ("f32", "alpha", "scale factor (SCALE only)")],
        "eo_unary16_%s(op, n, nvec, x, y, alpha): y[i] = f(x[i]) in f32, rounded to %s.\n"
        "%s\nThe f32 math is ptx/elementwise.ptx's (exp, log, tanh, erf to ~2 ulp).\n%s\n%s"
        % (t.name, t.name, UNARY_OPS, VEC_NOTE, QUEUE_NOTE))
    k.r("f32", *["q%d" % j for j in range(8)]).r("f32", "r v").r("b32", "j").r("pred", "pg pscal")
    op_preds(k)
    grid_stride(k)
    k.o("setp.ne.u32 %pscal, 0, 0;", "vector phase first")
    k.label("VEC")
    until(k, "%i", "%nvec", "TAIL")
    addr(k, "ax", "x", "i", 16)
    load8(k, t, "%ax", Q)
    k.o("mov.u32 %j, 0;")
    k.label("TURN")
    k.o("mov.f32 %v, %q0;")
    unary_f(k, "F", "%v", "%r")
    k.o("@%pscal bra TAIL_STORE;")
    rotate(k, Q, "%r")
    k.o("add.u32 %j, %j, 1;")
    k.o("setp.lt.u32 %pg, %j, 8;")
    k.o("@%pg bra TURN;")
    addr(k, "ay", "y", "i", 16)
    store8(k, t, "%ay", Q)
    advance(k, "VEC")
    k.label("TAIL")
    k.c("the elements past the groups: one per thread, same code for f")
    k.o("setp.ne.u32 %pscal, 0, 1;")
    tail_start(k, 3, "first element past the groups")
    k.label("TAIL_LOOP")
    until(k, "%i", "%n", "DONE")
    addr(k, "ax", "x", "i", 2)
    t.load1(k, "%q0", "%ax")
    k.o("bra TURN;")
    k.label("TAIL_STORE")
    addr(k, "ay", "y", "i", 2)
    t.store1(k, "%ay", "%r")
    advance(k, "TAIL_LOOP")
    finish(k)
    return k


def k_unary_bwd(t):
    k = K("eo_unary16_bwd_" + t.name, [
        ("u32", "op", "eo_unop"), ("u32", "n", "element count"),
        ("u32", "nvec", "groups of 8 taken 16 bytes at a time (n/8 or 0)"),
        ("u64", "x", "const %s *x (forward input)" % t.name),
        ("u64", "y", "const %s *y (forward output)" % t.name),
        ("u64", "dy", "const %s *dy" % t.name), ("u64", "dx", "%s *dx (accumulated)" % t.name),
        ("f32", "alpha", "scale factor (SCALE only)")],
        "eo_unary16_bwd_%s(op, n, nvec, x, y, dy, dx, alpha): dx[i] += dy[i] f'(x[i]),\n"
        "the sum in f32, rounded to %s once.\n%s\n"
        "f' is computed from x (relu, gelu, log: 1/x) or from y (tanh 1 - y^2,\n"
        "sigmoid y (1 - y), exp y), whichever the op needs: only that one is read\n"
        "(src = x or y, chosen once), and scale reads neither.\n%s\n%s"
        % (t.name, t.name, UNARY_OPS, VEC_NOTE, QUEUE_NOTE))
    k.r("f32", *["q%d" % j for j in range(8)]).r("f32", "r v a g").r("b32", "j")
    k.r("pred", "pg pscal puse_y pnone").r("b64", "src")
    op_preds(k)
    k.o("setp.ge.u32 %puse_y, %op, 3;", "tanh, sigmoid, exp read y ...")
    k.o("setp.eq.u32 %pg, %op, 6;")
    k.o("@%pg setp.ne.u32 %puse_y, 0, 0;", "... log reads x")
    k.o("setp.eq.u32 %pnone, %op, 7;", "scale reads neither")
    k.o("selp.b64 %src, %y, %x, %puse_y;")
    for j in range(8):
        k.o("mov.f32 %%q%d, 0f00000000;" % j, "scale reads no input: f' needs none" if j == 0 else None)
    grid_stride(k)
    k.o("setp.ne.u32 %pscal, 0, 0;")
    k.label("VEC")
    until(k, "%i", "%nvec", "TAIL")
    addr(k, "ax", "src", "i", 16)
    k.o("@%pnone bra VEC_SKIP;")
    load8(k, t, "%ax", Q)
    k.label("VEC_SKIP")
    k.o("mov.u32 %j, 0;")
    k.label("TURN")
    k.o("mov.f32 %v, %q0;")
    unary_df(k, "D", "%v", "%r")
    k.o("@%pscal bra TAIL_STORE;")
    rotate(k, Q, "%r")
    k.o("add.u32 %j, %j, 1;")
    k.o("setp.lt.u32 %pg, %j, 8;")
    k.o("@%pg bra TURN;")
    k.c("q0..q7 = f' of the group; dx += dy f' with the sums rounded once")
    G = ["%%g%d" % j for j in range(8)]
    A = ["%%a%d" % j for j in range(8)]
    k.r("f32", *["g%d a%d" % (j, j) for j in range(8)])
    addr(k, "ady", "dy", "i", 16)
    load8(k, t, "%ady", G)
    addr(k, "adx", "dx", "i", 16)
    load8(k, t, "%adx", A)
    for j in range(8):
        k.o("mul.rn.f32 %s, %s, %s;" % (G[j], G[j], Q[j]))
        k.o("add.rn.f32 %s, %s, %s;" % (A[j], A[j], G[j]))
    store8(k, t, "%adx", A)
    advance(k, "VEC")
    k.label("TAIL")
    k.o("setp.ne.u32 %pscal, 0, 1;")
    tail_start(k, 3)
    k.label("TAIL_LOOP")
    until(k, "%i", "%n", "DONE")
    addr(k, "ax", "src", "i", 2)
    k.o("@%pnone bra TURN;")
    t.load1(k, "%q0", "%ax")
    k.o("bra TURN;")
    k.label("TAIL_STORE")
    addr(k, "ady", "dy", "i", 2)
    t.load1(k, "%g", "%ady")
    addr(k, "adx", "dx", "i", 2)
    t.load1(k, "%a", "%adx")
    k.o("mul.rn.f32 %g, %g, %r;")
    k.o("add.rn.f32 %a, %a, %g;")
    t.store1(k, "%adx", "%a")
    advance(k, "TAIL_LOOP")
    finish(k)
    return k


BIN_NOTE = """op codes (eo_binop): 0 add, 1 sub, 2 mul, 3 div, 4 max, 5 min (torch.maximum /
minimum: NaN if either input is NaN, which PTX max/min would drop; a on a tie,
so maximum(-0, +0) = -0 and maximum(+0, -0) = +0, which PTX max/min leave to
the hardware)."""


def binop(k, r, a, b, lab):
    """r = a op b, the op in %op (uniform); each op block ends at lab_DONE."""
    done = lab + "_DONE"
    k.r("pred", "pn psel")
    for i, name in enumerate(["ADD", "SUB", "MUL", "DIV", "MAX"]):
        k.o("@%%b%d bra %s_%s;" % (i, lab, name))
    k.o("setp.lt.f32 %%psel, %s, %s;" % (b, a), "min: b where b < a, else a (a tie keeps a)")
    k.o("selp.f32 %s, %s, %s, %%psel;" % (r, b, a))
    k.o("bra %s_NAN;" % lab)
    k.label(lab + "_ADD")
    k.o("add.rn.f32 %s, %s, %s;" % (r, a, b))
    k.o("bra %s;" % done)
    k.label(lab + "_SUB")
    k.o("sub.rn.f32 %s, %s, %s;" % (r, a, b))
    k.o("bra %s;" % done)
    k.label(lab + "_MUL")
    k.o("mul.rn.f32 %s, %s, %s;" % (r, a, b))
    k.o("bra %s;" % done)
    k.label(lab + "_DIV")
    k.o("div.rn.f32 %s, %s, %s;" % (r, a, b))
    k.o("bra %s;" % done)
    k.label(lab + "_MAX")
    k.o("setp.gt.f32 %%psel, %s, %s;" % (b, a), "max: b where b > a, else a (a tie keeps a)")
    k.o("selp.f32 %s, %s, %s, %%psel;" % (r, b, a))
    k.label(lab + "_NAN")
    k.o("setp.nan.f32 %%pn, %s, %s;" % (a, b), "either NaN?")
    k.o("@%%pn add.rn.f32 %s, %s, %s;" % (r, a, b), "then NaN")
    k.label(done)


def k_binary(t):
    k = K("eo_binary16_" + t.name, [
        ("u32", "op", "eo_binop"), ("u32", "n", "element count"),
        ("u32", "nvec", "groups of 8 taken 16 bytes at a time (n/8 or 0)"),
        ("u64", "out", "%s *out" % t.name), ("u64", "a", "const %s *a" % t.name),
        ("u64", "b", "const %s *b" % t.name)],
        "eo_binary16_%s(op, n, nvec, out, a, b): out[i] = a[i] op b[i], three contiguous\n"
        "arrays of one shape (the common case: residual adds, gates); other\n"
        "layouts take eo_binary16_4d_%s.\n%s\n%s\n%s"
        % (t.name, t.name, BIN_NOTE, VEC_NOTE, QUEUE_NOTE))
    k.r("f32", *["q%d" % j for j in range(8)]).r("f32", *["c%d" % j for j in range(8)])
    k.r("f32", "r va vb").r("b32", "j").r("pred", "pg pscal b0 b1 b2 b3 b4")
    for i in range(5):
        k.o("setp.eq.u32 %%b%d, %%op, %d;" % (i, i))
    C = ["%%c%d" % j for j in range(8)]
    grid_stride(k)
    k.o("setp.ne.u32 %pscal, 0, 0;")
    k.label("VEC")
    until(k, "%i", "%nvec", "TAIL")
    addr(k, "aa", "a", "i", 16)
    load8(k, t, "%aa", Q)
    addr(k, "ab", "b", "i", 16)
    load8(k, t, "%ab", C)
    k.o("mov.u32 %j, 0;")
    k.label("TURN")
    k.o("mov.f32 %va, %q0;")
    k.o("mov.f32 %vb, %c0;")
    binop(k, "%r", "%va", "%vb", "B")
    k.o("@%pscal bra TAIL_STORE;")
    rotate(k, Q, "%r")
    for j in range(7):
        k.o("mov.f32 %s, %s;" % (C[j], C[j + 1]))
    k.o("add.u32 %j, %j, 1;")
    k.o("setp.lt.u32 %pg, %j, 8;")
    k.o("@%pg bra TURN;")
    addr(k, "ao", "out", "i", 16)
    store8(k, t, "%ao", Q)
    advance(k, "VEC")
    k.label("TAIL")
    k.o("setp.ne.u32 %pscal, 0, 1;")
    tail_start(k, 3)
    k.label("TAIL_LOOP")
    until(k, "%i", "%n", "DONE")
    addr(k, "aa", "a", "i", 2)
    t.load1(k, "%q0", "%aa")
    addr(k, "ab", "b", "i", 2)
    t.load1(k, "%c0", "%ab")
    k.o("bra TURN;")
    k.label("TAIL_STORE")
    addr(k, "ao", "out", "i", 2)
    t.store1(k, "%ao", "%r")
    advance(k, "TAIL_LOOP")
    finish(k)
    return k


def k_binary_4d(t):
    ps = [("u32", "op", "eo_binop")] + [("u32", "n%d" % d, "extent of axis %d" % d) for d in range(4)]
    for nm in ("o", "a", "b"):
        ps.append(("u64", nm, "%s%s *%s" % ("" if nm == "o" else "const ", t.name, nm)))
        ps += [("s32", "s%s%d" % (nm, d), "%s's stride on axis %d (elements; 0 broadcasts)" % (nm, d))
               for d in range(4)]
    k = K("eo_binary16_4d_%s" % t.name, ps,
          "eo_binary16_4d_%s(op, n0..n3, o, so0..3, a, sa0..3, b, sb0..3): out = a op b over\n"
          "a 4-D index space with any strides (stride 0 broadcasts an input), one\n"
          "element per thread per turn of a grid-stride loop. The strided path needs\n"
          "the 4-D index of each element: three div/rem by the inner extents, which\n"
          "the contiguous kernel above avoids.\n%s" % (t.name, BIN_NOTE))
    k.r("b32", "total i0 i1 i2 i3 rest oo oa ob").r("pred", "pg b0 b1 b2 b3 b4").r("f32", "va vb r")
    for i in range(5):
        k.o("setp.eq.u32 %%b%d, %%op, %d;" % (i, i))
    k.o("mul.lo.u32 %total, %n0, %n1;")
    k.o("mul.lo.u32 %total, %total, %n2;")
    k.o("mul.lo.u32 %total, %total, %n3;")
    grid_stride(k)
    k.label("LOOP")
    k.o("setp.ge.u32 %pg, %i, %total;")
    k.o("@%pg bra DONE;")
    k.o("rem.u32 %i3, %i, %n3;", "(i0, i1, i2, i3) from the flat index")
    k.o("div.u32 %rest, %i, %n3;")
    k.o("rem.u32 %i2, %rest, %n2;")
    k.o("div.u32 %rest, %rest, %n2;")
    k.o("rem.u32 %i1, %rest, %n1;")
    k.o("div.u32 %i0, %rest, %n1;")
    for nm in ("o", "a", "b"):
        k.o("mul.lo.s32 %%o%s, %%i0, %%s%s0;" % (nm, nm))
        for d in (1, 2, 3):
            k.o("mad.lo.s32 %%o%s, %%i%d, %%s%s%d, %%o%s;" % (nm, d, nm, d, nm))
    k.r("b64", "pa pb po")
    k.o("mul.wide.s32 %pa, %oa, 2;")
    k.o("add.u64 %pa, %a, %pa;")
    k.o("mul.wide.s32 %pb, %ob, 2;")
    k.o("add.u64 %pb, %b, %pb;")
    t.load1(k, "%va", "%pa")
    t.load1(k, "%vb", "%pb")
    binop(k, "%r", "%va", "%vb", "B")
    k.o("mul.wide.s32 %po, %oo, 2;")
    k.o("add.u64 %po, %o, %po;")
    t.store1(k, "%po", "%r")
    advance(k, "LOOP")
    finish(k)
    return k


def k_convert(t, to16):
    if to16:
        name, doc = "eo_f32_to_" + t.name, "dst[i] = %s(src[i]), f32 -> %s rounded to nearest even" % (t.name, t.name)
        ps = [("u32", "n", "element count"), ("u32", "nvec", "groups of 4 (n/4 when aligned, else 0)"),
              ("u64", "dst", "%s *dst" % t.name), ("u64", "src", "const float *src")]
    else:
        name, doc = "eo_%s_to_f32" % t.name, "dst[i] = src[i] widened to f32 (exact)"
        ps = [("u32", "n", "element count"), ("u32", "nvec", "groups of 4 (n/4 when aligned, else 0)"),
              ("u64", "dst", "float *dst"), ("u64", "src", "const %s *src" % t.name)]
    k = K(name, ps, "%s(n, nvec, dst, src): %s, contiguous.\n"
          "A thread takes groups of 4 values: one 16-byte access of f32 and one\n"
          "8-byte access of 16-bit values, so that across a warp both sides are\n"
          "contiguous (512 and 256 bytes, every sector used in full; groups of 8\n"
          "would make each f32 access touch every other 16 bytes). The launcher\n"
          "passes nvec = n/4 when the f32 side is 16-byte and the 16-bit side\n"
          "8-byte aligned, else 0; the tail [4 nvec, n) goes one value a thread.\n"
          "cvt.rn to bf16/f16 rounds to nearest even; NaN stays NaN (quiet), values\n"
          "past the 16-bit range become inf." % (name, doc))
    k.r("f32", *["q%d" % j for j in range(4)]).r("pred", "pg").r("b32", "e0 w0 w1")
    grid_stride(k)
    k.label("VEC")
    until(k, "%i", "%nvec", "TAIL")
    if to16:
        addr(k, "as", "src", "i", 16)
        k.o("ld.global.v4.f32 {%q0, %q1, %q2, %q3}, [%as];")
        t.pack(k, "%w0", "%q0", "%q1")
        t.pack(k, "%w1", "%q2", "%q3")
        addr(k, "ad", "dst", "i", 8)
        k.o("st.global.v2.b32 [%ad], {%w0, %w1};", "4 halves, one 8-byte store")
    else:
        addr(k, "as", "src", "i", 8)
        k.o("ld.global.v2.b32 {%w0, %w1}, [%as];", "4 halves, one 8-byte load")
        t.unpack(k, "%w0", "%q0", "%q1")
        t.unpack(k, "%w1", "%q2", "%q3")
        addr(k, "ad", "dst", "i", 16)
        k.o("st.global.v4.f32 [%ad], {%q0, %q1, %q2, %q3};")
    advance(k, "VEC")
    k.label("TAIL")
    tail_start(k, 2)
    k.label("TAIL_LOOP")
    until(k, "%i", "%n", "DONE")
    if to16:
        addr(k, "as", "src", "i", 4)
        k.o("ld.global.f32 %q0, [%as];")
        addr(k, "ad", "dst", "i", 2)
        t.store1(k, "%ad", "%q0")
    else:
        addr(k, "as", "src", "i", 2)
        t.load1(k, "%q0", "%as")
        addr(k, "ad", "dst", "i", 4)
        k.o("st.global.f32 [%ad], %q0;")
    advance(k, "TAIL_LOOP")
    finish(k)
    return k


def k_copy16():
    k = K("eo_copy16_flat", [("u32", "n", "element count"), ("u32", "nvec", "groups of 8 (n/8 when aligned, else 0)"),
                             ("u64", "dst", "16-bit *dst"), ("u64", "src", "const 16-bit *src")],
          "eo_copy16_flat(n, nvec, dst, src): dst[i] = src[i] for 16-bit values of\n"
          "either type (bits are copied, nothing is converted): 16 bytes a thread on\n"
          "the aligned part, 2 bytes on the tail.")
    k.r("b32", "w0 w1 w2 w3 e0").r("b16", "h").r("pred", "pg")
    grid_stride(k)
    k.label("VEC")
    until(k, "%i", "%nvec", "TAIL")
    addr(k, "as", "src", "i", 16)
    k.o("ld.global.v4.b32 {%w0, %w1, %w2, %w3}, [%as];")
    addr(k, "ad", "dst", "i", 16)
    k.o("st.global.v4.b32 [%ad], {%w0, %w1, %w2, %w3};")
    advance(k, "VEC")
    k.label("TAIL")
    tail_start(k, 3)
    k.label("TAIL_LOOP")
    until(k, "%i", "%n", "DONE")
    addr(k, "as", "src", "i", 2)
    k.o("ld.global.u16 %h, [%as];")
    addr(k, "ad", "dst", "i", 2)
    k.o("st.global.b16 [%ad], %h;")
    advance(k, "TAIL_LOOP")
    finish(k)
    return k


def module_elementwise16():
    head = """// ptx/elementwise16.ptx - elementwise kernels on 16-bit tensors (bf16, f16):
// conversions to and from f32, a 16-bit copy, fill, unary ops forward and
// backward, binary ops forward and backward (launchers:
// ops/cuda/elementwise16.c).
// GENERATED by tools/build/gen-ptx16.py (edit that, then regenerate).
//
// 16-bit storage, f32 arithmetic: each value is widened to f32 when it is
// loaded (bf16: its bits moved to the top of an f32; f16: cvt.f32.f16, both
// exact), the op runs in f32 exactly as the f32 kernel's, and the result is
// rounded to nearest even once, when it is stored (cvt.rn.{bf16,f16}x2.f32
// packs two at a time). The results are therefore the f32 kernels' results
// rounded to 16 bits: the tests compare them with the CPU's f32 kernel on the
// widened inputs, rounded the same way.
//
// Launch contract (every kernel): grid-stride over the work, block (256, 1, 1)
// and grid min(ceil(work / 256), 65535); any grid size is correct. The
// contiguous kernels take nvec = n/8 when every pointer is 16-byte aligned
// (else 0): the first 8 nvec elements go 8 per thread with 16-byte accesses,
// the rest one per thread (the f32 <-> 16-bit conversions: groups of 4).
// Except eo_binary16_bwd_4d_*, whose grid y splits the summed positions
// into chunks (see its comment).
.version 7.0
.target sm_80
.address_size 64
"""
    ks = []
    for t in TYPES:
        ks += [k_convert(t, True), k_convert(t, False)]
    ks.append(k_copy16())
    for t in TYPES:
        ks += [k_unary(t), k_unary_bwd(t), k_binary(t), k_binary_4d(t)]
    for t in TYPES:
        ks += [k_fill16(t), k_binary_bwd(t), k_binary_bwd_4d(t), k_binary_bwd_sum(t),
               k_binary_bwd_row(t)]
    return head + "".join("\n" + k.text() for k in ks)



# ================================================================= rows16 --

ROW_NOTE = """One block of 256 threads per row (grid = rows). With vec (every base pointer
16-byte aligned, so all rows of a call share one misalignment) a row is
walked as a head of up to 7 values before its first 16-byte boundary, then
16-byte groups of 8 values (group g = tid.x, tid.x + 256, ..., 4 or 2 of
them loaded together), then a tail; without, one value per thread, column
c = tid.x, tid.x + 256, ... The block's
sums and maxima: a butterfly of shfl.sync.bfly within each warp, the 8 warp
results through shared memory, combined by every thread in warp order 0..7,
so results do not vary from run to run."""


def row_setup(k, ptrs):
    """%row = ctaid.x; %<p>r = row start of each pointer p (16-bit elements)."""
    k.r("b32", "row tx lane warp").r("b64", "roff slot").r("pred", "lead")
    k.o("mov.u32 %row, %ctaid.x;")
    k.o("mov.u32 %tx, %tid.x;")
    k.o("and.b32 %lane, %tx, 31;")
    k.o("shr.u32 %warp, %tx, 5;")
    k.o("setp.eq.u32 %lead, %lane, 0;", "lane 0 writes its warp's result")
    k.o("mov.u64 %slot, s_red;")
    k.o("mul.wide.u32 %roff, %warp, 4;")
    k.o("add.u64 %slot, %slot, %roff;", "&s_red[warp]")
    k.o("mul.wide.u32 %roff, %row, %cols;")
    k.o("shl.b64 %roff, %roff, 1;", "byte offset of the row (2 bytes a value)")
    for p in ptrs:
        k.r("b64", p + "r")
        k.o("add.u64 %%%sr, %%%s, %%roff;" % (p, p))
    k.shared.append(".shared .align 16 .f32 s_red[8];      // one slot per warp")


def block_reduce(k, v, op):
    """v = op over the block (add or max), in every thread."""
    k.r("f32", "br_t br0 br1 br2 br3 br4 br5 br6 br7")
    k.c("%s = block-wide %s of %s" % (v, op, v))
    ins = "add.rn.f32" if op == "add" else "max.f32"
    for d in (16, 8, 4, 2, 1):
        k.o("shfl.sync.bfly.b32 %%br_t, %s, %d, 31, 0xffffffff;" % (v, d))
        k.o("%s %s, %s, %%br_t;" % (ins, v, v))
    k.o("@%%lead st.shared.f32 [%%slot], %s;" % v)
    k.o("bar.sync 0;")
    k.o("ld.shared.v4.f32 {%br0, %br1, %br2, %br3}, [s_red];", "the 8 warp results")
    k.o("ld.shared.v4.f32 {%br4, %br5, %br6, %br7}, [s_red+16];")
    k.o("%s %s, %%br0, %%br1;" % (ins, v))
    for j in range(2, 8):
        k.o("%s %s, %s, %%br%d;" % (ins, v, v, j))
    k.o("bar.sync 0;", "the slots may be reused after this")


def row_split(k, rowptr):
    """Split the row into a head, 16-byte groups and a tail. With vec set,
    the head is the values before the first 16-byte boundary of the row
    (0..7: a row of 50257 bf16 values starts anywhere mod 16), %ng the whole
    groups after it, %tail0 the first column after them; without, the whole
    row is tail (one value a thread). Once per row: no division."""
    k.r("b32", "hd ng tail0 lo").r("pred", "pvec")
    k.o("setp.ne.u32 %pvec, %vec, 0;")
    k.o("cvt.u32.u64 %%lo, %s;" % rowptr)
    k.o("neg.s32 %lo, %lo;")
    k.o("and.b32 %lo, %lo, 15;", "bytes to the next 16-byte boundary")
    k.o("shr.u32 %hd, %lo, 1;", "... in values")
    k.o("min.u32 %hd, %hd, %cols;")
    k.o("sub.u32 %ng, %cols, %hd;")
    k.o("shr.u32 %ng, %ng, 3;", "whole groups of 8 after the head")
    k.o("@!%pvec mov.u32 %hd, 0;")
    k.o("@!%pvec mov.u32 %ng, 0;")
    k.o("shl.b32 %tail0, %ng, 3;")
    k.o("add.u32 %tail0, %tail0, %hd;")


def walk(k, lab, body, U=1):
    """Run body(nv) over this thread's part of the row (row_split's pieces):
    the head, one value a thread (nv = 1, %off = 2 c, %col0 = c); U groups
    at a time while they last (nv = 8 U: groups g, g + 256, ..., their U
    16-byte loads issued together, so that a long row is not latency-bound
    on one load per round); single groups (nv = 8, %off = 2 hd + 16 g,
    %col0 = hd + 8 g); the tail, one value a thread."""
    k.r("b32", "g col0 glast").r("b64", "off").r("pred", "pw")

    def singles(tag, start, end):
        k.o("add.u32 %%col0, %s, %%tx;" % start)
        k.label(lab + tag)
        k.o("setp.ge.u32 %%pw, %%col0, %s;" % end)
        k.o("@%%pw bra %s%s_E;" % (lab, tag))
        k.o("mul.wide.u32 %off, %col0, 2;")
        body(1)
        k.o("add.u32 %col0, %col0, 256;")
        k.o("bra %s%s;" % (lab, tag))
        k.label(lab + tag + "_E")

    def group_offset():
        k.o("shl.b32 %col0, %g, 3;")
        k.o("add.u32 %col0, %col0, %hd;")
        k.o("mul.wide.u32 %off, %col0, 2;", "2 hd + 16 g")

    k.r("b32", "zero")
    k.o("mov.u32 %zero, 0;")
    singles("_H", "%zero", "%hd")
    k.o("mov.u32 %g, %tx;")
    if U > 1:
        k.o("add.u32 %%glast, %%g, %d;" % (256 * (U - 1)))
        k.label(lab + "_U")
        k.o("setp.ge.u32 %pw, %glast, %ng;", "the last of the U groups past the row?")
        k.o("@%%pw bra %s_V;" % lab)
        group_offset()
        body(8 * U)
        k.o("add.u32 %%g, %%g, %d;" % (256 * U))
        k.o("add.u32 %%glast, %%glast, %d;" % (256 * U))
        k.o("bra %s_U;" % lab)
    k.label(lab + "_V")
    k.o("setp.ge.u32 %pw, %g, %ng;")
    k.o("@%%pw bra %s_T;" % lab)
    group_offset()
    body(8)
    k.o("add.u32 %g, %g, 256;")
    k.o("bra %s_V;" % lab)
    k.label(lab + "_T")
    singles("_S", "%tail0", "%cols")


def col_of(j):
    """Column of value j of a body, relative to %col0 (groups 256 apart)."""
    return (j // 8) * 2048 + j % 8


def ld(k, t, nv, base, regs):
    """nv values at [base + %off] (groups 4096 bytes apart) into regs (f32)."""
    k.r("b64", "ap")
    k.o("add.u64 %%ap, %s, %%off;" % base)
    if nv == 1:
        t.load1(k, regs[0], "%ap")
        return
    U = nv // 8
    ws = ["%%w%d" % j for j in range(4 * U)]
    k.r("b32", *[w[1:] for w in ws])
    for u in range(U):
        k.o("ld.global.v4.b32 {%s}, [%%ap+%d];" % (", ".join(ws[4 * u:4 * u + 4]), 4096 * u),
            "8 halves, one 16-byte load" if u == 0 else None)
    for j in range(4 * U):
        t.unpack(k, ws[j], regs[2 * j], regs[2 * j + 1])


def st(k, t, nv, base, regs):
    k.r("b64", "ap")
    k.o("add.u64 %%ap, %s, %%off;" % base)
    if nv == 1:
        t.store1(k, "%ap", regs[0])
        return
    U = nv // 8
    ws = ["%%w%d" % j for j in range(4 * U)]
    k.r("b32", *[w[1:] for w in ws])
    for j in range(4 * U):
        t.pack(k, ws[j], regs[2 * j], regs[2 * j + 1])
    for u in range(U):
        k.o("st.global.v4.b32 [%%ap+%d], {%s};" % (4096 * u, ", ".join(ws[4 * u:4 * u + 4])))


V = ["%%v%d" % j for j in range(32)]
W = ["%%u%d" % j for j in range(32)]
Y = ["%%y%d" % j for j in range(32)]


def online(k, t, lab, base):
    """Running max %m and sum %s of exp(x - m) over this thread's columns."""
    k.r("f32", "m s mc z f e", *[v[1:] for v in V]).r("pred", "pq")
    k.o("mov.f32 %m, 0fFF800000;", "m = -inf")
    k.o("mov.f32 %s, 0f00000000;")

    def body(nv):
        ld(k, t, nv, base, V)
        k.o("mov.f32 %mc, %m;")
        for j in range(nv):
            k.o("max.f32 %%mc, %%mc, %s;" % V[j], "NaN dropped here; the sum carries it" if j == 0 else None)
        k.o("setp.eq.f32 %pq, %mc, 0fFF800000;", "all -inf so far: subtract 0, not -inf")
        k.o("selp.f32 %z, 0f00000000, %mc, %pq;")
        k.o("sub.rn.f32 %f, %m, %z;")
        exp_fast(k, "%f", "%f")
        k.o("setp.eq.f32 %pq, %m, %mc;", "max unchanged (also -inf = -inf): scale 1")
        k.o("selp.f32 %f, 0f3F800000, %f, %pq;")
        k.o("mul.rn.f32 %s, %s, %f;", "the old sum rescaled to the new max")
        k.o("mov.f32 %m, %mc;")
        for j in range(nv):
            k.o("sub.rn.f32 %%e, %s, %%z;" % V[j])
            exp_fast(k, "%e", "%e")
            k.o("add.rn.f32 %s, %s, %e;")
    walk(k, lab, body, 4)


def combine(k):
    """Block (M, S) from every thread's (m, s); %Z = M, or 0 where M = -inf."""
    k.r("f32", "M S Z")
    k.o("mov.f32 %M, %m;")
    block_reduce(k, "%M", "max")
    k.o("setp.eq.f32 %pq, %M, 0fFF800000;")
    k.o("selp.f32 %Z, 0f00000000, %M, %pq;", "Z: what exps were taken against")
    k.o("sub.rn.f32 %f, %m, %Z;")
    exp_fast(k, "%f", "%f")
    k.o("setp.eq.f32 %pq, %m, %M;")
    k.o("selp.f32 %f, 0f3F800000, %f, %pq;")
    k.o("mul.rn.f32 %S, %s, %f;", "this thread's sum, against Z")
    block_reduce(k, "%S", "add")


EXP_NOTE = """exp is 2^(x log2 e) by ex2.approx (relative error about 2^-18 for the
arguments met here, from rounding x log2 e), log S is lg2.approx(S) ln 2:
the f32 values are then rounded to 16 bits, whose half-ulp (2^-9 bf16,
2^-12 f16) is far above that error, so the full-accuracy sequences of the
f32 kernels would buy nothing here but instructions."""


def k_softmax(t):
    k = K("eo_softmax16_" + t.name, [
        ("u32", "log", "0 softmax, otherwise log_softmax"), ("u32", "rows", "rows"),
        ("u32", "cols", "columns, >= 1"), ("u32", "vec", "nonzero: 16-byte groups (every base pointer 16-byte aligned)"),
        ("u64", "x", "const %s *x [rows, cols]" % t.name), ("u64", "y", "%s *y [rows, cols]" % t.name)],
        "eo_softmax16_%s(log, rows, cols, nvec, x, y): softmax or log_softmax of each row\n"
        "(eo_k_softmax16 in ops/kernels.h), 16-bit in and out, f32 inside.\n%s\n"
        "Pass 1 reads the row once for the running max m and sum s of exp(x - m)\n"
        "(online normalizer, Milakov & Gimelshein 2018: when a group raises m, s is\n"
        "first scaled by exp(m_old - m_new)); the block combines them into M and S;\n"
        "pass 2 reads the row again (from L2: a 50257-column bf16 row is 100 KB)\n"
        "and writes exp(x - M) / S, or (x - M) - log S. A row of only -inf has S = 0\n"
        "and is written directly (softmax 0, log_softmax -inf); a NaN or +inf makes\n"
        "S NaN and the whole row NaN, as the f32 kernel.\n%s" % (t.name, ROW_NOTE, EXP_NOTE))
    row_setup(k, ["x", "y"])
    row_split(k, "%xr")
    online(k, t, "P1", "%xr")
    combine(k)
    k.r("f32", "R LS").r("pred", "plog pm")
    k.o("setp.ne.u32 %plog, %log, 0;")
    k.o("setp.eq.f32 %pm, %S, 0f00000000;", "(uniform) a row of only -inf")
    k.o("@%pm bra MASKED;")
    k.o("rcp.rn.f32 %R, %S;", "1/S: one reciprocal per row")
    k.o("lg2.approx.f32 %LS, %S;")
    k.o("mul.rn.f32 %LS, %LS, 0f3F317218;", "log S")

    def body(nv):
        ld(k, t, nv, "%xr", V)
        for j in range(nv):
            k.o("sub.rn.f32 %s, %s, %%Z;" % (V[j], V[j]))
            k.o("@%%plog sub.rn.f32 %s, %s, %%LS;" % (W[j], V[j]))
            k.o("@!%%plog mul.rn.f32 %s, %s, 0f3FB8AA3B;" % (W[j], V[j]))
            k.o("@!%%plog ex2.approx.f32 %s, %s;" % (W[j], W[j]))
            k.o("@!%%plog mul.rn.f32 %s, %s, %%R;" % (W[j], W[j]))
        st(k, t, nv, "%yr", W)
    k.r("f32", *[w[1:] for w in W])
    walk(k, "P2", body, 4)
    k.o("ret;")
    k.label("MASKED")
    k.o("selp.f32 %R, 0fFF800000, 0f00000000, %plog;", "log_softmax -inf, softmax 0")

    def body_m(nv):
        for j in range(nv):
            k.o("mov.f32 %s, %%R;" % W[j])
        st(k, t, nv, "%yr", W)
    walk(k, "PM", body_m)
    k.o("ret;")
    return k


def k_softmax_bwd(t):
    k = K("eo_softmax16_bwd_" + t.name, [
        ("u32", "log", "0 softmax, otherwise log_softmax"), ("u32", "rows", "rows"),
        ("u32", "cols", "columns"), ("u32", "vec", "nonzero: 16-byte groups (every base pointer 16-byte aligned)"),
        ("u64", "y", "const %s *y (forward output)" % t.name), ("u64", "dy", "const %s *dy" % t.name),
        ("u64", "dx", "%s *dx (accumulated)" % t.name)],
        "eo_softmax16_bwd_%s(log, rows, cols, nvec, y, dy, dx), from the forward output:\n"
        "  softmax:     dx += y (dy - sum_j dy_j y_j)\n"
        "  log_softmax: dx += dy - exp(y) sum_j dy_j at every entry, as PyTorch: an\n"
        "               entry whose input was -inf (exp(y) = 0) in a row with finite\n"
        "               entries gets dy; only a row of nothing but -inf (the forward's\n"
        "               fully masked row) gets 0, by a block-wide flag formed in pass 1\n"
        "               (any y that is not -inf, NaN included, so no NaN is zeroed)\n"
        "Pass 1 forms the row's sum, pass 2 reads y, dy and dx again and writes dx\n"
        "(the sum in f32, rounded once).\n%s" % (t.name, ROW_NOTE))
    row_setup(k, ["y", "dy", "dx"])
    row_split(k, "%yr")
    k.r("f32", "acc fin fe", *[v[1:] for v in V + W + Y]).r("pred", "plog pinf pmask")
    k.o("setp.ne.u32 %plog, %log, 0;")
    k.o("mov.f32 %acc, 0f00000000;")
    k.o("mov.f32 %fin, 0f00000000;", "log_softmax: 1 once an entry is not -inf")

    def body1(nv):
        ld(k, t, nv, "%yr", V)
        ld(k, t, nv, "%dyr", W)
        for j in range(nv):
            k.o("@%%plog add.rn.f32 %%acc, %%acc, %s;" % W[j])
            k.o("@!%%plog fma.rn.f32 %%acc, %s, %s, %%acc;" % (W[j], V[j]))
            k.o("@%%plog setp.eq.f32 %%pinf, %s, 0fFF800000;" % V[j])
            k.o("@%plog selp.f32 %fe, 0f00000000, 0f3F800000, %pinf;")
            k.o("@%plog max.f32 %fin, %fin, %fe;", "not -inf (NaN counts): the row has mass" if j == 0 else None)
    walk(k, "P1", body1, 2)
    block_reduce(k, "%acc", "add")
    k.o("@!%plog bra FLAG_DONE;", "(uniform)")
    block_reduce(k, "%fin", "max")
    k.label("FLAG_DONE")
    k.o("setp.eq.f32 %pmask, %fin, 0f00000000;", "(uniform) a row of only -inf: no gradient ...")
    k.o("and.pred %pmask, %pmask, %plog;", "... (log_softmax only)")

    def body2(nv):
        ld(k, t, nv, "%yr", V)
        ld(k, t, nv, "%dyr", W)
        ld(k, t, nv, "%dxr", Y)
        for j in range(nv):
            k.o("@!%%plog sub.rn.f32 %s, %s, %%acc;" % (W[j], W[j]))
            k.o("@!%%plog mul.rn.f32 %s, %s, %s;" % (W[j], V[j], W[j]), "y (dy - sum)")
            k.o("@%%plog mul.rn.f32 %s, %s, 0f3FB8AA3B;" % (V[j], V[j]))
            k.o("@%%plog ex2.approx.f32 %s, %s;" % (V[j], V[j]), "exp(y)")
            k.o("@%%plog mul.rn.f32 %s, %s, %%acc;" % (V[j], V[j]))
            k.o("@%%plog sub.rn.f32 %s, %s, %s;" % (W[j], W[j], V[j]), "dy - exp(y) sum")
            k.o("selp.f32 %s, 0f00000000, %s, %%pmask;" % (W[j], W[j]), "0 only in a row of only -inf")
            k.o("add.rn.f32 %s, %s, %s;" % (Y[j], Y[j], W[j]))
        st(k, t, nv, "%dxr", Y)
    walk(k, "P2", body2, 2)
    k.o("ret;")
    return k


def k_layernorm(t):
    k = K("eo_layernorm16_" + t.name, [
        ("u32", "rows", "rows"), ("u32", "cols", "columns, >= 1"),
        ("u32", "vec", "nonzero: 16-byte groups (bases aligned; cols % 8 = 0 with w, b)"),
        ("u64", "x", "const %s *x [rows, cols]" % t.name), ("u64", "w", "const %s *w [cols] or 0" % t.name),
        ("u64", "b", "const %s *b [cols] or 0" % t.name), ("f32", "eps", "eps"),
        ("u64", "y", "%s *y [rows, cols]" % t.name), ("u64", "mean", "float *mean [rows]"),
        ("u64", "rstd", "float *rstd [rows]")],
        "eo_layernorm16_%s(rows, cols, nvec, x, w, b, eps, y, mean, rstd): layernorm of\n"
        "each row (eo_k_layernorm16), 16-bit x, w, b, y; f32 mean and rstd.\n"
        "Three reads of the row (the second and third from L1/L2): the mean; the\n"
        "variance around it, sum (x - mean)^2 / C (never E[x^2] - E[x]^2, which\n"
        "cancels; and in f32, so the sum of squares cannot overflow as it would in\n"
        "f16); then y = (x - mean) rstd w + b with rstd = 1/sqrt(var + eps), the\n"
        "order of the f32 kernel. w or b = 0: that step is left out.\n%s" % (t.name, ROW_NOTE))
    row_setup(k, ["x", "y"])
    row_split(k, "%xr")
    k.r("f32", "acc mu var rs fc d", *[v[1:] for v in V + W + Y]).r("pred", "pwt pbs")
    k.o("setp.ne.u64 %pwt, %w, 0;")
    k.o("setp.ne.u64 %pbs, %b, 0;")
    k.o("cvt.rn.f32.u32 %fc, %cols;")
    k.o("mov.f32 %acc, 0f00000000;")

    def body1(nv):
        ld(k, t, nv, "%xr", V)
        for j in range(nv):
            k.o("add.rn.f32 %%acc, %%acc, %s;" % V[j])
    walk(k, "P1", body1, 4)
    block_reduce(k, "%acc", "add")
    k.o("div.rn.f32 %mu, %acc, %fc;", "mean")
    k.o("mov.f32 %acc, 0f00000000;")

    def body2(nv):
        ld(k, t, nv, "%xr", V)
        for j in range(nv):
            k.o("sub.rn.f32 %%d, %s, %%mu;" % V[j])
            k.o("mul.rn.f32 %d, %d, %d;")
            k.o("add.rn.f32 %acc, %acc, %d;")
    walk(k, "P2", body2, 4)
    block_reduce(k, "%acc", "add")
    k.o("div.rn.f32 %var, %acc, %fc;", "biased variance, as PyTorch")
    k.o("add.rn.f32 %var, %var, %eps;")
    k.o("sqrt.rn.f32 %var, %var;")
    k.o("rcp.rn.f32 %rs, %var;", "rstd = 1 / sqrt(var + eps)")
    k.r("b64", "ms").r("pred", "p0")
    k.o("setp.eq.u32 %p0, %tx, 0;")
    k.o("mul.wide.u32 %ms, %row, 4;")
    k.o("add.u64 %ms, %mean, %ms;")
    k.o("@%p0 st.global.f32 [%ms], %mu;")
    k.o("mul.wide.u32 %ms, %row, 4;")
    k.o("add.u64 %ms, %rstd, %ms;")
    k.o("@%p0 st.global.f32 [%ms], %rs;")

    def body3(nv):
        ld(k, t, nv, "%xr", V)
        k.o("@!%%pwt bra %s;" % k.uniq_label("NOW"))
        ld(k, t, nv, "%w", W)
        k.label(k.last_label)
        k.o("@!%%pbs bra %s;" % k.uniq_label("NOB"))
        ld(k, t, nv, "%b", Y)
        k.label(k.last_label)
        for j in range(nv):
            k.o("sub.rn.f32 %s, %s, %%mu;" % (V[j], V[j]))
            k.o("mul.rn.f32 %s, %s, %%rs;" % (V[j], V[j]))
            k.o("@%%pwt mul.rn.f32 %s, %s, %s;" % (V[j], V[j], W[j]))
            k.o("@%%pbs add.rn.f32 %s, %s, %s;" % (V[j], V[j], Y[j]))
        st(k, t, nv, "%yr", V)
    walk(k, "P3", body3, 2)
    k.o("ret;")
    return k


def k_ce_fwd(t):
    k = K("eo_ce16_fwd_" + t.name, [
        ("u32", "rows", "rows"), ("u32", "cols", "classes, >= 1"),
        ("u32", "vec", "nonzero: 16-byte groups (every base pointer 16-byte aligned)"),
        ("u64", "x", "const %s *logits [rows, cols]" % t.name), ("u64", "target", "const int32 *target [rows]"),
        ("s32", "ignore", "ignore_index"), ("u64", "stats", "float *stats [rows, 2]: M, L"),
        ("u64", "rowloss", "float *rowloss [rows] (scratch)")],
        "eo_ce16_fwd_%s(rows, cols, nvec, x, target, ignore, stats, rowloss): per row of\n"
        "16-bit logits, M = max and L = log sum exp(x - M) from one read (online\n"
        "normalizer, as eo_softmax16), saved as f32 stats for the backward, and\n"
        "the row's loss (M - x[target]) + L in f32, 0 for an ignored row, into\n"
        "rowloss for eo_ce16_loss. M and L stay apart (ops/kernels.h says why). A\n"
        "NaN or +inf logit, or a row of only -inf, gives a NaN loss.\n%s\n%s" % (t.name, ROW_NOTE, EXP_NOTE))
    row_setup(k, ["x"])
    row_split(k, "%xr")
    online(k, t, "P1", "%xr")
    combine(k)
    k.r("f32", "L xt loss").r("b64", "a8").r("b32", "tg").r("pred", "p0 pign")
    k.o("lg2.approx.f32 %L, %S;")
    k.o("mul.rn.f32 %L, %L, 0f3F317218;", "L = log S (against Z)")
    k.o("setp.ne.u32 %p0, %tx, 0;")
    k.o("@%p0 bra DONE;", "thread 0 writes the row's results")
    k.o("mul.wide.u32 %a8, %row, 8;")
    k.o("add.u64 %a8, %stats, %a8;")
    k.o("st.global.v2.f32 [%a8], {%M, %L};", "M and L (against Z = M, or 0 for a row of -inf)")
    k.o("mul.wide.u32 %a8, %row, 4;")
    k.o("add.u64 %a8, %target, %a8;")
    k.o("ld.global.s32 %tg, [%a8];")
    k.o("mov.f32 %loss, 0f00000000;")
    k.o("setp.eq.s32 %pign, %tg, %ignore;")
    k.o("@%pign bra WRITE;")
    k.o("mul.wide.u32 %a8, %tg, 2;")
    k.o("add.u64 %a8, %xr, %a8;")
    t.load1(k, "%xt", "%a8")
    k.o("sub.rn.f32 %loss, %Z, %xt;")
    k.o("add.rn.f32 %loss, %loss, %L;", "(M - x[t]) + L")
    k.o("setp.eq.f32 %pq, %M, 0fFF800000;", "a row of only -inf: NaN, as PyTorch")
    k.o("@%pq mov.f32 %loss, 0f7FFFFFFF;")
    k.label("WRITE")
    k.o("mul.wide.u32 %a8, %row, 4;")
    k.o("add.u64 %a8, %rowloss, %a8;")
    k.o("st.global.f32 [%a8], %loss;")
    finish(k)
    return k


def one_block_count(k, with_sum):
    """Over rows r = tid.x, tid.x + 256, ...: %cnt = kept rows, %sum = their
    rowloss. Four rows a turn (r, r + 256, r + 512, r + 768), their loads
    issued together: one block walks every row, so with one load in flight
    per thread 4096 rows would be 16 dependent memory rounds."""
    k.r("b32", "r tg").r("b64", "a8").r("f32", "cnt sum v").r("pred", "pg pk")
    k.r("b32", "t0 t1 t2 t3 rl").r("f32", "l0 l1 l2 l3").r("pred", "q1 q2 q3")
    k.o("mov.f32 %cnt, 0f00000000;")
    k.o("mov.f32 %sum, 0f00000000;")
    k.o("mov.u32 %r, %tx;")
    k.label("COUNT4")
    k.o("add.u32 %rl, %r, 768;")
    k.o("setp.ge.u32 %pg, %rl, %rows;", "all four rows there?")
    k.o("@%pg bra COUNT;")
    k.o("mul.wide.u32 %a8, %r, 4;")
    k.o("add.u64 %a8, %target, %a8;")
    for j in range(4):
        k.o("ld.global.s32 %%t%d, [%%a8+%d];" % (j, 1024 * j))
    if with_sum:
        k.o("mul.wide.u32 %a8, %r, 4;")
        k.o("add.u64 %a8, %rowloss, %a8;")
        for j in range(4):
            k.o("ld.global.f32 %%l%d, [%%a8+%d];" % (j, 1024 * j))
    for j in range(4):
        k.o("setp.ne.s32 %%pk, %%t%d, %%ignore;" % j)
        k.o("@%pk add.rn.f32 %cnt, %cnt, 0f3F800000;", "exact below 2^24 rows" if j == 0 else None)
        if with_sum:
            k.o("add.rn.f32 %%sum, %%sum, %%l%d;" % j, "ignored rows hold 0" if j == 0 else None)
    k.o("add.u32 %r, %r, 1024;")
    k.o("bra COUNT4;")
    k.label("COUNT")
    k.o("setp.ge.u32 %pg, %r, %rows;")
    k.o("@%pg bra COUNTED;")
    k.o("mul.wide.u32 %a8, %r, 4;")
    k.o("add.u64 %a8, %target, %a8;")
    k.o("ld.global.s32 %tg, [%a8];")
    k.o("setp.ne.s32 %pk, %tg, %ignore;")
    k.o("@%pk add.rn.f32 %cnt, %cnt, 0f3F800000;")
    if with_sum:
        k.o("mul.wide.u32 %a8, %r, 4;")
        k.o("add.u64 %a8, %rowloss, %a8;")
        k.o("ld.global.f32 %v, [%a8];")
        k.o("add.rn.f32 %sum, %sum, %v;")
    k.o("add.u32 %r, %r, 256;")
    k.o("bra COUNT;")
    k.label("COUNTED")
    block_reduce(k, "%cnt", "add")
    if with_sum:
        block_reduce(k, "%sum", "add")


def block_setup(k):
    k.r("b32", "tx lane warp").r("b64", "roff slot").r("pred", "lead")
    k.o("mov.u32 %tx, %tid.x;")
    k.o("and.b32 %lane, %tx, 31;")
    k.o("shr.u32 %warp, %tx, 5;")
    k.o("setp.eq.u32 %lead, %lane, 0;")
    k.o("mov.u64 %slot, s_red;")
    k.o("mul.wide.u32 %roff, %warp, 4;")
    k.o("add.u64 %slot, %slot, %roff;")
    k.shared.append(".shared .align 16 .f32 s_red[8];      // one slot per warp")


def k_ce_loss(t):
    k = K("eo_ce16_loss_" + t.name, [
        ("u32", "rows", "rows"), ("u64", "target", "const int32 *target"), ("s32", "ignore", "ignore_index"),
        ("u32", "reduction", "0 mean, 1 sum, 2 none"), ("u64", "rowloss", "const float *rowloss [rows]"),
        ("u64", "loss", "%s *loss: [1], or [rows] for none" % t.name)],
        "eo_ce16_loss_%s(rows, target, ignore, reduction, rowloss, loss): one block of\n"
        "256 threads. none: loss[r] = rowloss[r] rounded to %s; mean and sum: the\n"
        "kept rows' sum in f32 (per thread, then the block in a fixed order),\n"
        "divided by their count for mean (0 when no row is kept), rounded once." % (t.name, t.name))
    block_setup(k)
    k.r("pred", "pnone p0").r("b32", "r").r("b64", "a8").r("f32", "v")
    k.o("setp.eq.u32 %pnone, %reduction, 2;")
    k.o("@!%pnone bra REDUCE;")
    k.o("mov.u32 %r, %tx;")
    k.label("NONE")
    k.r("pred", "pg")
    k.o("setp.ge.u32 %pg, %r, %rows;")
    k.o("@%pg bra DONE;")
    k.o("mul.wide.u32 %a8, %r, 4;")
    k.o("add.u64 %a8, %rowloss, %a8;")
    k.o("ld.global.f32 %v, [%a8];")
    k.o("mul.wide.u32 %a8, %r, 2;")
    k.o("add.u64 %a8, %loss, %a8;")
    t.store1(k, "%a8", "%v")
    k.o("add.u32 %r, %r, 256;")
    k.o("bra NONE;")
    k.label("REDUCE")
    one_block_count(k, True)
    k.o("setp.ne.u32 %p0, %tx, 0;")
    k.o("@%p0 bra DONE;")
    k.r("pred", "pz")
    k.o("setp.eq.u32 %pg, %reduction, 0;", "mean:")
    k.o("setp.eq.f32 %pz, %cnt, 0f00000000;")
    k.o("@%pg div.rn.f32 %sum, %sum, %cnt;", "sum / count ...")
    k.o("and.pred %pz, %pz, %pg;")
    k.o("@%pz mov.f32 %sum, 0f00000000;", "... 0 when no row is kept")
    t.store1(k, "%loss", "%sum")
    finish(k)
    return k


def k_ce_scale(t):
    k = K("eo_ce16_scale_" + t.name, [
        ("u32", "rows", "rows"), ("u64", "target", "const int32 *target"), ("s32", "ignore", "ignore_index"),
        ("u32", "reduction", "0 mean, 1 sum"), ("u64", "dloss", "const %s *dloss [1]" % t.name),
        ("u64", "scale", "float *scale [1] (scratch)")],
        "eo_ce16_scale_%s(rows, target, ignore, reduction, dloss, scale): one block of 256;\n"
        "scale[0] = dloss[0] / kept rows (mean; 0 when none is kept) or dloss[0]\n"
        "(sum), for eo_ce16_bwd." % t.name)
    block_setup(k)
    k.r("b64", "rowloss")
    one_block_count(k, False)
    k.r("pred", "p0 pz").r("f32", "d")
    k.o("setp.ne.u32 %p0, %tx, 0;")
    k.o("@%p0 bra DONE;")
    t.load1(k, "%d", "%dloss")
    k.o("setp.eq.u32 %pg, %reduction, 0;")
    k.o("@%pg div.rn.f32 %d, %d, %cnt;")
    k.o("setp.eq.f32 %pz, %cnt, 0f00000000;")
    k.o("and.pred %pz, %pz, %pg;")
    k.o("@%pz mov.f32 %d, 0f00000000;")
    k.o("st.global.f32 [%scale], %d;")
    finish(k)
    return k


def k_ce_bwd(t):
    k = K("eo_ce16_bwd_" + t.name, [
        ("u32", "rows", "rows"), ("u32", "cols", "classes"),
        ("u32", "vec", "nonzero: 16-byte groups (every base pointer 16-byte aligned)"),
        ("u64", "x", "const %s *logits" % t.name), ("u64", "target", "const int32 *target"),
        ("s32", "ignore", "ignore_index"), ("u64", "stats", "const float *stats [rows, 2]"),
        ("u64", "scale", "const float *scale [1] (mean, sum) or 0"),
        ("u64", "dloss", "const %s *dloss [rows] (none) or 0" % t.name),
        ("u64", "dx", "%s *dlogits (accumulated)" % t.name)],
        "eo_ce16_bwd_%s(rows, cols, nvec, x, target, ignore, stats, scale, dloss, dx):\n"
        "dx[r, c] += s_r (exp((x - M) - L) - [c == target[r]]) for kept rows, with\n"
        "s_r = scale[0] (mean, sum: eo_ce16_scale) or dloss[r] (none); an ignored\n"
        "row is left alone (the whole block returns).\n%s\n%s" % (t.name, ROW_NOTE, EXP_NOTE))
    row_setup(k, ["x", "dx"])
    row_split(k, "%xr")
    k.r("b64", "a8").r("b32", "tg tc").r("f32", "M L sr", *[v[1:] for v in V + W]).r("pred", "pq pt")
    k.o("mul.wide.u32 %a8, %row, 4;")
    k.o("add.u64 %a8, %target, %a8;")
    k.o("ld.global.s32 %tg, [%a8];")
    k.o("setp.eq.s32 %pq, %tg, %ignore;")
    k.o("@%pq bra DONE;", "(uniform) ignored row")
    k.o("mul.wide.u32 %a8, %row, 8;")
    k.o("add.u64 %a8, %stats, %a8;")
    k.o("ld.global.v2.f32 {%M, %L}, [%a8];")
    k.o("setp.eq.f32 %pq, %M, 0fFF800000;", "the forward took exps against 0 then")
    k.o("@%pq mov.f32 %M, 0f00000000;")
    k.o("setp.eq.u64 %pq, %scale, 0;")
    k.o("@!%pq ld.global.f32 %sr, [%scale];")
    k.o("@%pq bra PER_ROW;")
    k.o("bra SCALED;")
    k.label("PER_ROW")
    k.o("mul.wide.u32 %a8, %row, 2;")
    k.o("add.u64 %a8, %dloss, %a8;")
    t.load1(k, "%sr", "%a8")
    k.label("SCALED")

    def body(nv):
        ld(k, t, nv, "%xr", V)
        ld(k, t, nv, "%dxr", W)
        k.o("sub.u32 %tc, %tg, %col0;", "target's place in this group (any u32)")
        for j in range(nv):
            k.o("sub.rn.f32 %s, %s, %%M;" % (V[j], V[j]))
            k.o("sub.rn.f32 %s, %s, %%L;" % (V[j], V[j]))
            exp_fast(k, V[j], V[j])
            k.o("setp.eq.u32 %%pt, %%tc, %d;" % col_of(j))
            k.o("@%%pt sub.rn.f32 %s, %s, 0f3F800000;" % (V[j], V[j]), "p - 1 at the target")
            k.o("fma.rn.f32 %s, %%sr, %s, %s;" % (W[j], V[j], W[j]))
        st(k, t, nv, "%dxr", W)
    walk(k, "P", body, 2)
    finish(k)
    return k


def module_rows16():
    head = """// ptx/rows16.ptx - row kernels on 16-bit tensors (bf16, f16): softmax and
// log_softmax forward and backward, layernorm forward, cross-entropy forward
// (row statistics, then the loss) and backward, layernorm backward
// (launchers: ops/cuda/rows16.c).
// GENERATED by tools/build/gen-ptx16.py (edit that, then regenerate).
//
// 16-bit storage, f32 arithmetic: values are widened to f32 as they are
// read, every sum and maximum runs in f32 (so an f16 row's sum of squares or
// of exps cannot overflow 65504), and each result is rounded to nearest even
// once, when written. Statistics (mean, rstd, cross-entropy's M and L) stay
// f32, as in the f32 kernels.
//
// Launch contract: a block of exactly 256 threads per row, grid (rows, 1, 1),
// 32 bytes of static shared memory (one f32 per warp); eo_ce16_loss and
// eo_ce16_scale are one block of 256; the layernorm backward's dw, db
// column sums (eo_layernorm16_bwd_wb_part_*, _wb_sum_*) have their own grids
// (see their comments).
.version 7.0
.target sm_80
.address_size 64
"""
    ks = []
    for t in TYPES:
        ks += [k_softmax(t), k_softmax_bwd(t), k_layernorm(t), k_ce_fwd(t), k_ce_loss(t), k_ce_scale(t),
               k_ce_bwd(t)]
    for t in TYPES:
        ks += [k_layernorm_bwd_dx(t), k_layernorm_bwd_wb_part(t), k_layernorm_bwd_wb_sum(t)]
    for t in TYPES:
        ks.append(k_layernorm_bwd_fused(t))
    return head + "".join("\n" + k.text() for k in ks)


# ============================================================ embedding16 --

def k_embedding():
    k = K("eo_embedding16", [
        ("u32", "n", "rows to gather"), ("u32", "dim", "row length"),
        ("u32", "nvec", "dim/8 when 16-byte groups fit, else 0"),
        ("u64", "table", "const 16-bit *table [vocab, dim]"), ("u64", "idx", "const int32 *idx [n]"),
        ("u64", "out", "16-bit *out [n, dim]")],
        "eo_embedding16(n, dim, nvec, table, idx, out): out[i, :] = table[idx[i], :] for\n"
        "16-bit values of either type (a copy of bits: nothing is converted).\n"
        "Grid (x: ceil(work/256) capped at 65535, y: min(n, 65535)), block 256: block\n"
        "row y walks rows i = ctaid.y, ctaid.y + nctaid.y, ...; within a row, x\n"
        "threads take 16-byte groups (nvec > 0: dim a multiple of 8 and every row\n"
        "16-byte aligned) or single values. No division anywhere: the row comes\n"
        "from the grid's y, the column from x.")
    k.r("b32", "i id c st0 cstep nt").r("b64", "src dst a").r("b32", "w0 w1 w2 w3").r("b16", "h").r("pred", "pg pv")
    k.o("setp.ne.u32 %pv, %nvec, 0;")
    k.o("mov.u32 %nt, %ntid.x;")
    k.o("mov.u32 %st0, %ctaid.x;")
    k.o("mov.u32 %c, %tid.x;")
    k.o("mad.lo.u32 %st0, %st0, %nt, %c;", "this thread's first column (or group)")
    k.o("mov.u32 %cstep, %nctaid.x;")
    k.o("mul.lo.u32 %cstep, %cstep, %nt;")
    k.o("mov.u32 %i, %ctaid.y;")
    k.label("ROW")
    until(k, "%i", "%n", "DONE")
    k.o("mul.wide.u32 %a, %i, 4;")
    k.o("add.u64 %a, %idx, %a;")
    k.o("ld.global.s32 %id, [%a];")
    k.o("mul.wide.u32 %src, %id, %dim;")
    k.o("shl.b64 %src, %src, 1;")
    k.o("add.u64 %src, %table, %src;", "&table[id, 0]")
    k.o("mul.wide.u32 %dst, %i, %dim;")
    k.o("shl.b64 %dst, %dst, 1;")
    k.o("add.u64 %dst, %out, %dst;", "&out[i, 0]")
    k.o("mov.u32 %c, %st0;")
    k.o("@!%pv bra ONE;")
    k.label("VEC")
    k.o("setp.ge.u32 %pg, %c, %nvec;")
    k.o("@%pg bra NEXT;")
    k.r("b64", "o")
    k.o("mul.wide.u32 %o, %c, 16;")
    k.o("add.u64 %a, %src, %o;")
    k.o("ld.global.v4.b32 {%w0, %w1, %w2, %w3}, [%a];")
    k.o("add.u64 %a, %dst, %o;")
    k.o("st.global.v4.b32 [%a], {%w0, %w1, %w2, %w3};")
    k.o("add.u32 %c, %c, %cstep;")
    k.o("bra VEC;")
    k.label("ONE")
    k.o("setp.ge.u32 %pg, %c, %dim;")
    k.o("@%pg bra NEXT;")
    k.o("mul.wide.u32 %o, %c, 2;")
    k.o("add.u64 %a, %src, %o;")
    k.o("ld.global.u16 %h, [%a];")
    k.o("add.u64 %a, %dst, %o;")
    k.o("st.global.b16 [%a], %h;")
    k.o("add.u32 %c, %c, %cstep;")
    k.o("bra ONE;")
    k.label("NEXT")
    k.r("b32", "ny")
    k.o("mov.u32 %ny, %nctaid.y;")
    k.o("add.u32 %i, %i, %ny;")
    k.o("bra ROW;")
    finish(k)
    return k


def module_embedding16():
    head = """// ptx/embedding16.ptx - the embedding gather for 16-bit tables (bf16 or f16:
// the bits are copied, so one kernel serves both) and its backward; launchers
// ops/cuda/embedding16.c. GENERATED by tools/build/gen-ptx16.py.
// The backward adds 16-bit rows in index order, each sum rounded to 16 bits
// (the core's contract), without atomics: eo_embedding16_links lists each
// id's positions, eo_embedding16_bwd_* walks each list from its first
// occurrence (eo_embedding16_bwd_cols_*: the fallback past ~2^19 indices).
.version 7.0
.target sm_80
.address_size 64
"""
    ks = [k_embedding(), k_embedding_links(), k_embedding_link_join()]
    ks += [k_embedding_bwd_lists(t) for t in TYPES] + [k_embedding_bwd(t) for t in TYPES]
    return head + "".join("\n" + k.text() for k in ks)


# ================================================================ optim16 --

def k_adamw(t):
    k = K("eo_adamw16_" + t.name, [
        ("u32", "n", "parameter count"), ("u32", "nvec", "groups of 4 (n/4 when aligned, else 0)"),
        ("u64", "w", "float *w (f32 master weights), updated"),
        ("u64", "g", "const gradient: float or %s (g16)" % t.name), ("u32", "g16", "nonzero: g is %s" % t.name),
        ("f32", "gscale", "g' = gscale g (1 / loss scale)"),
        ("u64", "m", "float *m"), ("u64", "v", "float *v"),
        ("f32", "lr", "learning rate"), ("f32", "b1", "beta1"), ("f32", "b2", "beta2"), ("f32", "eps", "eps"),
        ("f32", "wd", "decoupled weight decay"), ("f32", "ss", "step size lr / (1 - beta1^t)"),
        ("f32", "sq", "sqrt(1 - beta2^t)"),
        ("u64", "w16", "%s *w16: the updated weights rounded, or 0" % t.name)],
        "eo_adamw16_%s(n, nvec, w, g, g16, gscale, m, v, lr, b1, b2, eps, wd, ss, sq, w16):\n"
        "AdamW on f32 master weights and f32 state (eo_k_adamw16 in ops/kernels.h;\n"
        "Micikevicius et al. 2018), from a gradient stored as f32 or %s, unscaled\n"
        "first (g' = gscale g), then exactly the CPU kernel's arithmetic\n"
        "(ops/cpu/optim.c: every step rounded, in torch.optim.AdamW's order):\n"
        "  w = w (1 - lr wd); m = b1 m + (1 - b1) g'; v = b2 v + ((1 - b2) g') g';\n"
        "  w = w - ss (m / (sqrt(v) / sq + eps))\n"
        "with ss = lr / (1 - b1^t) and sq = sqrt(1 - b2^t) formed in double on the\n"
        "host, as the CPU kernel forms them, so the two give the same bits.\n"
        "and, in the same pass, w16 = w rounded to %s (the copy the 16-bit\n"
        "forward reads). Groups of 4: 16-byte loads and stores of w, m, v (and g\n"
        "when f32), 8-byte ones of a 16-bit g and of w16; the launcher passes\n"
        "nvec = n/4 when all of them are aligned for that, else 0; the rest goes\n"
        "one per thread. Grid-stride over the work, block 256." % (t.name, t.name, t.name))
    k.r("f32", "decay c1 c2 x gr mo ve tt den").r("pred", "pg pg16 pw16").r("b32", "e0 h01 h23")
    k.o("setp.ne.u32 %pg16, %g16, 0;")
    k.o("setp.ne.u64 %pw16, %w16, 0;")
    k.o("mul.rn.f32 %decay, %lr, %wd;")
    k.o("sub.rn.f32 %decay, 0f3F800000, %decay;", "1 - lr wd")
    k.o("sub.rn.f32 %c1, 0f3F800000, %b1;")
    k.o("sub.rn.f32 %c2, 0f3F800000, %b2;")
    X = ["%%x%d" % j for j in range(4)]
    G = ["%%g%d" % j for j in range(4)]
    M = ["%%m%d" % j for j in range(4)]
    Vv = ["%%v%d" % j for j in range(4)]
    k.r("f32", *[r[1:] for r in X + G + M + Vv])

    def update(x, g, m, v):
        k.o("mul.rn.f32 %s, %s, %%gscale;" % (g, g), "unscale")
        k.o("mul.rn.f32 %s, %s, %%decay;" % (x, x), "decoupled weight decay")
        k.o("mul.rn.f32 %s, %%b1, %s;" % (m, m))
        k.o("mul.rn.f32 %%tt, %%c1, %s;" % g)
        k.o("add.rn.f32 %s, %s, %%tt;" % (m, m), "m")
        k.o("mul.rn.f32 %s, %%b2, %s;" % (v, v))
        k.o("mul.rn.f32 %%tt, %%c2, %s;" % g)
        k.o("mul.rn.f32 %%tt, %%tt, %s;" % g, "((1 - b2) g) g, the CPU's order")
        k.o("add.rn.f32 %s, %s, %%tt;" % (v, v), "v")
        k.o("sqrt.rn.f32 %%den, %s;" % v)
        k.o("div.rn.f32 %den, %den, %sq;")
        k.o("add.rn.f32 %den, %den, %eps;")
        k.o("div.rn.f32 %%tt, %s, %%den;" % m)
        k.o("mul.rn.f32 %tt, %ss, %tt;")
        k.o("sub.rn.f32 %s, %s, %%tt;" % (x, x), "w")

    grid_stride(k)
    k.label("VEC")
    until(k, "%i", "%nvec", "TAIL")
    addr(k, "aw", "w", "i", 16)
    addr(k, "am", "m", "i", 16)
    addr(k, "av", "v", "i", 16)
    k.o("ld.global.v4.f32 {%x0, %x1, %x2, %x3}, [%aw];")
    k.o("ld.global.v4.f32 {%m0, %m1, %m2, %m3}, [%am];")
    k.o("ld.global.v4.f32 {%v0, %v1, %v2, %v3}, [%av];")
    k.o("@%pg16 bra G16;")
    addr(k, "ag", "g", "i", 16)
    k.o("ld.global.v4.f32 {%g0, %g1, %g2, %g3}, [%ag];")
    k.o("bra GOT;")
    k.label("G16")
    addr(k, "ag", "g", "i", 8)
    k.o("ld.global.v2.b32 {%h01, %h23}, [%ag];", "4 halves, one 8-byte load")
    t.unpack(k, "%h01", "%g0", "%g1")
    t.unpack(k, "%h23", "%g2", "%g3")
    k.label("GOT")
    for j in range(4):
        update(X[j], G[j], M[j], Vv[j])
    k.o("st.global.v4.f32 [%aw], {%x0, %x1, %x2, %x3};")
    k.o("st.global.v4.f32 [%am], {%m0, %m1, %m2, %m3};")
    k.o("st.global.v4.f32 [%av], {%v0, %v1, %v2, %v3};")
    k.o("@!%pw16 bra VNEXT;")
    t.pack(k, "%h01", "%x0", "%x1")
    t.pack(k, "%h23", "%x2", "%x3")
    addr(k, "ah", "w16", "i", 8)
    k.o("st.global.v2.b32 [%ah], {%h01, %h23};")
    k.label("VNEXT")
    advance(k, "VEC")
    k.label("TAIL")
    tail_start(k, 2)
    k.label("TAIL_LOOP")
    until(k, "%i", "%n", "DONE")
    addr(k, "aw", "w", "i", 4)
    addr(k, "am", "m", "i", 4)
    addr(k, "av", "v", "i", 4)
    k.o("ld.global.f32 %x, [%aw];")
    k.o("ld.global.f32 %mo, [%am];")
    k.o("ld.global.f32 %ve, [%av];")
    k.o("@%pg16 bra T16;")
    addr(k, "ag", "g", "i", 4)
    k.o("ld.global.f32 %gr, [%ag];")
    k.o("bra TGOT;")
    k.label("T16")
    addr(k, "ag", "g", "i", 2)
    t.load1(k, "%gr", "%ag")
    k.label("TGOT")
    update("%x", "%gr", "%mo", "%ve")
    k.o("st.global.f32 [%aw], %x;")
    k.o("st.global.f32 [%am], %mo;")
    k.o("st.global.f32 [%av], %ve;")
    k.o("@!%pw16 bra TNEXT;")
    addr(k, "ah", "w16", "i", 2)
    t.store1(k, "%ah", "%x")
    k.label("TNEXT")
    advance(k, "TAIL_LOOP")
    finish(k)
    return k


def module_optim16():
    head = """// ptx/optim16.ptx - AdamW and SGD for mixed precision: f32 master weights and state,
// a 16-bit (or f32) gradient, the 16-bit weight copy written in the same
// pass (launcher ops/cuda/optim16.c). GENERATED by tools/build/gen-ptx16.py.
.version 7.0
.target sm_80
.address_size 64
"""
    return head + "".join("\n" + k.text() for k in [k_adamw(t) for t in TYPES] + [k_sgd(t) for t in TYPES])


# ------------------------------------------- elementwise16: fill, backward --

def k_fill16(t):
    k = K("eo_fill16_" + t.name, [
        ("u32", "n", "element count"),
        ("u32", "nvec", "groups of 8 taken 16 bytes at a time (n/8 or 0)"),
        ("u64", "x", "%s *x" % t.name), ("f32", "value", "the value (f32)")],
        "eo_fill16_%s(n, nvec, x, value): x[i] = value rounded to %s (nearest even)\n"
        "once, before the loop. 16-byte stores of 8 copies on [0, 8 nvec), one value\n"
        "a thread on the rest (nvec = n/8 when x is 16-byte aligned, else 0)."
        % (t.name, t.name))
    k.r("b32", "wv").r("b16", "hv")
    k.o("cvt.rn.%sx2.f32 %%wv, %%value, %%value;" % t.name, "two rounded copies in one word")
    t.round1(k, "%hv", "%value")
    grid_stride(k)
    k.label("VEC")
    until(k, "%i", "%nvec", "TAIL")
    addr(k, "ax", "x", "i", 16)
    k.o("st.global.v4.b32 [%ax], {%wv, %wv, %wv, %wv};", "8 values, one 16-byte store")
    advance(k, "VEC")
    k.label("TAIL")
    tail_start(k, 3)
    k.label("TAIL_LOOP")
    until(k, "%i", "%n", "DONE")
    addr(k, "ax", "x", "i", 2)
    k.o("st.global.b16 [%ax], %hv;")
    advance(k, "TAIL_LOOP")
    finish(k)
    return k


GRAD_NOTE = """The gradient terms are ops/cpu/binary.c's (grad_term), in its operation
order, so a full gradient is the CPU's f32 result rounded once:
  add: dout, dout;  sub: dout, -dout;  mul: dout b, dout a;
  div: dout / b, -(dout / b) (a / b)  (not dout a / b^2: b^2 overflows first);
  max: the larger input gets dout, a tie dout / 2 each, a NaN on either side
  dout to both (PyTorch's rule); min: the same with the smaller."""


def bin_preds(k):
    """%b0..%b4: op is add, sub, mul, div, max (min: none of them)."""
    k.r("pred", "b0 b1 b2 b3 b4")
    for i in range(5):
        k.o("setp.eq.u32 %%b%d, %%op, %d;" % (i, i))


def grad_terms(k, lab, d, a, b, ta, tb):
    """ta = dout d(out)/da, tb = dout d(out)/db for the op in %b0..%b4."""
    done = lab + "_DONE"
    k.r("f32", "gt_h gt_q").r("pred", "gt_lt gt_gt gt_eq")
    for i, name in enumerate(["ADD", "SUB", "MUL", "DIV"]):
        k.o("@%%b%d bra %s_%s;" % (i, lab, name))
    k.c("max / min: a < b, a > b and a == b are all false with a NaN: dout to both")
    k.o("mul.rn.f32 %%gt_h, %s, 0f3F000000;" % d, "a tie: dout / 2 each")
    k.o("setp.lt.f32 %%gt_lt, %s, %s;" % (a, b))
    k.o("setp.gt.f32 %%gt_gt, %s, %s;" % (a, b))
    k.o("setp.eq.f32 %%gt_eq, %s, %s;" % (a, b))
    k.o("selp.f32 %s, %%gt_h, %s, %%gt_eq;" % (ta, d))
    k.o("@%%gt_lt mov.f32 %s, 0f00000000;" % ta, "max: a gets dout unless a < b")
    k.o("selp.f32 %s, %%gt_h, %s, %%gt_eq;" % (tb, d))
    k.o("@%%gt_gt mov.f32 %s, 0f00000000;" % tb, "... b unless a > b")
    k.o("@!%%b4 mov.f32 %%gt_q, %s;" % ta, "min: the other way round")
    k.o("@!%%b4 mov.f32 %s, %s;" % (ta, tb))
    k.o("@!%%b4 mov.f32 %s, %%gt_q;" % tb)
    k.o("bra %s;" % done)
    k.label(lab + "_ADD")
    k.o("mov.f32 %s, %s;" % (ta, d))
    k.o("mov.f32 %s, %s;" % (tb, d))
    k.o("bra %s;" % done)
    k.label(lab + "_SUB")
    k.o("mov.f32 %s, %s;" % (ta, d))
    k.o("neg.f32 %s, %s;" % (tb, d))
    k.o("bra %s;" % done)
    k.label(lab + "_MUL")
    k.o("mul.rn.f32 %s, %s, %s;" % (ta, d, b))
    k.o("mul.rn.f32 %s, %s, %s;" % (tb, d, a))
    k.o("bra %s;" % done)
    k.label(lab + "_DIV")
    k.o("div.rn.f32 %s, %s, %s;" % (ta, d, b), "dout / b")
    k.o("div.rn.f32 %%gt_q, %s, %s;" % (a, b))
    k.o("neg.f32 %%gt_h, %s;" % ta)
    k.o("mul.rn.f32 %s, %%gt_h, %%gt_q;" % tb, "-(dout / b) (a / b)")
    k.label(done)


def k_binary_bwd(t):
    k = K("eo_binary16_bwd_" + t.name, [
        ("u32", "op", "eo_binop"), ("u32", "n", "element count"),
        ("u32", "nvec", "groups of 8 taken 16 bytes at a time (n/8 or 0)"),
        ("u32", "cols", "row length of a row-mode input (a multiple of 8), else n"),
        ("u32", "am", "a's mode: 0 full, 1 a [cols] row repeated over the rows"),
        ("u32", "bm", "b's mode, the same"),
        ("u64", "dout", "const %s *dout" % t.name),
        ("u64", "a", "const %s *a (read by mul, div, max, min)" % t.name),
        ("u64", "b", "const %s *b (read by mul, div, max, min)" % t.name),
        ("u64", "da", "%s *da (accumulated) or 0" % t.name),
        ("u64", "db", "%s *db (accumulated) or 0" % t.name)],
        "eo_binary16_bwd_%s(op, n, nvec, cols, am, bm, dout, a, b, da, db): da[i] += ta,\n"
        "db[i] += tb for contiguous dout, da, db of one shape (a residual add, a\n"
        "gate), each input full or a [cols] row repeated over the rows (x * w: then\n"
        "only the full input's gradient is passed here, the row's is a sum:\n"
        "eo_binary16_bwd_4d_%s); each sum in f32, rounded to %s once. A row input's\n"
        "group starts at column cg = 8 i mod cols: one rem per thread, then cg\n"
        "advances by 8 step mod cols with a conditional subtract (the launcher\n"
        "takes row mode only with cols %% 8 = 0 and 16-byte groups, so there is\n"
        "no tail then; the tail's own rem is for completeness). When da = db (x op x) the\n"
        "element gets both terms, added in that order and rounded once. Other\n"
        "layouts take eo_binary16_bwd_4d_%s.\n%s\n%s\n"
        "Three queues of 8 (dout, a, b): each turn computes ta and tb of the front\n"
        "element and puts them at the back of the dout and a queues, which then\n"
        "hold the 8 ta and the 8 tb in order." % (t.name, t.name, t.name, t.name, GRAD_NOTE, VEC_NOTE))
    A = ["%%a%d" % j for j in range(8)]
    B = ["%%c%d" % j for j in range(8)]
    G = ["%%g%d" % j for j in range(8)]
    k.r("f32", *[r[1:] for r in Q + A + B + G]).r("f32", "vd va vb ta tb acc").r("b32", "j")
    k.r("pred", "pg pscal preads pda pdb palias")
    bin_preds(k)
    k.o("setp.ge.u32 %preads, %op, 2;", "add and sub read neither input")
    k.o("setp.ne.u64 %pda, %da, 0;")
    k.o("setp.ne.u64 %pdb, %db, 0;")
    k.o("setp.eq.u64 %palias, %da, %db;")
    k.o("and.pred %palias, %palias, %pda;", "da = db: one read-modify-write with both terms")
    k.o("@%palias setp.ne.u32 %pdb, 0, 0;")
    for r in A + B:
        k.o("mov.f32 %s, 0f00000000;" % r)
    k.r("pred", "parow pbrow").r("b32", "cg stepc rt").r("b64", "ao")
    k.o("setp.ne.u32 %parow, %am, 0;")
    k.o("setp.ne.u32 %pbrow, %bm, 0;")
    grid_stride(k)
    k.r("pred", "prow")
    k.o("mov.u32 %cg, 0;")
    k.o("mov.u32 %stepc, 0;")
    k.o("mov.u32 %rt, 0;")
    k.o("or.pred %prow, %parow, %pbrow;")
    k.o("@!%prow bra ROWS_SET;", "(uniform) full inputs need no column")
    k.o("shl.b32 %rt, %i, 3;")
    k.o("rem.u32 %cg, %rt, %cols;", "the column of this thread's first group")
    k.o("shl.b32 %rt, %step, 3;")
    k.o("rem.u32 %stepc, %rt, %cols;", "... and how far it moves each round")
    k.label("ROWS_SET")
    k.o("setp.ne.u32 %pscal, 0, 0;", "vector phase first")
    k.label("VEC")
    until(k, "%i", "%nvec", "TAIL")
    addr(k, "ad", "dout", "i", 16)
    load8(k, t, "%ad", Q)
    k.o("@!%preads bra VEC_GO;")
    addr(k, "aa", "a", "i", 16)
    k.o("mul.wide.u32 %ao, %cg, 2;")
    k.o("@%parow add.u64 %aa, %a, %ao;", "a row: its group at column cg")
    load8(k, t, "%aa", A)
    addr(k, "ab", "b", "i", 16)
    k.o("@%pbrow add.u64 %ab, %b, %ao;")
    load8(k, t, "%ab", B)
    k.label("VEC_GO")
    k.o("mov.u32 %j, 0;")
    k.label("TURN")
    k.o("mov.f32 %vd, %q0;")
    k.o("mov.f32 %va, %a0;")
    k.o("mov.f32 %vb, %c0;")
    grad_terms(k, "G", "%vd", "%va", "%vb", "%ta", "%tb")
    k.o("@%pscal bra TAIL_STORE;")
    rotate(k, Q, "%ta")
    rotate(k, A, "%tb")
    for j in range(7):
        k.o("mov.f32 %s, %s;" % (B[j], B[j + 1]))
    k.o("add.u32 %j, %j, 1;")
    k.o("setp.lt.u32 %pg, %j, 8;")
    k.o("@%pg bra TURN;")
    k.c("q0..q7 = ta, a0..a7 = tb of the group")
    k.o("@!%pda bra VEC_DB;")
    addr(k, "ag", "da", "i", 16)
    load8(k, t, "%ag", G)
    for j in range(8):
        k.o("add.rn.f32 %s, %s, %s;" % (G[j], G[j], Q[j]))
        k.o("@%%palias add.rn.f32 %s, %s, %s;" % (G[j], G[j], A[j]))
    store8(k, t, "%ag", G)
    k.label("VEC_DB")
    k.o("@!%pdb bra VEC_NEXT;")
    addr(k, "ag", "db", "i", 16)
    load8(k, t, "%ag", G)
    for j in range(8):
        k.o("add.rn.f32 %s, %s, %s;" % (G[j], G[j], A[j]))
    store8(k, t, "%ag", G)
    k.label("VEC_NEXT")
    k.o("add.u32 %cg, %cg, %stepc;")
    k.o("setp.ge.u32 %pg, %cg, %cols;")
    k.o("@%pg sub.u32 %cg, %cg, %cols;", "the next group's column, no division")
    advance(k, "VEC")
    k.label("TAIL")
    k.c("the elements past the groups: one per thread, the same code for the terms")
    k.o("setp.ne.u32 %pscal, 0, 1;")
    tail_start(k, 3)
    k.label("TAIL_LOOP")
    until(k, "%i", "%n", "DONE")
    addr(k, "ad", "dout", "i", 2)
    t.load1(k, "%q0", "%ad")
    k.o("@!%preads bra TURN;")
    k.o("@%prow rem.u32 %rt, %i, %cols;")
    k.o("mul.wide.u32 %ao, %rt, 2;")
    addr(k, "aa", "a", "i", 2)
    k.o("@%parow add.u64 %aa, %a, %ao;")
    t.load1(k, "%a0", "%aa")
    addr(k, "ab", "b", "i", 2)
    k.o("@%pbrow add.u64 %ab, %b, %ao;")
    t.load1(k, "%c0", "%ab")
    k.o("bra TURN;")
    k.label("TAIL_STORE")
    k.o("@!%pda bra TAIL_DB;")
    addr(k, "ag", "da", "i", 2)
    t.load1(k, "%acc", "%ag")
    k.o("add.rn.f32 %acc, %acc, %ta;")
    k.o("@%palias add.rn.f32 %acc, %acc, %tb;")
    t.store1(k, "%ag", "%acc")
    k.label("TAIL_DB")
    k.o("@!%pdb bra TAIL_NEXT;")
    addr(k, "ag", "db", "i", 2)
    t.load1(k, "%acc", "%ag")
    k.o("add.rn.f32 %acc, %acc, %tb;")
    t.store1(k, "%ag", "%acc")
    k.label("TAIL_NEXT")
    advance(k, "TAIL_LOOP")
    finish(k)
    return k


def k_binary_bwd_row(t):
    """The broadcast (bias, scale) gradient of add, sub, mul as a column sum,
    fused with the full operand's gradient."""
    k = K("eo_binary16_bwd_row_" + t.name, [
        ("u32", "op", "eo_binop: add, sub or mul"),
        ("u32", "which", "the row-mode gradient: 0 a's, 1 b's"),
        ("u32", "rows", "rows"), ("u32", "cols", "columns, a multiple of 8"),
        ("u32", "chunk", "rows per block row (grid.y), a multiple of 8"),
        ("u64", "dout", "const %s *dout [rows, cols]" % t.name),
        ("u64", "fin", "const %s *: the full input [rows, cols] (read by mul)" % t.name),
        ("u64", "rin", "const %s *: the row input [cols] (read by mul)" % t.name),
        ("u64", "full", "%s *: the full input's gradient [rows, cols] (accumulated) or 0" % t.name),
        ("u64", "part", "float *part [grid.y][cols]: the work buffer"),
        ("u64", "g", "%s *g [cols]: the row input's gradient (accumulated)" % t.name),
        ("u64", "done", "u32 done[grid.x], 0 between launches")],
        "eo_binary16_bwd_row_%s(op, which, rows, cols, chunk, dout, fin, rin, full, part, g,\n"
        "done): a broadcast binary op's backward where one input is a [cols] row\n"
        "repeated over the rows (a bias add, a scale): its gradient g is a column\n"
        "sum, g[c] += sum_r t(r, c), and the full input's gradient is elementwise,\n"
        "full[r, c] += u(r, c), with (t, u) = (dout, dout) for add, (dout, -dout)\n"
        "or (-dout, dout) for sub, (dout fin, dout rin) for mul. One pass: dout\n"
        "(and fin) read once, for both. Block (256, 1, 1) = 8 warps; grid.x\n"
        "strips of 256 columns, grid.y chunks of `chunk` rows. Lane l of warp y\n"
        "owns the 16-byte group of 8 columns strip 256 + 8 l (a warp reads 512\n"
        "contiguous bytes of a row) and the chunk's rows y, y + 8, ...; its 8\n"
        "column sums are f32. The 8 warps' sums meet in shared memory; thread t\n"
        "adds column t's in warp order into part[chunk]; the strip's last block\n"
        "(a u32 counter per strip, an integer atomic: no float atomics) adds the\n"
        "chunks in order and rounds g once. The chunking depends on the shape\n"
        "alone (the launcher), so the bits do too. Why: the general path\n"
        "(eo_binary16_bwd_%s, then eo_binary16_bwd_4d_%s and _sum_%s) read dout\n"
        "twice and summed a column per thread in one long dependent walk." % (t.name, t.name, t.name, t.name))
    k.shared.append(".shared .align 16 .f32 s_acc[2048];   // 8 warps x 256 columns of sums")
    k.shared.append(".shared .align 4 .u32 s_last;        // 1 in the strip's last block")
    DV = ["%%dv%d" % j for j in range(8)]
    FV = ["%%fv%d" % j for j in range(8)]
    RV = ["%%rv%d" % j for j in range(8)]
    GV = ["%%gv%d" % j for j in range(8)]
    AC = ["%%ac%d" % j for j in range(8)]
    WD = ["%%wd%d" % j for j in range(4)]
    WF = ["%%wf%d" % j for j in range(4)]
    WG = ["%%wg%d" % j for j in range(4)]
    k.r("f32", *[v[1:] for v in DV + FV + RV + GV + AC]).r("b32", *[v[1:] for v in WD + WF + WG])
    k.r("f32", "sf sr tt").r("b32", "tx lane ty c0 r rend tmp old flag c rr r8 nr")
    k.r("b64", "off ro ad af ag ap a2 rstep sp").r("pred", "pmul pfull pok pg plast psub")
    k.r("f32", "v sw", *["q%d" % j for j in range(8)])

    def unpack4(words, regs):
        for j in range(4):
            if t.name == "bf16":
                k.o("shl.b32 %s, %s, 16;" % (regs[2 * j], words[j]), "bf16 -> f32" if j == 0 else None)
                k.o("and.b32 %s, %s, -65536;" % (regs[2 * j + 1], words[j]))
            else:
                t.unpack(k, words[j], regs[2 * j], regs[2 * j + 1])

    k.o("mov.u32 %tx, %tid.x;")
    k.o("and.b32 %lane, %tx, 31;")
    k.o("shr.u32 %ty, %tx, 5;", "the warp: its rows y, y + 8, ...")
    k.o("mov.u32 %c0, %ctaid.x;")
    k.o("shl.b32 %c0, %c0, 8;")
    k.o("mad.lo.u32 %c0, %lane, 8, %c0;", "the group's first column")
    k.o("setp.lt.u32 %pok, %c0, %cols;")
    k.o("setp.eq.u32 %pmul, %op, 2;")
    k.o("setp.ne.u64 %pfull, %full, 0;")
    k.c("sf, sr: the signs of sub (u = sf dout, t = sr dout); mul uses fin, rin")
    k.o("setp.eq.u32 %psub, %op, 1;")
    k.o("mov.f32 %sf, 0f3F800000;")
    k.o("mov.f32 %sr, 0f3F800000;")
    k.o("setp.eq.u32 %pg, %which, 0;")
    k.o("and.pred %pg, %pg, %psub;")
    k.o("@%pg mov.f32 %sf, 0fBF800000;", "sub, the row is a: the full b gets -dout")
    k.o("setp.eq.u32 %pg, %which, 1;")
    k.o("and.pred %pg, %pg, %psub;")
    k.o("@%pg mov.f32 %sr, 0fBF800000;", "sub, the row is b: its sum is of -dout")
    for j in range(8):
        k.o("mov.f32 %s, 0f00000000;" % AC[j])
        k.o("mov.f32 %s, %%sf;" % RV[j])
        k.o("mov.f32 %s, %%sr;" % FV[j])
    k.o("@!%pok bra COMBINE;", "a group past the row: sums of 0")
    k.o("mul.wide.u32 %off, %c0, 2;", "the group's byte offset in a row")
    k.o("@!%pmul bra RIN_SET;")
    k.o("add.u64 %ad, %rin, %off;")
    k.o("ld.global.v4.b32 {%s}, [%%ad];" % ", ".join(WD), "the row input's 8 values, once")
    unpack4(WD, RV)
    k.label("RIN_SET")
    k.o("mov.u32 %r, %ctaid.y;")
    k.o("mul.lo.u32 %r, %r, %chunk;")
    k.o("add.u32 %rend, %r, %chunk;")
    k.o("min.u32 %rend, %rend, %rows;", "the chunk's rows [r, rend)")
    k.o("add.u32 %r, %r, %ty;")
    k.label("ROW")
    k.o("setp.ge.u32 %pg, %r, %rend;")
    k.o("@%pg bra COMBINE;")
    k.o("mul.wide.u32 %ro, %r, %cols;")
    k.o("shl.b64 %ro, %ro, 1;")
    k.o("add.u64 %ro, %ro, %off;", "byte offset of (r, c0)")
    k.o("add.u64 %ad, %dout, %ro;")
    k.o("ld.global.v4.b32 {%s}, [%%ad];" % ", ".join(WD), "8 values of dout")
    k.o("add.u64 %af, %fin, %ro;")
    k.o("@%%pmul ld.global.v4.b32 {%s}, [%%af];" % ", ".join(WF), "... of the full input (mul)")
    k.o("add.u64 %ag, %full, %ro;")
    k.o("@%%pfull ld.global.v4.b32 {%s}, [%%ag];" % ", ".join(WG), "... of its gradient")
    unpack4(WD, DV)
    k.o("@!%pmul bra FIN_SET;")
    unpack4(WF, FV)
    k.label("FIN_SET")
    for j in range(8):
        k.o("mul.rn.f32 %%tt, %s, %s;" % (DV[j], FV[j]), "t = dout fin (mul), sr dout" if j == 0 else None)
        k.o("add.rn.f32 %s, %s, %%tt;" % (AC[j], AC[j]), "the column sums, rows in order" if j == 0 else None)
    k.o("@!%pfull bra NEXT;")
    unpack4(WG, GV)
    for j in range(8):
        k.o("mul.rn.f32 %%tt, %s, %s;" % (DV[j], RV[j]), "u = dout rin (mul), sf dout" if j == 0 else None)
        k.o("add.rn.f32 %s, %s, %%tt;" % (GV[j], GV[j]))
    for j in range(4):
        t.pack(k, WG[j], GV[2 * j], GV[2 * j + 1])
    k.o("st.global.v4.b32 [%%ag], {%s};" % ", ".join(WG), "full += u, rounded once")
    k.label("NEXT")
    k.o("add.u32 %r, %r, 8;")
    k.o("bra ROW;")

    k.label("COMBINE")
    k.c("the 8 warps' sums through shared memory, added by warp 0 in warp order")
    k.o("mov.u64 %sp, s_acc;")
    k.o("shl.b32 %tmp, %tx, 5;", "(y 256 + 8 l) floats = 32 tid bytes")
    k.o("cvt.u64.u32 %a2, %tmp;")
    k.o("add.u64 %a2, %sp, %a2;")
    k.o("st.shared.v4.f32 [%%a2], {%s};" % ", ".join(AC[:4]))
    k.o("st.shared.v4.f32 [%%a2+16], {%s};" % ", ".join(AC[4:]))
    k.o("bar.sync 0;")
    k.c("thread t adds column t of the strip over the warps, in warp order")
    k.o("mov.u32 %c, %ctaid.x;")
    k.o("shl.b32 %c, %c, 8;")
    k.o("add.u32 %c, %c, %tx;")
    k.o("setp.ge.u32 %pg, %c, %cols;")
    k.o("@%pg bra COUNT;")
    k.o("mul.wide.u32 %a2, %tx, 4;")
    k.o("add.u64 %a2, %sp, %a2;", "&s_acc[0][t]")
    for y in range(8):
        k.o("ld.shared.f32 %s, [%%a2+%d];" % (DV[y], 1024 * y))
    k.o("add.rn.f32 %sw, %dv0, %dv1;", "warp 0 + warp 1 + ...")
    for y in range(2, 8):
        k.o("add.rn.f32 %%sw, %%sw, %s;" % DV[y])
    k.o("mov.u32 %tmp, %ctaid.y;")
    k.o("mad.lo.u32 %tmp, %tmp, %cols, %c;", "part[chunk][c]")
    k.o("mul.wide.u32 %ap, %tmp, 4;")
    k.o("add.u64 %ap, %part, %ap;")
    k.o("st.global.f32 [%ap], %sw;", "a warp: 128 contiguous bytes")

    k.label("COUNT")
    k.c("the strip's last block adds the chunks in order (thread 0 counts the block)")
    k.o("bar.sync 0;", "the block's part stored")
    k.o("setp.ne.u32 %pg, %tx, 0;")
    k.o("@%pg bra COUNTED;")
    k.o("membar.gl;", "the part before the count")
    k.o("mov.u32 %tmp, %ctaid.x;")
    k.o("mul.wide.u32 %a2, %tmp, 4;")
    k.o("add.u64 %a2, %done, %a2;", "this strip's counter")
    k.o("atom.global.add.u32 %old, [%a2], 1;")
    k.o("mov.u32 %tmp, %nctaid.y;")
    k.o("sub.u32 %tmp, %tmp, 1;")
    k.o("setp.eq.u32 %plast, %old, %tmp;")
    k.o("selp.u32 %flag, 1, 0, %plast;")
    k.o("st.shared.u32 [s_last], %flag;")
    k.o("@%plast st.global.u32 [%a2], 0;", "ready for the next launch")
    k.label("COUNTED")
    k.o("bar.sync 0;")
    k.o("ld.shared.u32 %flag, [s_last];")
    k.o("setp.eq.u32 %pg, %flag, 0;")
    k.o("@%pg bra DONE;", "(uniform) not the strip's last block")
    k.o("membar.gl;", "the other blocks' parts before the reads")
    k.o("mov.u32 %c, %ctaid.x;")
    k.o("shl.b32 %c, %c, 8;")
    k.o("add.u32 %c, %c, %tx;", "one column a thread")
    k.o("setp.ge.u32 %pg, %c, %cols;")
    k.o("@%pg bra DONE;")
    k.o("mul.wide.u32 %ap, %c, 4;")
    k.o("add.u64 %ap, %part, %ap;")
    k.o("mul.wide.u32 %rstep, %cols, 4;", "from one chunk's part to the next")
    k.o("mov.u32 %nr, %nctaid.y;")
    k.o("mov.f32 %sw, 0f00000000;")
    k.o("mov.u32 %rr, 0;")
    k.label("T_EIGHT")
    k.o("add.u32 %r8, %rr, 8;")
    k.o("setp.gt.u32 %pg, %r8, %nr;")
    k.o("@%pg bra T_ONE;")
    for u in range(8):
        k.o("ld.global.f32 %%q%d, [%%ap];" % u)
        k.o("add.u64 %ap, %ap, %rstep;")
    for u in range(8):
        k.o("add.rn.f32 %%sw, %%sw, %%q%d;" % u, "in chunk order" if u == 0 else None)
    k.o("mov.u32 %rr, %r8;")
    k.o("bra T_EIGHT;")
    k.label("T_ONE")
    k.o("setp.ge.u32 %pg, %rr, %nr;")
    k.o("@%pg bra T_ADD;")
    k.o("ld.global.f32 %v, [%ap];")
    k.o("add.rn.f32 %sw, %sw, %v;")
    k.o("add.u64 %ap, %ap, %rstep;")
    k.o("add.u32 %rr, %rr, 1;")
    k.o("bra T_ONE;")
    k.label("T_ADD")
    k.o("mul.wide.u32 %a2, %c, 2;")
    k.o("add.u64 %a2, %g, %a2;")
    t.load1(k, "%v", "%a2")
    k.o("add.rn.f32 %v, %v, %sw;")
    t.store1(k, "%a2", "%v")
    finish(k)
    return k


def index4(k, flat, ext, idx):
    """idx[0..3] = the 4-D index of flat over the extents ext[0..3] (3 div, 3 rem)."""
    k.r("b32", "ix_rest")
    k.o("rem.u32 %s, %s, %s;" % (idx[3], flat, ext[3]), "(i0, i1, i2, i3) from the flat index")
    k.o("div.u32 %%ix_rest, %s, %s;" % (flat, ext[3]))
    k.o("rem.u32 %s, %%ix_rest, %s;" % (idx[2], ext[2]))
    k.o("div.u32 %%ix_rest, %%ix_rest, %s;" % ext[2])
    k.o("rem.u32 %s, %%ix_rest, %s;" % (idx[1], ext[1]))
    k.o("div.u32 %s, %%ix_rest, %s;" % (idx[0], ext[1]))


def offset4(k, dst, idx, strides):
    """dst = sum idx[d] * strides[d] (s32 elements)."""
    k.o("mul.lo.s32 %s, %s, %s;" % (dst, idx[0], strides[0]))
    for d in (1, 2, 3):
        k.o("mad.lo.s32 %s, %s, %s, %s;" % (dst, idx[d], strides[d], dst))


def at16(k, dst, base, off):
    """dst = base + 2 off (off: s32 elements)."""
    k.o("mul.wide.s32 %s, %s, 2;" % (dst, off))
    k.o("add.u64 %s, %s, %s;" % (dst, base, dst))


def k_binary_bwd_4d(t):
    ps = [("u32", "op", "eo_binop"), ("u32", "which", "0: the gradient of a, 1: of b")]
    ps += [("u32", "n%d" % d, "kept extent of axis %d (1 where summed)" % d) for d in range(4)]
    ps += [("u32", "r%d" % d, "summed extent of axis %d (1 where kept)" % d) for d in range(4)]
    ps.append(("u32", "chunk", "summed positions per block row (grid y)"))
    for nm, pn, what in (("d", "pd", "const %s *dout" % t.name), ("a", "pa", "const %s *a" % t.name),
                         ("b", "pb", "const %s *b" % t.name),
                         ("g", "pgp", "%s *g, the gradient (accumulated)" % t.name)):
        ps.append(("u64", pn, what))
        ps += [("s32", "s%s%d" % (nm, d), "its stride on axis %d (elements)" % d) for d in range(4)]
    ps.append(("u64", "part", "float *part [grid y][kept] or 0: add into g directly"))
    k = K("eo_binary16_bwd_4d_%s" % t.name, ps,
          "eo_binary16_bwd_4d_%s(op, which, n0..3, r0..3, chunk, dout, sd0..3, a, sa0..3,\n"
          "b, sb0..3, g, sg0..3, part): one gradient of a binary op over any strides,\n"
          "its broadcast axes summed in a fixed order, without atomics. The launcher\n"
          "splits the shape into the axes g keeps (n, g's stride nonzero) and those it\n"
          "sums (r, g's stride 0; each axis is one or the other, the other extent 1).\n"
          "A thread owns one element e of g (grid-stride over the kept elements, its\n"
          "4-D index by div/rem once) and sums the terms of the summed positions\n"
          "[chunk ctaid.y, chunk (ctaid.y + 1)) in row-major order, stepping the\n"
          "position as a 4-digit counter (an add per axis that carries, no division);\n"
          "a warp's threads walk the same positions, so their dout loads are as\n"
          "contiguous as g's elements. Without part (one chunk) the sum goes into g,\n"
          "rounded once; with part, into part[ctaid.y][e] (f32), and\n"
          "eo_binary16_bwd_sum_%s adds the chunks in order. The bits depend on the\n"
          "shape and the chunk only.\n%s" % (t.name, t.name, GRAD_NOTE))
    k.r("b32", "total rn e i0 i1 i2 i3 j0 j1 j2 j3 jb je cnt od oa ob og xd xa xb")
    k.r("b32", "dd0 dd1 dd2 da0 da1 da2 db0 db1 db2 tmp").r("pred", "pg pw ppart preads")
    k.r("f32", "vd va vb ta tb acc term").r("b64", "ad aa ab ag")
    bin_preds(k)
    k.o("setp.ge.u32 %preads, %op, 2;", "add and sub read neither input")
    k.o("setp.ne.u64 %ppart, %part, 0;")
    k.o("setp.ne.u32 %pw, %which, 0;")
    k.o("mul.lo.u32 %total, %n0, %n1;")
    k.o("mul.lo.u32 %total, %total, %n2;")
    k.o("mul.lo.u32 %total, %total, %n3;", "kept elements")
    k.o("mul.lo.u32 %rn, %r0, %r1;")
    k.o("mul.lo.u32 %rn, %rn, %r2;")
    k.o("mul.lo.u32 %rn, %rn, %r3;", "summed positions")
    k.o("mov.u32 %tmp, %ctaid.y;")
    k.o("mul.lo.u32 %jb, %tmp, %chunk;", "this block row's first position ...")
    k.o("add.u32 %je, %jb, %chunk;")
    k.o("min.u32 %je, %je, %rn;", "... and its end")
    k.o("setp.ge.u32 %pg, %jb, %rn;")
    k.o("@%pg bra DONE;")
    k.c("carries of the position counter: when axis d+1 wraps, each offset moves by")
    k.c("s[d] - r[d+1] s[d+1]")
    for nm, dl in (("d", "dd"), ("a", "da"), ("b", "db")):
        for d in range(3):
            k.o("mul.lo.s32 %%tmp, %%r%d, %%s%s%d;" % (d + 1, nm, d + 1))
            k.o("sub.s32 %%%s%d, %%s%s%d, %%tmp;" % (dl, d, nm, d))
    idx_j = ["%j0", "%j1", "%j2", "%j3"]
    JJ = ["%jj0", "%jj1", "%jj2", "%jj3"]
    R4 = ["%r0", "%r1", "%r2", "%r3"]
    k.r("b32", "jj0 jj1 jj2 jj3 qd qa qb")
    k.c("the chunk's first summed position (once per thread), each operand's offset there")
    index4(k, "%jb", R4, JJ)
    for nm in ("d", "a", "b"):
        offset4(k, "%q" + nm, JJ, ["%%s%s%d" % (nm, d) for d in range(4)])
    grid_stride(k)
    k.label("LOOP")
    until(k, "%i", "%total", "DONE")
    I4 = ["%i0", "%i1", "%i2", "%i3"]
    index4(k, "%i", ["%n0", "%n1", "%n2", "%n3"], I4)
    for d in range(4):
        k.o("mov.u32 %s, %s;" % (idx_j[d], JJ[d]))
    for nm in ("d", "a", "b"):
        offset4(k, "%o" + nm, I4, ["%%s%s%d" % (nm, d) for d in range(4)])
        k.o("add.s32 %%x%s, %%o%s, %%q%s;" % (nm, nm, nm))
    offset4(k, "%og", I4, ["%%sg%d" % d for d in range(4)])
    k.o("mov.f32 %acc, 0f00000000;")
    k.o("mov.f32 %va, 0f00000000;")
    k.o("mov.f32 %vb, 0f00000000;")
    k.o("mov.u32 %cnt, %jb;")

    def step_pos():
        """The next summed position: axis 3 steps, a wrap carries into axis 2, ..."""
        done = k.uniq("STEPPED")
        k.o("add.u32 %j3, %j3, 1;")
        for nm in ("d", "a", "b"):
            k.o("add.s32 %%x%s, %%x%s, %%s%s3;" % (nm, nm, nm))
        for d in (3, 2, 1):
            k.o("setp.lt.u32 %%pg, %%j%d, %%r%d;" % (d, d))
            k.o("@%%pg bra %s;" % done)
            k.o("mov.u32 %%j%d, 0;" % d)
            k.o("add.u32 %%j%d, %%j%d, 1;" % (d - 1, d - 1))
            for nm, dl in (("d", "dd"), ("a", "da"), ("b", "db")):
                k.o("add.s32 %%x%s, %%x%s, %%%s%d;" % (nm, nm, dl, d - 1))
        k.label(done)

    def loads(sfx, lab):
        at16(k, "%ad", "%pd", "%xd" + sfx)
        t.load1(k, "%vd" + sfx, "%ad")
        k.o("@!%%preads bra %s;" % lab)
        at16(k, "%aa", "%pa", "%xa" + sfx)
        t.load1(k, "%va" + sfx, "%aa")
        at16(k, "%ab", "%pb", "%xb" + sfx)
        t.load1(k, "%vb" + sfx, "%ab")
        k.label(lab)

    def accumulate(sfx, lab):
        grad_terms(k, lab, "%vd" + sfx, "%va" + sfx, "%vb" + sfx, "%ta", "%tb")
        k.o("selp.f32 %term, %tb, %ta, %pw;")
        k.o("add.rn.f32 %acc, %acc, %term;")

    k.c("four positions at a time: their offsets, then their loads together, then the")
    k.c("terms added in position order")
    k.r("b32", "cnt4", *["x%s%d" % (nm, q) for q in range(4) for nm in "dab"])
    k.r("f32", *["v%s%d" % (nm, q) for q in range(4) for nm in "dab"])
    for q in range(4):
        k.o("mov.f32 %%va%d, 0f00000000;" % q)
        k.o("mov.f32 %%vb%d, 0f00000000;" % q)
    k.label("SUM4")
    k.o("add.u32 %cnt4, %cnt, 4;")
    k.o("setp.gt.u32 %pg, %cnt4, %je;")
    k.o("@%pg bra SUM;")
    for q in range(4):
        for nm in "dab":
            k.o("mov.u32 %%x%s%d, %%x%s;" % (nm, q, nm))
        step_pos()
    k.r("b16", *["hd%d ha%d hb%d" % (q, q, q) for q in range(4)])
    for q in range(4):
        at16(k, "%ad", "%pd", "%%xd%d" % q)
        k.o("ld.global.u16 %%hd%d, [%%ad];" % q, "the 4 loads issued before any use" if q == 0 else None)
    k.o("@!%preads bra LOADED4;")
    for q in range(4):
        for nm in "ab":
            at16(k, "%%a%s" % nm, "%%p%s" % nm, "%%x%s%d" % (nm, q))
            k.o("ld.global.u16 %%h%s%d, [%%a%s];" % (nm, q, nm))
    for q in range(4):
        for nm in "ab":
            t.widen(k, "%%v%s%d" % (nm, q), "%%h%s%d" % (nm, q))
    k.label("LOADED4")
    for q in range(4):
        t.widen(k, "%%vd%d" % q, "%%hd%d" % q)
    for q in range(4):
        accumulate(str(q), "G%d" % q)
    k.o("mov.u32 %cnt, %cnt4;")
    k.o("bra SUM4;")
    k.label("SUM")
    until(k, "%cnt", "%je", "SUMMED")
    loads("", "TERM")
    accumulate("", "G")
    k.o("add.u32 %cnt, %cnt, 1;")
    step_pos()
    k.o("bra SUM;")
    k.label("SUMMED")
    k.o("@%ppart bra TO_PART;")
    at16(k, "%ag", "%pgp", "%og")
    t.load1(k, "%term", "%ag")
    k.o("add.rn.f32 %term, %term, %acc;", "g += the sum, rounded once")
    t.store1(k, "%ag", "%term")
    advance(k, "LOOP")
    k.label("TO_PART")
    k.o("mov.u32 %tmp, %ctaid.y;")
    k.o("mad.lo.u32 %tmp, %tmp, %total, %i;")
    k.o("mul.wide.u32 %ag, %tmp, 4;")
    k.o("add.u64 %ag, %part, %ag;", "&part[ctaid.y][e]")
    k.o("st.global.f32 [%ag], %acc;")
    advance(k, "LOOP")
    finish(k)
    return k


def k_binary_bwd_sum(t):
    ps = [("u32", "R", "chunks (rows of part)")]
    ps += [("u32", "n%d" % d, "kept extent of axis %d" % d) for d in range(4)]
    ps.append(("u64", "part", "const float *part [R][kept]"))
    ps.append(("u64", "pgp", "%s *g (accumulated)" % t.name))
    ps += [("s32", "sg%d" % d, "g's stride on axis %d" % d) for d in range(4)]
    k = K("eo_binary16_bwd_sum_%s" % t.name, ps,
          "eo_binary16_bwd_sum_%s(R, n0..3, part, g, sg0..3): g[e] += part[0][e] + ... +\n"
          "part[R-1][e], added in chunk order in f32 and rounded once (the second\n"
          "pass of eo_binary16_bwd_4d_%s). Grid-stride over the kept elements; a\n"
          "warp reads 32 consecutive floats of each part row." % (t.name, t.name))
    k.r("b32", "total r i0 i1 i2 i3 og").r("b64", "ap ag rs").r("f32", "acc v")
    k.o("mul.lo.u32 %total, %n0, %n1;")
    k.o("mul.lo.u32 %total, %total, %n2;")
    k.o("mul.lo.u32 %total, %total, %n3;")
    k.o("mul.wide.u32 %rs, %total, 4;", "bytes from one part row to the next")
    grid_stride(k)
    k.label("LOOP")
    until(k, "%i", "%total", "DONE")
    k.o("mul.wide.u32 %ap, %i, 4;")
    k.o("add.u64 %ap, %part, %ap;")
    k.o("mov.f32 %acc, 0f00000000;")
    k.o("mov.u32 %r, 0;")
    k.r("b32", "r8").r("f32", *["p%d" % q for q in range(8)])
    k.label("ROWS8")
    k.o("add.u32 %r8, %r, 8;")
    k.o("setp.gt.u32 %pg, %r8, %R;")
    k.o("@%pg bra ROWS;")
    for q in range(8):
        k.o("ld.global.f32 %%p%d, [%%ap];" % q, "8 chunks' loads in flight" if q == 0 else None)
        k.o("add.u64 %ap, %ap, %rs;")
    for q in range(8):
        k.o("add.rn.f32 %%acc, %%acc, %%p%d;" % q)
    k.o("mov.u32 %r, %r8;")
    k.o("bra ROWS8;")
    k.label("ROWS")
    until(k, "%r", "%R", "ADD")
    k.o("ld.global.f32 %v, [%ap];")
    k.o("add.rn.f32 %acc, %acc, %v;")
    k.o("add.u64 %ap, %ap, %rs;")
    k.o("add.u32 %r, %r, 1;")
    k.o("bra ROWS;")
    k.label("ADD")
    I4 = ["%i0", "%i1", "%i2", "%i3"]
    index4(k, "%i", ["%n0", "%n1", "%n2", "%n3"], I4)
    offset4(k, "%og", I4, ["%%sg%d" % d for d in range(4)])
    at16(k, "%ag", "%pgp", "%og")
    t.load1(k, "%v", "%ag")
    k.o("add.rn.f32 %v, %v, %acc;", "g += the sum, rounded once")
    t.store1(k, "%ag", "%v")
    advance(k, "LOOP")
    finish(k)
    return k


# ---------------------------------------------------- rows16: layernorm bwd --

def k_layernorm_bwd_dx(t):
    k = K("eo_layernorm16_bwd_dx_" + t.name, [
        ("u32", "rows", "rows"), ("u32", "cols", "columns, >= 1"),
        ("u32", "vec", "nonzero: 16-byte groups (bases aligned; cols % 8 = 0 with w)"),
        ("u64", "x", "const %s *x [rows, cols]" % t.name), ("u64", "w", "const %s *w [cols] or 0" % t.name),
        ("u64", "mean", "const float *mean [rows]"), ("u64", "rstd", "const float *rstd [rows]"),
        ("u64", "dy", "const %s *dy [rows, cols]" % t.name),
        ("u64", "dx", "%s *dx [rows, cols] (accumulated)" % t.name)],
        "eo_layernorm16_bwd_dx_%s(rows, cols, vec, x, w, mean, rstd, dy, dx): the dx part\n"
        "of eo_k_layernorm_backward16, one block per row, the f32 kernel's\n"
        "arithmetic (ptx/layernorm.ptx, eo_layernorm_bwd_dx) on widened values:\n"
        "  xhat = (x - mean) rstd, g = dy w (dy without w),\n"
        "  dx += rstd ((g - mean_c(g)) - xhat mean_c(g xhat)), rounded once.\n"
        "Pass 1 reads x, dy, w for the two row sums (block-reduced in a fixed\n"
        "order); pass 2 reads them again (from L2) with dx and writes dx.\n%s" % (t.name, ROW_NOTE))
    row_setup(k, ["x", "dy", "dx"])
    row_split(k, "%xr")
    Z = ["%%z%d" % j for j in range(16)]
    k.r("f32", "mu rs fc s1 s2 tt", *[v[1:] for v in V[:16] + W[:16] + Y[:16] + Z]).r("pred", "pwt")
    k.r("b64", "ms")
    k.o("setp.ne.u64 %pwt, %w, 0;")
    k.o("cvt.rn.f32.u32 %fc, %cols;")
    k.o("mul.wide.u32 %ms, %row, 4;")
    k.o("add.u64 %ms, %mean, %ms;")
    k.o("ld.global.f32 %mu, [%ms];")
    k.o("mul.wide.u32 %ms, %row, 4;")
    k.o("add.u64 %ms, %rstd, %ms;")
    k.o("ld.global.f32 %rs, [%ms];")
    k.o("mov.f32 %s1, 0f00000000;")
    k.o("mov.f32 %s2, 0f00000000;")

    def xhat_g(nv):
        """V = xhat, W = g of nv values at %off."""
        ld(k, t, nv, "%xr", V)
        ld(k, t, nv, "%dyr", W)
        k.o("@!%%pwt bra %s;" % k.uniq_label("NOW"))
        ld(k, t, nv, "%w", Y)
        k.label(k.last_label)
        for j in range(nv):
            k.o("sub.rn.f32 %s, %s, %%mu;" % (V[j], V[j]))
            k.o("mul.rn.f32 %s, %s, %%rs;" % (V[j], V[j]), "xhat" if j == 0 else None)
            k.o("@%%pwt mul.rn.f32 %s, %s, %s;" % (W[j], W[j], Y[j]), "g = dy w" if j == 0 else None)

    def body1(nv):
        xhat_g(nv)
        for j in range(nv):
            k.o("add.rn.f32 %%s1, %%s1, %s;" % W[j])
            k.o("mul.rn.f32 %%tt, %s, %s;" % (W[j], V[j]))
            k.o("add.rn.f32 %s2, %s2, %tt;")
    walk(k, "P1", body1, 2)
    block_reduce(k, "%s1", "add")
    block_reduce(k, "%s2", "add")
    k.o("div.rn.f32 %s1, %s1, %fc;", "mean_c(g)")
    k.o("div.rn.f32 %s2, %s2, %fc;", "mean_c(g xhat)")

    def body2(nv):
        xhat_g(nv)
        ld(k, t, nv, "%dxr", Z)
        for j in range(nv):
            k.o("sub.rn.f32 %s, %s, %%s1;" % (W[j], W[j]), "g - mean(g)" if j == 0 else None)
            k.o("mul.rn.f32 %%tt, %s, %%s2;" % V[j])
            k.o("sub.rn.f32 %s, %s, %%tt;" % (W[j], W[j]), "... - xhat mean(g xhat)" if j == 0 else None)
            k.o("mul.rn.f32 %s, %%rs, %s;" % (W[j], W[j]), "* rstd" if j == 0 else None)
            k.o("add.rn.f32 %s, %s, %s;" % (Z[j], Z[j], W[j]))
        st(k, t, nv, "%dxr", Z)
    walk(k, "P2", body2, 2)
    k.o("ret;")
    return k


def k_layernorm_bwd_wb_part(t):
    k = K("eo_layernorm16_bwd_wb_part_" + t.name, [
        ("u32", "rows", "rows"), ("u32", "cols", "columns"),
        ("u32", "chunk", "rows per block row (grid y)"),
        ("u64", "x", "const %s *x [rows, cols]" % t.name),
        ("u64", "mean", "const float *mean [rows]"), ("u64", "rstd", "const float *rstd [rows]"),
        ("u64", "dy", "const %s *dy [rows, cols]" % t.name),
        ("u64", "part", "float *part [grid y][2][cols]: sum dy xhat, sum dy")],
        "eo_layernorm16_bwd_wb_part_%s(rows, cols, chunk, x, mean, rstd, dy, part): the\n"
        "column sums of dw and db over one chunk of rows, without atomics. Grid\n"
        "(ceil(cols/256), R), block 256: thread c = column, block row r = rows\n"
        "[r chunk, (r+1) chunk), walked in order with four rows' loads in flight\n"
        "(a warp reads 64 contiguous bytes of x and of dy per row). The sums are\n"
        "f32; eo_layernorm16_bwd_wb_sum_%s adds the R chunks in order and rounds\n"
        "dw and db once." % (t.name, t.name))
    k.r("b32", "c r0 r1 tmp rr").r("b64", "ax ady am ar rowb o").r("f32", "sw sb tt").r("pred", "pg")
    XS = ["%%x%d" % u for u in range(4)]
    DS = ["%%d%d" % u for u in range(4)]
    MS = ["%%m%d" % u for u in range(4)]
    RS = ["%%s%d" % u for u in range(4)]
    k.r("f32", *[r[1:] for r in XS + DS + MS + RS])
    k.o("mov.u32 %c, %ctaid.x;")
    k.o("mov.u32 %tmp, %tid.x;")
    k.o("mad.lo.u32 %c, %c, 256, %tmp;", "this thread's column")
    until(k, "%c", "%cols", "DONE")
    k.o("mov.u32 %tmp, %ctaid.y;")
    k.o("mul.lo.u32 %r0, %tmp, %chunk;")
    k.o("add.u32 %r1, %r0, %chunk;")
    k.o("min.u32 %r1, %r1, %rows;", "rows [r0, r1)")
    k.o("mul.wide.u32 %o, %r0, %cols;")
    k.o("cvt.u64.u32 %ax, %c;")
    k.o("add.u64 %o, %o, %ax;")
    k.o("shl.b64 %o, %o, 1;", "byte offset of (r0, c)")
    k.o("add.u64 %ax, %x, %o;")
    k.o("add.u64 %ady, %dy, %o;")
    k.o("mul.wide.u32 %am, %r0, 4;")
    k.o("add.u64 %ar, %rstd, %am;")
    k.o("add.u64 %am, %mean, %am;")
    k.o("mul.wide.u32 %rowb, %cols, 2;", "bytes per row")
    k.o("mov.f32 %sw, 0f00000000;")
    k.o("mov.f32 %sb, 0f00000000;")
    k.o("mov.u32 %rr, %r0;")

    def rows_step(U):
        for u in range(U):
            k.r("b64", "px%d pd%d" % (u, u))
            if u == 0:
                k.o("mov.u64 %px0, %ax;")
                k.o("mov.u64 %pd0, %ady;")
            else:
                k.o("add.u64 %%px%d, %%px%d, %%rowb;" % (u, u - 1))
                k.o("add.u64 %%pd%d, %%pd%d, %%rowb;" % (u, u - 1))
            t.load1(k, XS[u], "%%px%d" % u)
            t.load1(k, DS[u], "%%pd%d" % u)
            k.o("ld.global.f32 %s, [%%am+%d];" % (MS[u], 4 * u))
            k.o("ld.global.f32 %s, [%%ar+%d];" % (RS[u], 4 * u))
        for u in range(U):
            k.o("sub.rn.f32 %s, %s, %s;" % (XS[u], XS[u], MS[u]))
            k.o("mul.rn.f32 %s, %s, %s;" % (XS[u], XS[u], RS[u]), "xhat" if u == 0 else None)
            k.o("mul.rn.f32 %%tt, %s, %s;" % (DS[u], XS[u]))
            k.o("add.rn.f32 %sw, %sw, %tt;", "dw: sum dy xhat" if u == 0 else None)
            k.o("add.rn.f32 %%sb, %%sb, %s;" % DS[u], "db: sum dy" if u == 0 else None)
        k.o("add.u32 %%rr, %%rr, %d;" % U)
        for u in range(U):
            k.o("add.u64 %ax, %ax, %rowb;")
            k.o("add.u64 %ady, %ady, %rowb;")
        k.o("add.u64 %%am, %%am, %d;" % (4 * U))
        k.o("add.u64 %%ar, %%ar, %d;" % (4 * U))

    k.label("FOUR")
    k.o("add.u32 %tmp, %rr, 4;")
    k.o("setp.gt.u32 %pg, %tmp, %r1;")
    k.o("@%pg bra ONE;")
    rows_step(4)
    k.o("bra FOUR;")
    k.label("ONE")
    until(k, "%rr", "%r1", "STORE")
    rows_step(1)
    k.o("bra ONE;")
    k.label("STORE")
    k.o("mov.u32 %tmp, %ctaid.y;")
    k.o("shl.b32 %tmp, %tmp, 1;")
    k.o("mad.lo.u32 %tmp, %tmp, %cols, %c;", "part[r][0][c]")
    k.o("mul.wide.u32 %o, %tmp, 4;")
    k.o("add.u64 %o, %part, %o;")
    k.o("st.global.f32 [%o], %sw;")
    k.o("mul.wide.u32 %ax, %cols, 4;")
    k.o("add.u64 %o, %o, %ax;", "part[r][1][c]")
    k.o("st.global.f32 [%o], %sb;")
    finish(k)
    return k


def k_layernorm_bwd_wb_sum(t):
    k = K("eo_layernorm16_bwd_wb_sum_" + t.name, [
        ("u32", "R", "chunks"), ("u32", "cols", "columns"),
        ("u64", "part", "const float *part [R][2][cols]"),
        ("u64", "dw", "%s *dw [cols] (accumulated) or 0" % t.name),
        ("u64", "db", "%s *db [cols] (accumulated) or 0" % t.name)],
        "eo_layernorm16_bwd_wb_sum_%s(R, cols, part, dw, db): dw[c] += sum_r part[r][0][c],\n"
        "db[c] += sum_r part[r][1][c], the chunks added in order in f32 and each\n"
        "result rounded once. Grid-stride over cols, block 256; 8 chunks' loads\n"
        "(16 floats) in flight a thread, then added in order." % t.name)
    k.r("b32", "r r8").r("b64", "ap rs cb a2").r("f32", "sw sb v").r("pred", "pdw pdb pg")
    PW = ["%%pw%d" % u for u in range(8)]
    PB = ["%%pb%d" % u for u in range(8)]
    k.r("f32", *[r[1:] for r in PW + PB])
    k.o("setp.ne.u64 %pdw, %dw, 0;")
    k.o("setp.ne.u64 %pdb, %db, 0;")
    k.o("mul.wide.u32 %rs, %cols, 8;", "bytes from one chunk to the next")
    k.o("mul.wide.u32 %cb, %cols, 4;", "... from its dw sums to its db sums")
    grid_stride(k)
    k.label("LOOP")
    until(k, "%i", "%cols", "DONE")
    k.o("mul.wide.u32 %ap, %i, 4;")
    k.o("add.u64 %ap, %part, %ap;")
    k.o("mov.f32 %sw, 0f00000000;")
    k.o("mov.f32 %sb, 0f00000000;")
    k.o("mov.u32 %r, 0;")
    k.label("EIGHT")
    k.o("add.u32 %r8, %r, 8;")
    k.o("setp.gt.u32 %pg, %r8, %R;")
    k.o("@%pg bra CHUNKS;")
    k.o("mov.u64 %a2, %ap;")
    for u in range(8):
        k.o("ld.global.f32 %s, [%%a2];" % PW[u])
        k.o("add.u64 %a2, %a2, %cb;")
        k.o("ld.global.f32 %s, [%%a2];" % PB[u])
        k.o("sub.u64 %a2, %a2, %cb;")
        k.o("add.u64 %a2, %a2, %rs;")
    for u in range(8):
        k.o("add.rn.f32 %%sw, %%sw, %s;" % PW[u])
        k.o("add.rn.f32 %%sb, %%sb, %s;" % PB[u])
    k.o("mov.u64 %ap, %a2;")
    k.o("mov.u32 %r, %r8;")
    k.o("bra EIGHT;")
    k.label("CHUNKS")
    until(k, "%r", "%R", "ADD")
    k.o("ld.global.f32 %v, [%ap];")
    k.o("add.rn.f32 %sw, %sw, %v;")
    k.o("add.u64 %a2, %ap, %cb;")
    k.o("ld.global.f32 %v, [%a2];")
    k.o("add.rn.f32 %sb, %sb, %v;")
    k.o("add.u64 %ap, %ap, %rs;")
    k.o("add.u32 %r, %r, 1;")
    k.o("bra CHUNKS;")
    k.label("ADD")
    k.o("@!%pdw bra DB;")
    addr(k, "a2", "dw", "i", 2)
    t.load1(k, "%v", "%a2")
    k.o("add.rn.f32 %v, %v, %sw;")
    t.store1(k, "%a2", "%v")
    k.label("DB")
    k.o("@!%pdb bra NEXT;")
    addr(k, "a2", "db", "i", 2)
    t.load1(k, "%v", "%a2")
    k.o("add.rn.f32 %v, %v, %sb;")
    t.store1(k, "%a2", "%v")
    k.label("NEXT")
    advance(k, "LOOP")
    finish(k)
    return k


# ------------------------------------------- layernorm bwd: the fused pass --
# One kernel for f32 (spliced into ptx/layernorm.ptx, `gen-ptx16.py
# layernorm ptx/layernorm.ptx`) and for bf16/f16 (in rows16.ptx): the body
# is the same, the loads and stores differ.


class F32:
    """f32 storage: no conversions (for the kernels this script also writes
    into the f32 modules)."""
    name = "f32"

    def load1(self, k, f, addr):
        k.o("ld.global.f32 %s, [%s];" % (f, addr))

    def store1(self, k, addr, f):
        k.o("st.global.f32 [%s], %s;" % (addr, f))


LNF_NV = 8    # values of a row each thread keeps in registers: rows of <= 2048 columns
LNF_COLS = 256 * LNF_NV
LNF_GROUP_SHIFT = 4
LNF_GROUP = 1 << LNF_GROUP_SHIFT  # blocks whose partials one block adds first


def k_layernorm_bwd_fused(t):
    f32 = t.name == "f32"
    esz = 4 if f32 else 2
    VG = 16 // esz          # values in a 16-byte group
    NG = LNF_NV // VG       # groups a thread holds in vec mode
    ty = "float" if f32 else t.name
    name = "eo_layernorm_bwd_fused" if f32 else "eo_layernorm16_bwd_fused_" + t.name
    k = K(name, [
        ("u32", "rows", "rows"), ("u32", "cols", "columns, 1..%d" % LNF_COLS),
        ("u32", "rpb", "rows per block (grid.x = ceil(rows / rpb))"),
        ("u32", "vec", "nonzero: 16-byte groups (x, w, dy, dx 16-byte aligned, cols %% %d = 0)" % VG),
        ("u64", "x", "const %s *x [rows, cols]" % ty), ("u64", "w", "const %s *w [cols] or 0" % ty),
        ("u64", "mean", "const float *mean [rows]"), ("u64", "rstd", "const float *rstd [rows]"),
        ("u64", "dy", "const %s *dy [rows, cols]" % ty),
        ("u64", "dx", "%s *dx [rows, cols] (accumulated)" % ty),
        ("u64", "part", "float *part [grid.x][2][cols]: the work buffer"),
        ("u64", "dw", "%s *dw [cols] (accumulated) or 0" % ty),
        ("u64", "db", "%s *db [cols] (accumulated) or 0" % ty),
        ("u64", "done", "u32 counters [1 + ceil(grid / %d)], 0 between launches" % LNF_GROUP)],
        "%s(rows, cols, rpb, vec, x, w, mean, rstd, dy, dx, part, dw, db, done):\n"
        "the whole layernorm backward (dx, dw and db) in one pass over x and dy,\n"
        "for rows of at most %d columns.\n"
        "  xhat = (x - mean) rstd (mean, rstd saved by the forward), g = dy w,\n"
        "  dx += rstd ((g - mean_c(g)) - xhat mean_c(g xhat)),\n"
        "  dw += sum_rows dy xhat, db += sum_rows dy.\n"
        "Why: the two-kernel backward (a dx pass, then dw/db column sums) reads x\n"
        "and dy twice; a memory-bound kernel's time is its bytes, so one pass is\n"
        "the cure. Block b (256 threads) owns rows [b rpb, (b+1) rpb) and walks\n"
        "them in order; each thread keeps its %d columns of the row in registers\n"
        "(with vec, %d 16-byte groups, group j at column %d (tid + 256 j); else\n"
        "one value at a time, column tid + 256 k), and so w (read once a block)\n"
        "and its per-column partial dw, db (f32). Per row: mean, rstd, x, dy, dx\n"
        "are loaded together (one wait a row), the two row sums are reduced over\n"
        "the block (warp butterflies, the 8 warps' values through shared memory\n"
        "in warp order; two buffers alternate by row, so one barrier a row), dx\n"
        "is updated and stored. The block then writes its partials to part[b]\n"
        "(f32) and counts itself (integer atomics; no float atomics): the last\n"
        "block of each group of %d adds the group's partials in block order into\n"
        "gpart[g] (after the partials), the last group to finish adds gpart[0],\n"
        "gpart[1], ... into dw and db (rounded once), so no block reads more than\n"
        "%d blocks' or ceil(grid / %d) groups' sums. rpb depends on the shape alone, so every\n"
        "sum runs in the same order on every run and GPU: the same bits.\n"
        "Block (256, 1, 1), grid (ceil(rows / rpb), 1, 1); done: 1 + ceil(grid / %d)\n"
        "u32 counters, 0 between launches."
        % (name, LNF_COLS, LNF_NV, NG, VG, LNF_GROUP, LNF_GROUP, LNF_GROUP, LNF_GROUP))
    # at most 80 registers a thread: three blocks of 256 on an SM (65536)
    k.directives = [".maxnreg 80"]
    k.shared.append(".shared .align 16 .f32 s_red[32];     // two rows' 8 + 8 warp sums, alternating")
    k.shared.append(".shared .align 4 .u32 s_last;         // 1 in the grid's last block")
    XV = ["%%xv%d" % j for j in range(LNF_NV)]
    DV = ["%%dv%d" % j for j in range(LNF_NV)]
    ZV = ["%%zv%d" % j for j in range(LNF_NV)]
    WV = ["%%wv%d" % j for j in range(LNF_NV)]
    AW = ["%%aw%d" % j for j in range(LNF_NV)]
    AB = ["%%ab%d" % j for j in range(LNF_NV)]
    PV = ["%%pv%d" % j for j in range(LNF_NV)]
    k.r("f32", *[v[1:] for v in XV + DV + ZV + WV + AW + AB])
    k.r("f32", "mu rs fc s1 s2 tt bt sa0 sa1 sa2 sa3 sa4 sa5 sa6 sa7 sb0 sb1 sb2 sb3 sb4 sb5 sb6 sb7")
    k.r("pred", *[p[1:] for p in PV]).r("pred", "pwt pvec lead pg plast")
    k.r("b32", "tx lane warp rr r1 col tmp bo old flag c")
    k.r("b64", "off roff xr dyr dxr ms sbase slot sa pb a ap a2 rstep cb")
    k.o("mov.u32 %tx, %tid.x;")
    k.o("and.b32 %lane, %tx, 31;")
    k.o("shr.u32 %warp, %tx, 5;")
    k.o("setp.eq.u32 %lead, %lane, 0;", "lane 0 writes its warp's sums")
    k.o("mov.u64 %sbase, s_red;")
    k.o("mul.wide.u32 %slot, %warp, 4;")
    k.o("add.u64 %slot, %sbase, %slot;", "&s_red[warp]")
    k.o("mov.u32 %bo, 0;", "which of the two buffers (bytes: 0 or 64)")
    k.o("setp.ne.u64 %pwt, %w, 0;")
    k.o("setp.ne.u32 %pvec, %vec, 0;")
    k.o("cvt.rn.f32.u32 %fc, %cols;")
    k.o("mov.u32 %rr, %ctaid.x;")
    k.o("mul.lo.u32 %rr, %rr, %rpb;", "first row")
    k.o("add.u32 %r1, %rr, %rpb;")
    k.o("min.u32 %r1, %r1, %rows;", "rows [rr, r1)")
    k.c("slots past the row stay 0 (x, dy: they add nothing), w = 1 without w")
    for j in range(LNF_NV):
        k.o("mov.f32 %s, 0f00000000;" % XV[j])
        k.o("mov.f32 %s, 0f00000000;" % DV[j])
        k.o("mov.f32 %s, 0f00000000;" % ZV[j])
        k.o("mov.f32 %s, 0f3F800000;" % WV[j])
        k.o("mov.f32 %s, 0f00000000;" % AW[j])
        k.o("mov.f32 %s, 0f00000000;" % AB[j])
    if not f32:
        XW = ["%%xw%d" % j for j in range(4 * NG)]
        DW = ["%%dw%d" % j for j in range(4 * NG)]
        ZW = ["%%zw%d" % j for j in range(4 * NG)]
        WW = ["%%ww%d" % j for j in range(4 * NG)]
        k.r("b32", *[v[1:] for v in XW + DW + ZW + WW])
    k.o("@!%pvec bra SCALAR;")

    # ---- the two layouts: (mode, predicate of slot j, byte offset of slot j)
    def path(mode):
        vec = mode == "V"
        if vec:
            k.c("vec: group j = tid + 256 j holds columns %d (tid + 256 j) + 0..%d" % (VG, VG - 1))
            k.o("mul.wide.u32 %off, %tx, 16;", "the thread's byte offset in a row")
            for j in range(NG):
                k.o("add.u32 %%col, %%tx, %d;" % (256 * j))
                k.o("mul.lo.u32 %%col, %%col, %d;" % VG)
                k.o("setp.lt.u32 %s, %%col, %%cols;" % PV[j], "group %d in the row" % j)
        else:
            k.label("SCALAR")
            k.c("one value at a time: slot k holds column tid + 256 k")
            k.o("mul.wide.u32 %%off, %%tx, %d;" % esz)
            for j in range(LNF_NV):
                k.o("add.u32 %%col, %%tx, %d;" % (256 * j))
                k.o("setp.lt.u32 %s, %%col, %%cols;" % PV[j])
        nslot = NG if vec else LNF_NV

        def load_all(base, regs, words):
            """regs = this thread's values at [base + off + slot offsets]."""
            if vec:
                for j in range(NG):
                    if f32:
                        k.o("@%s ld.global.v4.f32 {%s}, [%s+%d];" % (PV[j], ", ".join(regs[4 * j:4 * j + 4]), base, 4096 * j))
                    else:
                        k.o("@%s ld.global.v4.b32 {%s}, [%s+%d];" % (PV[j], ", ".join(words[4 * j:4 * j + 4]), base, 4096 * j))
            else:
                for j in range(LNF_NV):
                    if f32:
                        k.o("@%s ld.global.f32 %s, [%s+%d];" % (PV[j], regs[j], base, 1024 * j))
                    else:
                        k.o("@%s ld.global.u16 %%h%d, [%s+%d];" % (PV[j], j, base, 512 * j))

        def widen_all(regs, words):
            if f32:
                return
            if vec and t.name == "bf16":
                # a bf16 is an f32's top half: two instructions a word
                for j in range(4 * NG):
                    k.o("shl.b32 %s, %s, 16;" % (regs[2 * j], words[j]), "bf16 -> f32: low half" if j == 0 else None)
                    k.o("and.b32 %s, %s, -65536;" % (regs[2 * j + 1], words[j]), "... high half" if j == 0 else None)
            elif vec:
                for j in range(4 * NG):
                    t.unpack(k, words[j], regs[2 * j], regs[2 * j + 1])
            else:
                for j in range(LNF_NV):
                    t.widen(k, regs[j], "%%%s%d" % (words, j))

        def zero16(words):
            """16-bit: the registers a predicated load may skip hold 0 first
            (0 widens to 0.0), so every value is defined on every row and
            a slot past the row adds nothing to any sum."""
            if vec:
                for v in words:
                    k.o("mov.b32 %s, 0;" % v)
            else:
                for j in range(LNF_NV):
                    k.o("mov.b16 %%%s%d, 0;" % (words, j))

        if not f32 and not vec:
            k.r("b16", *["h%d" % j for j in range(LNF_NV)])
            k.r("b16", *["g%d" % j for j in range(LNF_NV)])
        # w, once a block
        k.o("@!%%pwt bra W_%s;" % mode)
        k.o("add.u64 %a, %w, %off;")
        if vec or f32:
            if not f32:
                zero16(WW)
            load_all("%a", WV, None if f32 else WW)
            if not f32:
                widen_all(WV, WW)
        else:
            zero16("g")
            for j in range(LNF_NV):
                k.o("@%s ld.global.u16 %%g%d, [%%a+%d];" % (PV[j], j, 512 * j))
            widen_all(WV, "g")
        k.label("W_" + mode)

        k.label("ROW_" + mode)
        k.o("setp.ge.u32 %pg, %rr, %r1;")
        k.o("@%%pg bra PART_%s;" % mode)
        k.o("mul.wide.u32 %roff, %rr, %cols;")
        k.o("mul.lo.u64 %%roff, %%roff, %d;" % esz, "byte offset of the row")
        k.o("add.u64 %roff, %roff, %off;")
        k.o("add.u64 %xr, %x, %roff;")
        k.o("add.u64 %dyr, %dy, %roff;")
        k.o("add.u64 %dxr, %dx, %roff;")
        k.o("mul.wide.u32 %ms, %rr, 4;")
        k.o("add.u64 %a, %mean, %ms;")
        k.o("ld.global.f32 %mu, [%a];")
        k.o("add.u64 %a, %rstd, %ms;")
        k.o("ld.global.f32 %rs, [%a];")
        if not f32 and not vec:
            # three sets of 16 halves: h for x, g for dy (w's are widened), reuse
            # h after widening x; dx's halves need their own
            k.r("b16", *["q%d" % j for j in range(LNF_NV)])
        skip = vec and not f32   # one 16-byte group a thread: all of it or none
        if vec or f32:
            load_all("%xr", XV, None if f32 else XW)
            load_all("%dyr", DV, None if f32 else DW)
            load_all("%dxr", ZV, None if f32 else ZW)
            if skip:
                k.o("mov.f32 %s1, 0f00000000;")
                k.o("mov.f32 %s2, 0f00000000;")
                k.o("@!%%pv0 bra RED_%s;" % mode, "a thread past the row adds 0 to the sums")
            widen_all(XV, None if f32 else XW)
            widen_all(DV, None if f32 else DW)
        else:
            zero16("h")
            zero16("g")
            zero16("q")
            for j in range(LNF_NV):
                k.o("@%s ld.global.u16 %%h%d, [%%xr+%d];" % (PV[j], j, 512 * j))
            for j in range(LNF_NV):
                k.o("@%s ld.global.u16 %%g%d, [%%dyr+%d];" % (PV[j], j, 512 * j))
            for j in range(LNF_NV):
                k.o("@%s ld.global.u16 %%q%d, [%%dxr+%d];" % (PV[j], j, 512 * j))
            widen_all(XV, "h")
            widen_all(DV, "g")
        if not skip:
            k.o("mov.f32 %s1, 0f00000000;")
            k.o("mov.f32 %s2, 0f00000000;")
        for j in range(LNF_NV):
            k.o("sub.rn.f32 %s, %s, %%mu;" % (XV[j], XV[j]))
            k.o("mul.rn.f32 %s, %s, %%rs;" % (XV[j], XV[j]), "xhat" if j == 0 else None)
            k.o("fma.rn.f32 %s, %s, %s, %s;" % (AW[j], DV[j], XV[j], AW[j]), "dw partial += dy xhat" if j == 0 else None)
            k.o("add.rn.f32 %s, %s, %s;" % (AB[j], AB[j], DV[j]), "db partial += dy" if j == 0 else None)
            k.o("mul.rn.f32 %s, %s, %s;" % (DV[j], DV[j], WV[j]), "g = dy w" if j == 0 else None)
            k.o("add.rn.f32 %%s1, %%s1, %s;" % DV[j])
            k.o("fma.rn.f32 %%s2, %s, %s, %%s2;" % (DV[j], XV[j]))
        if skip:
            k.label("RED_" + mode)
        k.c("the two row sums over the block, into buffer bo")
        for v in ("%s1", "%s2"):
            for d in (16, 8, 4, 2, 1):
                k.o("shfl.sync.bfly.b32 %%bt, %s, %d, 31, 0xffffffff;" % (v, d))
                k.o("add.rn.f32 %s, %s, %%bt;" % (v, v))
        k.o("cvt.u64.u32 %sa, %bo;")
        k.o("add.u64 %a, %slot, %sa;")
        k.o("@%lead st.shared.f32 [%a], %s1;")
        k.o("@%lead st.shared.f32 [%a+32], %s2;")
        k.o("bar.sync 0;", "one barrier a row: the other buffer is next row's")
        k.o("add.u64 %sa, %sbase, %sa;")
        k.o("ld.shared.v4.f32 {%sa0, %sa1, %sa2, %sa3}, [%sa];", "the 8 warps' sum g")
        k.o("ld.shared.v4.f32 {%sa4, %sa5, %sa6, %sa7}, [%sa+16];")
        k.o("ld.shared.v4.f32 {%sb0, %sb1, %sb2, %sb3}, [%sa+32];", "... and sum g xhat")
        k.o("ld.shared.v4.f32 {%sb4, %sb5, %sb6, %sb7}, [%sa+48];")
        k.o("xor.b32 %bo, %bo, 64;")
        k.o("add.rn.f32 %s1, %sa0, %sa1;")
        k.o("add.rn.f32 %s2, %sb0, %sb1;")
        for j in range(2, 8):
            k.o("add.rn.f32 %%s1, %%s1, %%sa%d;" % j)
            k.o("add.rn.f32 %%s2, %%s2, %%sb%d;" % j)
        k.o("div.rn.f32 %s1, %s1, %fc;", "mean_c(g)")
        k.o("div.rn.f32 %s2, %s2, %fc;", "mean_c(g xhat)")
        if skip:
            k.o("@!%%pv0 bra NEXT_%s;" % mode)
        if not f32:
            k.c("dx widened only now: its words, not 8 floats, wait through the reduction")
            widen_all(ZV, ZW if vec else "q")
        for j in range(LNF_NV):
            k.o("sub.rn.f32 %s, %s, %%s1;" % (DV[j], DV[j]), "g - mean(g)" if j == 0 else None)
            k.o("mul.rn.f32 %%tt, %s, %%s2;" % XV[j])
            k.o("sub.rn.f32 %s, %s, %%tt;" % (DV[j], DV[j]), "... - xhat mean(g xhat)" if j == 0 else None)
            k.o("mul.rn.f32 %s, %%rs, %s;" % (DV[j], DV[j]), "* rstd" if j == 0 else None)
            k.o("add.rn.f32 %s, %s, %s;" % (ZV[j], ZV[j], DV[j]))
        if vec:
            for j in range(NG):
                if f32:
                    k.o("@%s st.global.v4.f32 [%%dxr+%d], {%s};" % (PV[j], 4096 * j, ", ".join(ZV[4 * j:4 * j + 4])))
                else:
                    for q in range(4):
                        t.pack(k, ZW[4 * j + q], ZV[8 * j + 2 * q], ZV[8 * j + 2 * q + 1])
                    k.o("@%s st.global.v4.b32 [%%dxr+%d], {%s};" % (PV[j], 4096 * j, ", ".join(ZW[4 * j:4 * j + 4])))
        else:
            for j in range(LNF_NV):
                if f32:
                    k.o("@%s st.global.f32 [%%dxr+%d], %s;" % (PV[j], 1024 * j, ZV[j]))
                else:
                    t.round1(k, "%%q%d" % j, ZV[j])
                    k.o("@%s st.global.b16 [%%dxr+%d], %%q%d;" % (PV[j], 512 * j, j))
        if f32:
            # xv, dv hold this row's x-hat and dx terms now; a slot past the
            # row is never reloaded, so put its 0s back (else x-hat of such a
            # slot would be rescaled by every row's rstd until it overflowed,
            # and 0 * inf poisons the sums)
            for j in range(LNF_NV):
                k.o("@!%s mov.f32 %s, 0f00000000;" % (PV[j // VG if vec else j], DV[j]),
                    "slots past the row: x = dy = 0 again" if j == 0 else None)
                k.o("@!%s mov.f32 %s, 0f00000000;" % (PV[j // VG if vec else j], XV[j]))
        if skip:
            k.label("NEXT_" + mode)
        k.o("add.u32 %rr, %rr, 1;")
        k.o("bra ROW_%s;" % mode)

        k.label("PART_" + mode)
        k.c("this block's partial dw, db (f32) to part[b][0][.], part[b][1][.]")
        k.o("mov.u32 %tmp, %ctaid.x;")
        k.o("mul.wide.u32 %pb, %tmp, %cols;")
        k.o("shl.b64 %pb, %pb, 3;", "b * 2 cols floats, in bytes")
        k.o("add.u64 %pb, %part, %pb;")
        k.o("mul.wide.u32 %cb, %cols, 4;", "from part[b][0] to part[b][1]")
        if vec and not f32:
            # 8 sums a thread as two 16-byte halves, the first halves of all
            # threads, then the second ones (from float cols/2 on): each
            # store instruction covers 512 contiguous bytes
            k.r("b64", "hb a3")
            k.o("mul.wide.u32 %a, %tx, 16;")
            k.o("add.u64 %a, %pb, %a;")
            k.o("add.u64 %a2, %a, %cb;")
            k.o("mul.wide.u32 %hb, %cols, 2;", "cols/2 floats, in bytes")
            k.o("@%%pv0 st.global.v4.f32 [%%a], {%s};" % ", ".join(AW[0:4]))
            k.o("@%%pv0 st.global.v4.f32 [%%a2], {%s};" % ", ".join(AB[0:4]))
            k.o("add.u64 %a3, %a, %hb;")
            k.o("@%%pv0 st.global.v4.f32 [%%a3], {%s};" % ", ".join(AW[4:8]))
            k.o("add.u64 %a3, %a2, %hb;")
            k.o("@%%pv0 st.global.v4.f32 [%%a3], {%s};" % ", ".join(AB[4:8]))
        elif vec:
            k.o("mul.wide.u32 %%a, %%tx, %d;" % (4 * VG))
            k.o("add.u64 %a, %pb, %a;")
            k.o("add.u64 %a2, %a, %cb;")
            for j in range(NG):
                for q in range(VG // 4):
                    o = 4 * VG * 256 * j + 16 * q
                    k.o("@%s st.global.v4.f32 [%%a+%d], {%s};" % (PV[j], o, ", ".join(AW[VG * j + 4 * q:VG * j + 4 * q + 4])))
                    k.o("@%s st.global.v4.f32 [%%a2+%d], {%s};" % (PV[j], o, ", ".join(AB[VG * j + 4 * q:VG * j + 4 * q + 4])))
        else:
            k.o("mul.wide.u32 %a, %tx, 4;")
            k.o("add.u64 %a, %pb, %a;")
            k.o("add.u64 %a2, %a, %cb;")
            for j in range(LNF_NV):
                k.o("@%s st.global.f32 [%%a+%d], %s;" % (PV[j], 1024 * j, AW[j]))
                k.o("@%s st.global.f32 [%%a2+%d], %s;" % (PV[j], 1024 * j, AB[j]))
        k.o("bra COUNT;")

    path("V")
    path("S")

    k.label("COUNT")
    k.c("two levels, so that no one block reads every partial: the last block")
    k.c("of each group of %d (blocks %d g ...) adds its group's partials in block" % (LNF_GROUP, LNF_GROUP))
    k.c("order into gpart[g] (after the blocks' partials), and the last group")
    k.c("to finish adds gpart[0], gpart[1], ... into dw, db. Thread 0 makes the")
    k.c("block's stores visible (membar.gl) and counts it on an integer counter")
    k.r("f32", "sw sb v", *["pw%d" % u for u in range(8)], *["pb%d" % u for u in range(8)])
    k.r("b32", "nb b b8 grp gsz ng pc pe").r("pred", "pdw pdb").r("b64", "gbase gp")
    k.o("mov.u32 %nb, %nctaid.x;")
    k.o("mov.u32 %grp, %ctaid.x;")
    k.o("shr.u32 %%grp, %%grp, %d;" % LNF_GROUP_SHIFT, "this block's group")
    k.o("shl.b32 %%tmp, %%grp, %d;" % LNF_GROUP_SHIFT)
    k.o("sub.u32 %gsz, %nb, %tmp;")
    k.o("min.u32 %%gsz, %%gsz, %d;" % LNF_GROUP, "blocks in the group")
    k.o("add.u32 %%ng, %%nb, %d;" % (LNF_GROUP - 1))
    k.o("shr.u32 %%ng, %%ng, %d;" % LNF_GROUP_SHIFT, "groups")
    k.o("mul.wide.u32 %rstep, %cols, 8;", "bytes from one block's partials to the next")
    k.o("mul.wide.u32 %gbase, %nb, %cols;")
    k.o("shl.b64 %gbase, %gbase, 3;")
    k.o("add.u64 %gbase, %part, %gbase;", "gpart[0]: after the blocks' partials")
    k.o("bar.sync 0;", "the block's partials stored")
    k.o("setp.ne.u32 %pg, %tx, 0;")
    k.o("@%pg bra COUNTED;")
    k.o("membar.gl;", "the partials before the count")
    k.o("mul.wide.u32 %a2, %grp, 4;")
    k.o("add.u64 %a2, %done, %a2;")
    k.o("add.u64 %a2, %a2, 4;", "the group's counter: done[1 + g]")
    k.o("atom.global.add.u32 %old, [%a2], 1;")
    k.o("sub.u32 %tmp, %gsz, 1;")
    k.o("setp.eq.u32 %plast, %old, %tmp;", "every other block of the group counted")
    k.o("selp.u32 %flag, 1, 0, %plast;")
    k.o("st.shared.u32 [s_last], %flag;")
    k.o("@%plast st.global.u32 [%a2], 0;", "ready for the next launch")
    k.label("COUNTED")
    k.o("bar.sync 0;")
    k.o("ld.shared.u32 %flag, [s_last];")
    k.o("setp.eq.u32 %pg, %flag, 0;")
    k.o("@%pg bra DONE;", "(uniform) not the group's last block")
    k.o("membar.gl;", "the group's partials before the reads")

    def sum_n(lab, n):
        """%sw, %sb = sum over i < n (in order) of [%ap + i rstep], [... + cb]."""
        k.o("mov.f32 %sw, 0f00000000;")
        k.o("mov.f32 %sb, 0f00000000;")
        k.o("mov.u32 %b, 0;")
        k.label(lab + "_8")
        k.o("add.u32 %b8, %b, 8;")
        k.o("setp.gt.u32 %%pg, %%b8, %s;" % n)
        k.o("@%%pg bra %s_1;" % lab)
        k.o("mov.u64 %a, %ap;")
        for u in range(8):
            k.o("ld.global.f32 %%pw%d, [%%a];" % u, "8 blocks' loads in flight" if u == 0 else None)
            k.o("add.u64 %a2, %a, %cb;")
            k.o("ld.global.f32 %%pb%d, [%%a2];" % u)
            k.o("add.u64 %a, %a, %rstep;")
        for u in range(8):
            k.o("add.rn.f32 %%sw, %%sw, %%pw%d;" % u, "in order" if u == 0 else None)
            k.o("add.rn.f32 %%sb, %%sb, %%pb%d;" % u)
        k.o("mov.u64 %ap, %a;")
        k.o("mov.u32 %b, %b8;")
        k.o("bra %s_8;" % lab)
        k.label(lab + "_1")
        k.o("setp.ge.u32 %%pg, %%b, %s;" % n)
        k.o("@%%pg bra %s_E;" % lab)
        k.o("ld.global.f32 %v, [%ap];")
        k.o("add.rn.f32 %sw, %sw, %v;")
        k.o("add.u64 %a2, %ap, %cb;")
        k.o("ld.global.f32 %v, [%a2];")
        k.o("add.rn.f32 %sb, %sb, %v;")
        k.o("add.u64 %ap, %ap, %rstep;")
        k.o("add.u32 %b, %b, 1;")
        k.o("bra %s_1;" % lab)
        k.label(lab + "_E")

    k.c("level 1: gpart[g][.][c] = sum of the group's partials, a column a thread")
    k.o("mov.u32 %c, %tx;")
    k.label("G_COL")
    k.o("setp.ge.u32 %pg, %c, %cols;")
    k.o("@%pg bra G_DONE;")
    k.o("mov.u32 %pc, %c;")
    if not f32:
        k.o("@!%pvec bra G_AT;")
        k.c("vec: column c's sum is at 4 (c / 8) + c % 4, plus cols/2 when c % 8 >= 4")
        k.o("shr.u32 %pc, %c, 3;")
        k.o("shl.b32 %pc, %pc, 2;")
        k.o("and.b32 %pe, %c, 3;")
        k.o("add.u32 %pc, %pc, %pe;")
        k.o("and.b32 %pe, %c, 4;")
        k.o("setp.ne.u32 %pg, %pe, 0;")
        k.o("shr.u32 %pe, %cols, 1;")
        k.o("@%pg add.u32 %pc, %pc, %pe;")
        k.label("G_AT")
    k.o("shl.b32 %%tmp, %%grp, %d;" % LNF_GROUP_SHIFT, "the group's first block")
    k.o("mul.wide.u32 %ap, %tmp, %cols;")
    k.o("shl.b64 %ap, %ap, 1;")
    k.o("cvt.u64.u32 %a, %pc;")
    k.o("add.u64 %ap, %ap, %a;")
    k.o("shl.b64 %ap, %ap, 2;")
    k.o("add.u64 %ap, %part, %ap;", "&part[16 g][0][c]")
    sum_n("G", "%gsz")
    k.o("mul.wide.u32 %gp, %grp, %cols;")
    k.o("shl.b64 %gp, %gp, 1;")
    k.o("cvt.u64.u32 %a, %c;")
    k.o("add.u64 %gp, %gp, %a;")
    k.o("shl.b64 %gp, %gp, 2;")
    k.o("add.u64 %gp, %gbase, %gp;", "&gpart[g][0][c]")
    k.o("st.global.f32 [%gp], %sw;")
    k.o("add.u64 %gp, %gp, %cb;")
    k.o("st.global.f32 [%gp], %sb;")
    k.o("add.u32 %c, %c, 256;")
    k.o("bra G_COL;")
    k.label("G_DONE")
    k.o("bar.sync 0;", "the group's sums stored (and s_last read)")
    k.o("setp.ne.u32 %pg, %tx, 0;")
    k.o("@%pg bra COUNTED2;")
    k.o("membar.gl;")
    k.o("atom.global.add.u32 %old, [%done], 1;", "done[0] counts the groups")
    k.o("sub.u32 %tmp, %ng, 1;")
    k.o("setp.eq.u32 %plast, %old, %tmp;")
    k.o("selp.u32 %flag, 1, 0, %plast;")
    k.o("st.shared.u32 [s_last], %flag;")
    k.o("@%plast st.global.u32 [%done], 0;")
    k.label("COUNTED2")
    k.o("bar.sync 0;")
    k.o("ld.shared.u32 %flag, [s_last];")
    k.o("setp.eq.u32 %pg, %flag, 0;")
    k.o("@%pg bra DONE;", "(uniform) not the last group")
    k.o("membar.gl;")
    k.c("level 2: dw, db += the groups' sums in group order, rounded once")
    k.o("setp.ne.u64 %pdw, %dw, 0;")
    k.o("setp.ne.u64 %pdb, %db, 0;")
    k.o("mov.u32 %c, %tx;")
    k.label("T_COL")
    k.o("setp.ge.u32 %pg, %c, %cols;")
    k.o("@%pg bra DONE;")
    k.o("mul.wide.u32 %ap, %c, 4;")
    k.o("add.u64 %ap, %gbase, %ap;", "&gpart[0][0][c]")
    sum_n("T", "%ng")
    k.o("mul.wide.u32 %%a, %%c, %d;" % esz)
    k.o("@!%pdw bra T_DB;")
    k.o("add.u64 %a2, %dw, %a;")
    t.load1(k, "%v", "%a2")
    k.o("add.rn.f32 %v, %v, %sw;")
    t.store1(k, "%a2", "%v")
    k.label("T_DB")
    k.o("@!%pdb bra T_NEXT;")
    k.o("add.u64 %a2, %db, %a;")
    t.load1(k, "%v", "%a2")
    k.o("add.rn.f32 %v, %v, %sb;")
    t.store1(k, "%a2", "%v")
    k.label("T_NEXT")
    k.o("add.u32 %c, %c, 256;")
    k.o("bra T_COL;")
    finish(k)
    return k


LN_BEGIN = "// ==== GENERATED by tools/build/gen-ptx16.py layernorm: begin (edit the script, not this part) ===="
LN_END = "// ==== GENERATED by tools/build/gen-ptx16.py layernorm: end ===="


def region_layernorm():
    """The generated part of ptx/layernorm.ptx: the fused f32 backward."""
    return LN_BEGIN + "\n" + k_layernorm_bwd_fused(F32()).text() + LN_END + "\n"


# ------------------------------------------------ embedding16: the backward --

EMB_U = 8


def k_embedding_bwd(t):
    U = EMB_U
    k = K("eo_embedding16_bwd_cols_" + t.name, [
        ("u32", "n", "indices"), ("u32", "dim", "row length"),
        ("u64", "idx", "const int32 *idx [n] (checked: every id in the table)"),
        ("u64", "dout", "const %s *dout [n, dim]" % t.name),
        ("u64", "dtable", "%s *dtable [vocab, dim] (accumulated)" % t.name)],
        ("eo_embedding16_bwd_cols_%s(n, dim, idx, dout, dtable): the fallback of\n"
         "eo_embedding16_bwd_%s for more indices than its lists fit (~2^19).\n"
         "dtable[idx[i], c] += dout[i, c]\n"
         "for i = 0, 1, ..., n-1 in that order, each sum rounded to %s when it is\n"
         "stored (the contract of eo_k_embedding_backward16: a 16-bit index_add), so\n"
         "a repeated id sees the rounded result of its previous occurrence. No\n"
         "atomics: a thread owns column c of every row (grid-stride over dim, block\n"
         "256), which makes the order of the additions the index order by\n"
         "construction, and a warp's accesses to a dout or dtable row are 64\n"
         "contiguous bytes. The indices go %d at a time: their ids, dout values and\n"
         "dtable values are loaded together (%d independent loads in flight instead\n"
         "of one chain per index), then added in order, where an id equal to an\n"
         "earlier one of the batch takes that one's rounded sum instead of its own\n"
         "(stale) load; the stores follow in index order, so the last store of a\n"
         "repeated id is its final value. Only dim threads: slow, but it needs no\n"
         "memory.") % (t.name, t.name, t.name, U, 2 * U))
    IDS = ["%%id%d" % u for u in range(U)]
    DV = ["%%d%d" % u for u in range(U)]
    TV = ["%%t%d" % u for u in range(U)]
    HV = ["%%h%d" % u for u in range(U)]
    AT = ["%%at%d" % u for u in range(U)]
    k.r("b32", *[r[1:] for r in IDS]).r("f32", *[r[1:] for r in DV + TV]).r("b16", *[r[1:] for r in HV])
    k.r("b64", *[r[1:] for r in AT]).r("b64", "pi pdo rowb ad cc").r("b32", "c ii tmp").r("pred", "pg peq")
    grid_stride(k, "c", "step")
    k.o("mul.wide.u32 %rowb, %dim, 2;", "bytes per row")
    k.label("COL")
    until(k, "%c", "%dim", "DONE")
    k.o("mov.u64 %pi, %idx;")
    k.o("mul.wide.u32 %pdo, %c, 2;")
    k.o("add.u64 %pdo, %dout, %pdo;", "&dout[0, c]")
    k.o("cvt.u64.u32 %cc, %c;")
    k.o("mov.u32 %ii, 0;")

    def batch(B):
        for u in range(B):
            k.o("ld.global.s32 %s, [%%pi+%d];" % (IDS[u], 4 * u), "the same id for the whole warp" if u == 0 else None)
        for u in range(B):
            k.o("mul.wide.u32 %s, %s, %%dim;" % (AT[u], IDS[u]))
            k.o("add.u64 %s, %s, %%cc;" % (AT[u], AT[u]))
            k.o("shl.b64 %s, %s, 1;" % (AT[u], AT[u]))
            k.o("add.u64 %s, %%dtable, %s;" % (AT[u], AT[u]), "&dtable[id, c]" if u == 0 else None)
            t.load1(k, TV[u], AT[u])
            if u == 0:
                k.o("mov.u64 %ad, %pdo;")
            else:
                k.o("add.u64 %ad, %ad, %rowb;")
            t.load1(k, DV[u], "%ad")
        for u in range(B):
            for j in range(u):
                k.o("setp.eq.u32 %%peq, %s, %s;" % (IDS[u], IDS[j]))
                k.o("@%%peq mov.f32 %s, %s;" % (TV[u], TV[j]),
                    "a repeat: the latest earlier sum, not the stale load" if j == 0 and u == 1 else None)
            k.o("add.rn.f32 %s, %s, %s;" % (TV[u], TV[u], DV[u]))
            t.round1(k, HV[u], TV[u])
            if u + 1 < B:
                t.widen(k, TV[u], HV[u])
        for u in range(B):
            k.o("st.global.b16 [%s], %s;" % (AT[u], HV[u]))
        k.o("add.u32 %%ii, %%ii, %d;" % B)
        k.o("add.u64 %%pi, %%pi, %d;" % (4 * B))
        for u in range(B):
            k.o("add.u64 %pdo, %pdo, %rowb;")

    k.label("BATCH")
    k.o("add.u32 %%tmp, %%ii, %d;" % U)
    k.o("setp.gt.u32 %pg, %tmp, %n;")
    k.o("@%pg bra ONE;")
    batch(U)
    k.o("bra BATCH;")
    k.label("ONE")
    until(k, "%ii", "%n", "NEXT")
    batch(1)
    k.o("bra ONE;")
    k.label("NEXT")
    k.o("add.u32 %c, %c, %step;")
    k.o("bra COL;")
    finish(k)
    return k


def k_embedding_links():
    k = K("eo_embedding16_links", [
        ("u32", "n", "indices"), ("u32", "tps", "tiles of 256 ids per segment (grid y)"),
        ("u64", "idx", "const int32 *idx [n] (checked: ids >= 0)"),
        ("u64", "part", "int32 *part [segments][n] (the work buffer)")],
        "eo_embedding16_links(n, tps, idx, part): position i's occurrences of its id\n"
        "among the positions of segment y = ctaid.y (tiles [y tps, (y+1) tps) of 256\n"
        "ids): part[y][i] = the first such position j > i (0x7fffffff: none), its\n"
        "top bit set when one j < i is there. eo_embedding16_link_join combines\n"
        "the segments. Grid (ceil(n/256), segments), block 256, 1 KiB of shared\n"
        "memory: the block stages its segment's ids 256 at a time and every thread\n"
        "compares its own id with them, 4 at a time from one 128-bit shared load\n"
        "(the same address for the whole warp: a broadcast), the bookkeeping only\n"
        "where one of the 4 matches. n^2 compares in all, over n x segments threads.")
    k.shared.append(".shared .align 16 .b32 s_id[256];      // a tile of ids")
    k.r("b32", "i tx my seen nx T Tend jj jb u v c0 c1 c2 c3 res ty").r("b64", "a sb sa")
    k.r("pred", "pin pg pl pq pe0 pe1 pe2 pe3 pany pb")
    k.o("mov.u32 %tx, %tid.x;")
    k.o("mov.u32 %i, %ctaid.x;")
    k.o("mad.lo.u32 %i, %i, 256, %tx;", "this thread's position")
    k.o("setp.lt.u32 %pin, %i, %n;")
    k.o("mov.u32 %my, -1;", "past the end: an id no position has")
    k.o("mul.wide.u32 %a, %i, 4;")
    k.o("add.u64 %a, %idx, %a;")
    k.o("@%pin ld.global.u32 %my, [%a];")
    k.o("mov.u32 %seen, 0;")
    k.o("mov.u32 %nx, 2147483647;", "no next position yet")
    k.o("mov.u64 %sa, s_id;")
    k.o("mul.wide.u32 %a, %tx, 4;")
    k.o("add.u64 %sb, %sa, %a;", "&s_id[tid]")
    k.o("mov.u32 %ty, %ctaid.y;")
    k.o("mul.lo.u32 %T, %ty, %tps;")
    k.o("shl.b32 %T, %T, 8;", "the segment's first position ...")
    k.o("add.u32 %Tend, %ty, 1;")
    k.o("mul.lo.u32 %Tend, %Tend, %tps;")
    k.o("shl.b32 %Tend, %Tend, 8;")
    k.o("min.u32 %Tend, %Tend, %n;", "... and its end")
    k.label("TILE")
    until(k, "%T", "%Tend", "END")
    k.o("add.u32 %jj, %T, %tx;")
    k.o("setp.lt.u32 %pq, %jj, %n;")
    k.o("mov.u32 %v, -1;")
    k.o("mul.wide.u32 %a, %jj, 4;")
    k.o("add.u64 %a, %idx, %a;")
    k.o("@%pq ld.global.u32 %v, [%a];")
    k.o("st.shared.u32 [%sb], %v;")
    k.o("bar.sync 0;")
    k.o("mov.u32 %u, 0;")
    k.o("mov.u64 %a, %sa;")
    k.label("CMP")
    k.o("ld.shared.v4.u32 {%c0, %c1, %c2, %c3}, [%a];", "4 ids, the same for every lane")
    for q in range(4):
        k.o("setp.eq.u32 %%pe%d, %%c%d, %%my;" % (q, q))
    k.o("or.pred %pany, %pe0, %pe1;")
    k.o("or.pred %pb, %pe2, %pe3;")
    k.o("or.pred %pany, %pany, %pb;")
    k.o("@!%pany bra CMP_NEXT;", "no match among the 4 (the common case)")
    k.o("add.u32 %jb, %T, %u;")
    for q in range(4):
        k.o("add.u32 %%jj, %%jb, %d;" % q)
        k.o("setp.lt.u32 %pl, %jj, %i;")
        k.o("and.pred %%pl, %%pl, %%pe%d;" % q)
        k.o("@%pl mov.u32 %seen, 1;", "an earlier occurrence" if q == 0 else None)
        k.o("setp.gt.u32 %pl, %jj, %i;")
        k.o("and.pred %%pl, %%pl, %%pe%d;" % q)
        k.o("@%pl min.u32 %nx, %nx, %jj;", "the first later one" if q == 0 else None)
    k.label("CMP_NEXT")
    k.o("add.u32 %u, %u, 4;")
    k.o("add.u64 %a, %a, 16;")
    k.o("setp.lt.u32 %pg, %u, 256;")
    k.o("@%pg bra CMP;")
    k.o("bar.sync 0;", "the tile may be overwritten after this")
    k.o("add.u32 %T, %T, 256;")
    k.o("bra TILE;")
    k.label("END")
    k.o("@!%pin bra DONE;")
    k.o("shl.b32 %seen, %seen, 31;")
    k.o("or.b32 %res, %nx, %seen;")
    k.o("mad.lo.u32 %jj, %ty, %n, %i;")
    k.o("mul.wide.u32 %a, %jj, 4;")
    k.o("add.u64 %a, %part, %a;", "&part[y][i]")
    k.o("st.global.u32 [%a], %res;")
    finish(k)
    return k


def k_embedding_link_join():
    k = K("eo_embedding16_link_join", [
        ("u32", "n", "indices"), ("u32", "S", "segments"),
        ("u64", "part", "const int32 *part [S][n]"), ("u64", "link", "int32 *link [n]")],
        "eo_embedding16_link_join(n, S, part, link): link[i] = the smallest next\n"
        "position over the S segments, with the top bit set when any segment saw an\n"
        "earlier occurrence (min and or: the result does not depend on any order).\n"
        "Grid-stride over n, block 256.")
    k.r("b32", "s v nx seen lo").r("b64", "a rs")
    k.o("mul.wide.u32 %rs, %n, 4;", "bytes from one segment to the next")
    grid_stride(k)
    k.label("LOOP")
    until(k, "%i", "%n", "DONE")
    k.o("mul.wide.u32 %a, %i, 4;")
    k.o("add.u64 %a, %part, %a;")
    k.o("mov.u32 %nx, 2147483647;")
    k.o("mov.u32 %seen, 0;")
    k.o("mov.u32 %s, 0;")
    k.label("SEG4")
    k.r("b32", "s4 v0 v1 v2 v3").r("pred", "p4")
    k.o("add.u32 %s4, %s, 4;")
    k.o("setp.gt.u32 %p4, %s4, %S;")
    k.o("@%p4 bra SEG;")
    for q in range(4):
        k.o("ld.global.u32 %%v%d, [%%a];" % q, "4 segments' loads in flight" if q == 0 else None)
        k.o("add.u64 %a, %a, %rs;")
    for q in range(4):
        k.o("and.b32 %%lo, %%v%d, -2147483648;" % q)
        k.o("or.b32 %seen, %seen, %lo;")
        k.o("and.b32 %%v%d, %%v%d, 2147483647;" % (q, q))
        k.o("min.u32 %%nx, %%nx, %%v%d;" % q)
    k.o("mov.u32 %s, %s4;")
    k.o("bra SEG4;")
    k.label("SEG")
    until(k, "%s", "%S", "OUT")
    k.o("ld.global.u32 %v, [%a];")
    k.o("and.b32 %lo, %v, -2147483648;")
    k.o("or.b32 %seen, %seen, %lo;")
    k.o("and.b32 %v, %v, 2147483647;")
    k.o("min.u32 %nx, %nx, %v;")
    k.o("add.u64 %a, %a, %rs;")
    k.o("add.u32 %s, %s, 1;")
    k.o("bra SEG;")
    k.label("OUT")
    k.o("or.b32 %nx, %nx, %seen;")
    k.o("mul.wide.u32 %a, %i, 4;")
    k.o("add.u64 %a, %link, %a;")
    k.o("st.global.u32 [%a], %nx;")
    advance(k, "LOOP")
    finish(k)
    return k


def k_embedding_bwd_lists(t):
    k = K("eo_embedding16_bwd_" + t.name, [
        ("u32", "n", "indices"), ("u32", "dim", "row length"),
        ("u32", "nvec", "dim/8 when 16-byte groups fit, else 0"),
        ("u64", "idx", "const int32 *idx [n] (checked)"),
        ("u64", "link", "const int32 *link [n] (eo_embedding16_links)"),
        ("u64", "dout", "const %s *dout [n, dim]" % t.name),
        ("u64", "dtable", "%s *dtable [vocab, dim] (accumulated)" % t.name)],
        ("eo_embedding16_bwd_%s(n, dim, nvec, idx, link, dout, dtable): dtable[idx[i], :]\n"
         "+= dout[i, :] for i = 0, 1, ..., n-1 in that order, each sum rounded to %s\n"
         "(the contract of eo_k_embedding_backward16: a 16-bit index_add), so a\n"
         "repeated id sees the rounded result of its previous occurrence. No\n"
         "atomics: the first occurrence of each id (link's top bit clear) reads its\n"
         "table row once, adds the dout rows of every occurrence in index order\n"
         "(following link), rounding after each, and writes the row once; the other\n"
         "positions do nothing. Distinct ids are all first occurrences, so a batch\n"
         "of them is as parallel as the gather (eo_embedding16: grid x a row's\n"
         "16-byte groups or values, grid y the positions, no division); a repeated\n"
         "id costs one chain step per occurrence.") % (t.name, t.name))
    A = ["%%a%d" % j for j in range(8)]
    D = ["%%e%d" % j for j in range(8)]
    k.r("f32", *[r[1:] for r in A + D]).r("f32", "sa sd")
    k.r("b32", "i id c st0 cstep nt lk j w0 w1 w2 w3 x0 x1 x2 x3 top").r("b64", "trow a o dr")
    k.r("b16", "h").r("pred", "pg pv plead")
    k.o("setp.ne.u32 %pv, %nvec, 0;")
    k.o("mov.u32 %nt, %ntid.x;")
    k.o("mov.u32 %st0, %ctaid.x;")
    k.o("mov.u32 %c, %tid.x;")
    k.o("mad.lo.u32 %st0, %st0, %nt, %c;", "this thread's first group (or value)")
    k.o("mov.u32 %cstep, %nctaid.x;")
    k.o("mul.lo.u32 %cstep, %cstep, %nt;")
    k.o("mov.u32 %i, %ctaid.y;")
    k.label("ROW")
    until(k, "%i", "%n", "DONE")
    k.o("mul.wide.u32 %a, %i, 4;")
    k.o("add.u64 %o, %link, %a;")
    k.o("ld.global.u32 %lk, [%o];")
    k.o("and.b32 %top, %lk, -2147483648;")
    k.o("setp.eq.u32 %plead, %top, 0;", "the id's first occurrence?")
    k.o("@!%plead bra NEXT;", "(uniform over the block row)")
    k.o("add.u64 %o, %idx, %a;")
    k.o("ld.global.s32 %id, [%o];")
    k.o("mul.wide.u32 %trow, %id, %dim;")
    k.o("shl.b64 %trow, %trow, 1;")
    k.o("add.u64 %trow, %dtable, %trow;", "&dtable[id, 0]")
    k.o("mov.u32 %c, %st0;")
    k.o("@!%pv bra ONE;")
    k.label("VEC")
    until(k, "%c", "%nvec", "NEXT")
    k.o("mul.wide.u32 %dr, %c, 16;", "the group's byte offset in a row")
    k.o("add.u64 %a, %trow, %dr;")
    k.o("ld.global.v4.b32 {%w0, %w1, %w2, %w3}, [%a];", "the table row's group, once")
    for q in range(4):
        t.unpack(k, "%%w%d" % q, A[2 * q], A[2 * q + 1])
    k.o("mov.u32 %j, %i;")
    k.o("mov.u32 %x0, %lk;")
    k.label("VCHAIN")
    k.o("mul.wide.u32 %o, %j, %dim;")
    k.o("shl.b64 %o, %o, 1;")
    k.o("add.u64 %o, %o, %dr;")
    k.o("add.u64 %o, %dout, %o;", "&dout[j, group]")
    k.o("ld.global.v4.b32 {%x0, %x1, %x2, %x3}, [%o];".replace("%x0, %x1, %x2, %x3", "%w0, %w1, %w2, %w3"))
    for q in range(4):
        t.unpack(k, "%%w%d" % q, D[2 * q], D[2 * q + 1])
    for q in range(8):
        k.o("add.rn.f32 %s, %s, %s;" % (A[q], A[q], D[q]))
    for q in range(4):
        t.pack(k, "%%w%d" % q, A[2 * q], A[2 * q + 1])
    k.o("and.b32 %x0, %x0, 2147483647;", "the next occurrence")
    k.o("setp.eq.u32 %pg, %x0, 2147483647;")
    k.o("@%pg bra VSTORE;")
    k.c("the rounded sums are the next step's inputs")
    for q in range(4):
        t.unpack(k, "%%w%d" % q, A[2 * q], A[2 * q + 1])
    k.o("mov.u32 %j, %x0;")
    k.o("mul.wide.u32 %o, %j, 4;")
    k.o("add.u64 %o, %link, %o;")
    k.o("ld.global.u32 %x0, [%o];")
    k.o("bra VCHAIN;")
    k.label("VSTORE")
    k.o("add.u64 %a, %trow, %dr;")
    k.o("st.global.v4.b32 [%a], {%w0, %w1, %w2, %w3};")
    k.o("add.u32 %c, %c, %cstep;")
    k.o("bra VEC;")
    k.label("ONE")
    until(k, "%c", "%dim", "NEXT")
    k.o("mul.wide.u32 %dr, %c, 2;")
    k.o("add.u64 %a, %trow, %dr;")
    t.load1(k, "%sa", "%a")
    k.o("mov.u32 %j, %i;")
    k.o("mov.u32 %x0, %lk;")
    k.label("OCHAIN")
    k.o("mul.wide.u32 %o, %j, %dim;")
    k.o("shl.b64 %o, %o, 1;")
    k.o("add.u64 %o, %o, %dr;")
    k.o("add.u64 %o, %dout, %o;")
    t.load1(k, "%sd", "%o")
    k.o("add.rn.f32 %sa, %sa, %sd;")
    t.round1(k, "%h", "%sa")
    t.widen(k, "%sa", "%h")
    k.o("and.b32 %x0, %x0, 2147483647;")
    k.o("setp.eq.u32 %pg, %x0, 2147483647;")
    k.o("@%pg bra OSTORE;")
    k.o("mov.u32 %j, %x0;")
    k.o("mul.wide.u32 %o, %j, 4;")
    k.o("add.u64 %o, %link, %o;")
    k.o("ld.global.u32 %x0, [%o];")
    k.o("bra OCHAIN;")
    k.label("OSTORE")
    k.o("add.u64 %a, %trow, %dr;")
    k.o("st.global.b16 [%a], %h;")
    k.o("add.u32 %c, %c, %cstep;")
    k.o("bra ONE;")
    k.label("NEXT")
    k.r("b32", "ny")
    k.o("mov.u32 %ny, %nctaid.y;")
    k.o("add.u32 %i, %i, %ny;")
    k.o("bra ROW;")
    finish(k)
    return k


# ---------------------------------------------------------- optim16: SGD --

def k_sgd(t):
    k = K("eo_sgd16_" + t.name, [
        ("u32", "n", "parameter count"), ("u32", "nvec", "groups of 4 (n/4 when aligned, else 0)"),
        ("u64", "w", "float *w (f32 master weights), updated"),
        ("u64", "g", "const gradient: float or %s (g16)" % t.name), ("u32", "g16", "nonzero: g is %s" % t.name),
        ("f32", "gscale", "g' = gscale g (1 / loss scale)"),
        ("u64", "v", "float *v (momentum buffer) or 0"),
        ("f32", "lr", "learning rate"), ("f32", "mom", "momentum"),
        ("f32", "damp", "dampening (0 on a buffer's first step)"), ("f32", "wd", "weight decay"),
        ("u32", "nest", "nonzero: Nesterov momentum"),
        ("u64", "w16", "%s *w16: the updated weights rounded, or 0" % t.name)],
        "eo_sgd16_%s(n, nvec, w, g, g16, gscale, v, lr, mom, damp, wd, nest, w16): SGD\n"
        "on f32 master weights (eo_k_sgd16 in ops/kernels.h), the gradient stored as\n"
        "f32 or %s and unscaled first (g' = gscale g), then exactly the CPU kernel's\n"
        "arithmetic (ops/cpu/optim.c, torch.optim.SGD's order, every step rounded):\n"
        "  d = g' + wd w;  if mom != 0: v = mom v + (1 - damp) d,\n"
        "                  d = nest ? d + mom v : v;   w = w - lr d\n"
        "and, in the same pass, w16 = w rounded to %s (the copy the 16-bit forward\n"
        "reads). v is neither read nor written without momentum (it may be 0).\n"
        "Groups of 4 as eo_adamw16_%s: 16-byte accesses of w and v (and of g when\n"
        "f32), 8-byte ones of a 16-bit g and of w16; nvec = n/4 when all of them\n"
        "are aligned for that, else 0; the rest one per thread." % (t.name, t.name, t.name, t.name))
    k.r("f32", "keep x gr ve d tt").r("pred", "pg pg16 pw16 pmom pnest").r("b32", "h01 h23")
    k.o("setp.ne.u32 %pg16, %g16, 0;")
    k.o("setp.ne.u64 %pw16, %w16, 0;")
    k.o("setp.ne.f32 %pmom, %mom, 0f00000000;")
    k.o("setp.ne.u32 %pnest, %nest, 0;")
    k.o("sub.rn.f32 %keep, 0f3F800000, %damp;", "1 - dampening")
    X = ["%%x%d" % j for j in range(4)]
    G = ["%%g%d" % j for j in range(4)]
    Vv = ["%%v%d" % j for j in range(4)]
    k.r("f32", *[r[1:] for r in X + G + Vv])
    for r in Vv + ["%ve"]:
        k.o("mov.f32 %s, 0f00000000;" % r, "(v is not read without momentum)" if r == Vv[0] else None)

    def update(x, g, v):
        k.o("mul.rn.f32 %s, %s, %%gscale;" % (g, g), "unscale")
        k.o("mul.rn.f32 %%tt, %%wd, %s;" % x)
        k.o("add.rn.f32 %%d, %s, %%tt;" % g, "d = g + wd w")
        k.o("@%%pmom mul.rn.f32 %s, %%mom, %s;" % (v, v))
        k.o("@%pmom mul.rn.f32 %tt, %keep, %d;")
        k.o("@%%pmom add.rn.f32 %s, %s, %%tt;" % (v, v), "v = mom v + (1 - damp) d")
        k.o("@%%pmom mul.rn.f32 %%tt, %%mom, %s;" % v)
        k.o("@%pmom add.rn.f32 %tt, %d, %tt;", "d + mom v")
        k.o("@%%pmom selp.f32 %%d, %%tt, %s, %%pnest;" % v, "nesterov ? that : v")
        k.o("mul.rn.f32 %tt, %lr, %d;")
        k.o("sub.rn.f32 %s, %s, %%tt;" % (x, x), "w = w - lr d")

    grid_stride(k)
    k.label("VEC")
    until(k, "%i", "%nvec", "TAIL")
    addr(k, "aw", "w", "i", 16)
    addr(k, "av", "v", "i", 16)
    k.o("ld.global.v4.f32 {%x0, %x1, %x2, %x3}, [%aw];")
    k.o("@%pmom ld.global.v4.f32 {%v0, %v1, %v2, %v3}, [%av];")
    k.o("@%pg16 bra G16;")
    addr(k, "ag", "g", "i", 16)
    k.o("ld.global.v4.f32 {%g0, %g1, %g2, %g3}, [%ag];")
    k.o("bra GOT;")
    k.label("G16")
    addr(k, "ag", "g", "i", 8)
    k.o("ld.global.v2.b32 {%h01, %h23}, [%ag];", "4 halves, one 8-byte load")
    t.unpack(k, "%h01", "%g0", "%g1")
    t.unpack(k, "%h23", "%g2", "%g3")
    k.label("GOT")
    for j in range(4):
        update(X[j], G[j], Vv[j])
    k.o("st.global.v4.f32 [%aw], {%x0, %x1, %x2, %x3};")
    k.o("@%pmom st.global.v4.f32 [%av], {%v0, %v1, %v2, %v3};")
    k.o("@!%pw16 bra VNEXT;")
    t.pack(k, "%h01", "%x0", "%x1")
    t.pack(k, "%h23", "%x2", "%x3")
    addr(k, "ah", "w16", "i", 8)
    k.o("st.global.v2.b32 [%ah], {%h01, %h23};")
    k.label("VNEXT")
    advance(k, "VEC")
    k.label("TAIL")
    tail_start(k, 2)
    k.label("TAIL_LOOP")
    until(k, "%i", "%n", "DONE")
    addr(k, "aw", "w", "i", 4)
    addr(k, "av", "v", "i", 4)
    k.o("ld.global.f32 %x, [%aw];")
    k.o("@%pmom ld.global.f32 %ve, [%av];")
    k.o("@%pg16 bra T16;")
    addr(k, "ag", "g", "i", 4)
    k.o("ld.global.f32 %gr, [%ag];")
    k.o("bra TGOT;")
    k.label("T16")
    addr(k, "ag", "g", "i", 2)
    t.load1(k, "%gr", "%ag")
    k.label("TGOT")
    update("%x", "%gr", "%ve")
    k.o("st.global.f32 [%aw], %x;")
    k.o("@%pmom st.global.f32 [%av], %ve;")
    k.o("@!%pw16 bra TNEXT;")
    addr(k, "ah", "w16", "i", 2)
    t.store1(k, "%ah", "%x")
    k.label("TNEXT")
    advance(k, "TAIL_LOOP")
    finish(k)
    return k


MODULES = {"elementwise16": module_elementwise16, "rows16": module_rows16,
           "embedding16": module_embedding16, "optim16": module_optim16}


def splice_layernorm(text):
    """ptx/layernorm.ptx's text with its generated region replaced (appended
    the first time); the rest of that file is hand-written."""
    gen = region_layernorm()
    if LN_BEGIN in text:
        a = text.index(LN_BEGIN)
        b = text.index(LN_END) + len(LN_END) + 1
        return text[:a] + gen + text[b:]
    return text.rstrip("\n") + "\n\n" + gen


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else ""
    if which == "all":
        for name, fn in MODULES.items():
            with open("ptx/%s.ptx" % name, "w") as f:
                f.write(fn())
        with open("ptx/layernorm.ptx") as f:
            text = splice_layernorm(f.read())
        with open("ptx/layernorm.ptx", "w") as f:
            f.write(text)
        return
    if which == "layernorm":
        # ptx/layernorm.ptx on stdin, the file with its generated region on stdout
        sys.stdout.write(splice_layernorm(sys.stdin.read()))
        return
    if which not in MODULES:
        sys.exit("usage: gen-ptx16.py {%s|layernorm|all}" % "|".join(MODULES))
    sys.stdout.write(MODULES[which]())


if __name__ == "__main__":
    main()
