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
rm -rf "$tmp"
exit $bad
