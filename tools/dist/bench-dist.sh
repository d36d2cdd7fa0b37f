#!/bin/sh
# tools/dist/bench-dist.sh BUILD — data-parallel step time and all-reduce
# bandwidth on this machine (`make bench-dist`).
#
# Strong scaling: the same global batch, the same number of steps, as
# 1 process x 1 thread, 1 process x 2 threads and 2 processes x 1 thread
# (mpirun). speedup = t(1 x 1) / t(config); efficiency = speedup / workers.
# Each figure is the best of 3 runs (the development machine is shared:
# a descheduled rank stalls the other at the next collective). On such a
# machine the ranks run unbound (a rank pinned to a core another job is
# using cannot move to the free one) and yield the core while they wait
# (mpi_yield_when_idle) instead of spinning: together that halved the
# MLP's step time there. MPIRUN_ARGS overrides both.
# Then eo-bench-dist: the all-reduce against the ring model.
set -eu
B=${1:-build}
D=${FMNIST:-/usr/share/datasets/fashion-mnist}
MPIRUN="mpirun --oversubscribe ${MPIRUN_ARGS:---bind-to none --mca mpi_yield_when_idle 1}"
[ "$(id -u)" = 0 ] && MPIRUN="$MPIRUN --allow-run-as-root"
command -v mpirun >/dev/null || { echo "bench-dist: mpirun not found (apt-get install openmpi-bin)"; exit 1; }

ms() { sed -n 's/.* \([0-9.]*\) ms\/step.*/\1/p' | tail -1; }
ar() { sed -n 's/^all-reduce: \([0-9.]*\) ms per step (\([0-9]*\)%.*after \([0-9.]*\) ms waiting.*(\([0-9]*\)%.*/\1 ms (\2 %) + waiting \3 ms (\4 %)/p'; }

best() { sort -n | head -1; }

# The plot is not wanted; the programs refuse to write over a device such
# as /dev/null, so it goes to a scratch file.
plot=$(mktemp "${TMPDIR:-/tmp}/eo-bench-dist.XXXXXX.svg")
trap 'rm -f "$plot"' EXIT

row() { # model args...
    model=$1; shift
    common="--model $model --data $D --test-subset 500 --quiet --plot $plot $*"
    t11=$(for k in 1 2 3; do "$B/eo-train" $common --threads 1 | ms; done | best)
    t12=$(for k in 1 2 3; do "$B/eo-train" $common --threads 2 | ms; done | best)
    t21=; a21=
    for k in 1 2 3; do
        out=$($MPIRUN -np 2 "$B/eo-train" $common --threads 1)
        t=$(echo "$out" | ms)
        if [ -z "$t21" ] || awk -v a="$t" -v b="$t21" 'BEGIN { exit !(a < b) }'; then
            t21=$t; a21=$(echo "$out" | ar)
        fi
    done
    awk -v m="$model" -v a="$*" -v t11="$t11" -v t12="$t12" -v t21="$t21" -v ar="$a21" 'BEGIN {
        printf "| %s (%s) | %.1f | %.1f (%.2fx, eff %.0f %%) | %.1f (%.2fx, eff %.0f %%) | %s |\n",
            m, a, t11, t12, t11 / t12, 50 * t11 / t12, t21, t11 / t21, 50 * t11 / t21, ar }'
}

echo "step time, ms, best of 3 (the same global batch; speedup and efficiency against 1 process x 1 thread)"
echo "| model | 1 process x 1 thread | 1 process x 2 threads | 2 processes x 1 thread (MPI) | all-reduce per step, rank 0 |"
echo "|---|---|---|---|---|"
row mlp --batch 128 --steps 200
row cnn --batch 64 --steps 12
echo
$MPIRUN -np 2 "$B/eo-bench-dist"
