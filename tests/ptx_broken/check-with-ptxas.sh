#!/bin/sh
# tests/ptx_broken/check-with-ptxas.sh [PTXAS] — hold the interpreter's
# load-time refusals against ptxas itself.
#
# Each broken kernel marks its bug with "// EXPECT <kind>". The kinds the
# interpreter finds while running (faults) and "unsupported" (valid PTX it
# does not model) must assemble with ptxas; every other kind is a rule of
# PTX that tests/test_ptxsim.c expects the interpreter to refuse at load,
# and ptxas must refuse it too. The correct kernels of tests/ptx_good/
# must assemble. One exception is listed: shared_size_wraps.ptx, whose
# array size overflows 64 bits, which ptxas 13.0 wraps and accepts.
#
# Then every line of ptxas-forms.txt (one instruction each, over all the
# instruction types, register types and modifiers the rules look at) is
# wrapped in a kernel and given to both ptxas and eo-ptxsim: they must
# agree, except where the interpreter says "unsupported" (valid PTX it
# does not model, such as ld.v2.u8) or the line is marked "// stricter:"
# with the reason. Needs build/eo-ptxsim (make).
#
# Not part of `make test` (it needs the CUDA toolkit); run it after
# changing tools/ptxsim/rules.c or adding a kernel here.
set -u
cd "$(dirname "$0")/../.."
PTXAS=${1:-$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)}
[ -x "$PTXAS" ] || { echo "check-with-ptxas: no ptxas, skipped"; exit 0; }
runtime="global-oob shared-oob shared-race divergent-barrier shfl-diverged uninit-register misaligned param-size unsupported"
bad=0
tmp=$(mktemp -d)
for f in tests/ptx_good/*.ptx tests/ptx_broken/*.ptx; do
    kind=$(sed -n 's|.*// EXPECT \([a-z-]*\).*|\1|p' "$f" | head -n 1)
    want=assembles
    case " $runtime " in *" $kind "*) ;; *) [ -n "$kind" ] && want=refused ;; esac
    [ "$(basename "$f")" = shared_size_wraps.ptx ] && want=assembles
    if "$PTXAS" -arch=sm_80 "$f" -o "$tmp/out.cubin" >"$tmp/log" 2>&1; then got=assembles; else got=refused; fi
    if [ "$got" = "$want" ]; then mark=ok; else mark=MISMATCH; bad=1; fi
    printf '%-8s %-48s %-18s ptxas %s\n' "$mark" "$f" "${kind:-correct}" "$got"
    [ "$mark" = ok ] || sed 's/^/         /' "$tmp/log"
done

SIM=./build/eo-ptxsim
if [ -x "$SIM" ]; then
    agree=0 skipped=0 stricter=0
    while IFS= read -r insn; do
        case "$insn" in '#'*|'') continue ;; esac
        cat >"$tmp/k.ptx" <<PTX
.version 7.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
    .reg .pred %p<3>;
    .reg .b16 %h<5>;
    .reg .b32 %r<5>;
    .reg .u32 %u<5>;
    .reg .s32 %s<5>;
    .reg .f32 %f<5>;
    .reg .b64 %rd<5>;
    .reg .u64 %ud<5>;
    .reg .s64 %sd<5>;
    .reg .f64 %fd<5>;
    .reg .u8 %c<3>;
    ld.param.u64 %rd1, [p];
    $insn
    ret;
}
PTX
        if "$PTXAS" -arch=sm_80 "$tmp/k.ptx" -o "$tmp/out.cubin" >/dev/null 2>&1; then pa=loads; else pa=refused; fi
        "$SIM" "$tmp/k.ptx" k --grid 1 --block 1 --arg u64:0 >"$tmp/sim" 2>&1
        if [ $? -eq 2 ]; then px=refused; else px=loads; fi
        if [ "$pa" = "$px" ]; then
            agree=$((agree + 1))
        elif [ "$px" = refused ] && grep -q unsupported "$tmp/sim"; then
            skipped=$((skipped + 1))
        elif [ "$px" = refused ] && case "$insn" in *'// stricter:'*) true ;; *) false ;; esac; then
            stricter=$((stricter + 1))
        else
            bad=1
            printf 'MISMATCH %-50s ptxas %s, interpreter %s: %s\n' "$insn" "$pa" "$px" "$(head -n 1 "$tmp/sim")"
        fi
    done < tests/ptx_broken/ptxas-forms.txt
    echo "ptxas-forms.txt: $agree forms agree, $skipped valid but not modelled, $stricter refused on purpose (marked '// stricter:')"
else
    echo "check-with-ptxas: $SIM not built, ptxas-forms.txt skipped"
fi
rm -rf "$tmp"
exit $bad
