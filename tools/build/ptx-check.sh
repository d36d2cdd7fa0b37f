#!/bin/sh
# tools/build/ptx-check.sh — assemble every hand-written PTX file with ptxas for
# each GPU generation EveryO supports, and fail on anything that would make
# a kernel wrong or slow in a way a reader cannot see in the PTX itself:
#   - any ptxas error or warning;
#   - spills (registers moved to local memory) or a stack frame: the
#     kernels are written to fit in registers, so either means a change
#     went wrong;
#   - a `.version` above 7.0 (what CUDA 11.0 drivers accept) unless the
#     file has a line containing "ptx-check: version" explaining why.
# Then it prints one row per kernel: registers per thread for each target
# and static shared memory.
#
#   sh tools/build/ptx-check.sh PTXAS "sm_80 sm_86 ..." ptx/*.ptx
# With an empty PTXAS it reports that it skipped and succeeds, so `make
# ptx-check` works on machines without the CUDA toolkit.
ptxas=$1
archs=$2
shift 2
if [ -z "$ptxas" ]; then
    echo "ptx-check: skipped (ptxas not found)"
    exit 0
fi
fail=0
rows=$(mktemp)
log=$(mktemp)
trap 'rm -f "$rows" "$log"' EXIT
for f in "$@"; do
    v=$(awk '$1 == ".version" { print $2; exit }' "$f")
    if [ -z "$v" ]; then
        echo "ptx-check: $f: no .version directive"
        fail=1
    elif ! awk -v v="$v" 'BEGIN { split(v, p, "."); exit !(p[1] < 7 || (p[1] == 7 && p[2] <= 0)) }'; then
        if ! grep -q 'ptx-check: version' "$f"; then
            echo "ptx-check: $f: .version $v is above 7.0 and no comment says why"
            fail=1
        fi
    fi
    for a in $archs; do
        if ! "$ptxas" -arch="$a" -v "$f" -o /dev/null > "$log" 2>&1; then
            echo "ptx-check: $f for $a: ptxas failed:"
            sed 's/^/  /' "$log"
            fail=1
            continue
        fi
        if grep -qi 'warning' "$log"; then
            echo "ptx-check: $f for $a: ptxas warnings:"
            grep -i 'warning' "$log" | sed 's/^/  /'
            fail=1
        fi
        # ptxas -v prints, per kernel: "Compiling entry function 'K' for
        # 'sm_XX'", then "N bytes stack frame, N bytes spill stores, N bytes
        # spill loads", then "Used N registers, ... N bytes smem ...".
        awk -v arch="$a" -v file="$f" '
            /Compiling entry function/ {
                k = $0; sub(/.*function \047/, "", k); sub(/\047.*/, "", k)
            }
            /bytes stack frame/ {
                if ($1 + 0 || $5 + 0 || $9 + 0)
                    printf "BAD %s %s %s: stack frame %s, spill stores %s, spill loads %s\n", file, k, arch, $1, $5, $9
            }
            /Used [0-9]+ registers/ {
                regs = 0; smem = 0
                for (i = 1; i <= NF; i++) {
                    if ($i == "Used") regs = $(i + 1)
                    if ($i ~ /^smem/) smem = $(i - 2)
                    if ($i ~ /^lmem/ && $(i - 2) + 0)
                        printf "BAD %s %s %s: %s bytes of local memory\n", file, k, arch, $(i - 2)
                }
                printf "ROW %s %s %s %s\n", k, arch, regs, smem
            }' "$log" >> "$rows"
    done
done
if grep -q '^BAD' "$rows"; then
    grep '^BAD' "$rows" | sed 's/^BAD /ptx-check: /'
    fail=1
fi
# One line per kernel: registers for each target, then shared memory.
awk -v archs="$archs" '
    BEGIN { na = split(archs, A, " ") }
    $1 == "ROW" {
        if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 }
        regs[$2, $3] = $4; smem[$2] = $5
    }
    END {
        printf "%-22s", "kernel"
        for (i = 1; i <= na; i++) printf " %7s", A[i]
        printf " %11s\n", "smem bytes"
        for (j = 1; j <= n; j++) {
            printf "%-22s", order[j]
            for (i = 1; i <= na; i++) printf " %7s", ((order[j], A[i]) in regs) ? regs[order[j], A[i]] : "-"
            printf " %11s\n", smem[order[j]]
        }
        printf "(registers per thread for each target; static shared memory per block)\n"
    }' "$rows"
if [ "$fail" -ne 0 ]; then
    echo "ptx-check: FAILED"
    exit 1
fi
echo "ptx-check: OK ($# files, targets: $archs)"
