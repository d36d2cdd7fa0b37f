#!/bin/sh
# tools/bench/bench-train.sh EO_TRAIN [EPOCHS] — the main job, EveryO beside PyTorch.
#
# Trains the same MLP (init scheme, AdamW, cosine schedule, batch 128) with
# eo-train and with tools/reference/ref_train_mlp.py, at 1 and 2 threads, in the same
# run, and prints seconds per epoch, images/s, peak resident memory and
# test accuracy side by side with the time ratio (PyTorch / EveryO: above
# 1 means EveryO is faster). PyTorch's thread pool and OpenBLAS's fight on
# this 2-core machine, so at 2 threads both splits are tried and the faster
# PyTorch run is kept. Without python3-torch the PyTorch rows say skipped.
# Then the CNN, ViT and GPT steps (BENCH_STEPS steps each, 30 by default),
# EveryO beside PyTorch, through tools/bench/bench_transformer.py.
set -u
eo=$1
epochs=${2:-3}
data=${FMNIST:-/usr/share/datasets/fashion-mnist}
py=/usr/bin/python3
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

have_torch=1
"$py" -c 'import torch' 2>/dev/null || have_torch=0

field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" "$2" | tail -1; }

eo_run() { # threads -> s/epoch img/s rss acc
    "$eo" --data "$data" --epochs "$epochs" --threads "$1" --quiet --plot "$tmp/p.svg" >"$tmp/eo.$1" 2>&1 || { cat "$tmp/eo.$1"; exit 1; }
    d=$(grep '^done:' "$tmp/eo.$1")
    echo "$(echo "$d" | sed 's/.* \([0-9.]*\) s\/epoch.*/\1/') $(echo "$d" | sed 's/.* \([0-9]*\) images\/s.*/\1/')" \
         "$(echo "$d" | sed 's/.*peak resident \([0-9.]*\) MiB.*/\1/') $(echo "$d" | sed 's/.*test accuracy \([0-9.]*\)%.*/\1/')"
}

torch_run() { # torch-threads openblas-threads -> s/epoch img/s rss acc
    OPENBLAS_NUM_THREADS=$2 OMP_NUM_THREADS=$1 "$py" "$here/../reference/ref_train_mlp.py" --data "$data" --epochs "$epochs" --threads "$1" >"$tmp/pt" 2>&1 || { cat "$tmp/pt"; return 1; }
    echo "$(field seconds_per_epoch "$tmp/pt") $(field images_per_s "$tmp/pt") $(field peak_rss_mib "$tmp/pt") $(awk "BEGIN{print 100*$(field test_acc "$tmp/pt")}")"
}

printf '%-8s %-8s %10s %10s %12s %9s %9s\n' who threads "s/epoch" "images/s" "peak RSS MiB" "test acc" "ratio"
for t in 1 2; do
    set -- $(eo_run $t); eo_s=$1
    printf '%-8s %-8s %10s %10s %12s %8s%% %9s\n' EveryO "$t" "$1" "$2" "$3" "$4" ""
    if [ $have_torch = 0 ]; then
        printf '%-8s %-8s %s\n' PyTorch "$t" "skipped (python3-torch not installed)"; continue
    fi
    if [ $t = 1 ]; then r=$(torch_run 1 1); else
        a=$(torch_run 2 1); b=$(torch_run 1 2)
        r=$(printf '%s\n%s\n' "$a" "$b" | sort -n | head -1)
    fi
    set -- $r
    printf '%-8s %-8s %10s %10s %12s %8s%% %8sx\n' PyTorch "$t" "$1" "$2" "$3" "$4" "$(awk "BEGIN{printf \"%.2f\", $1/$eo_s}")"
done
echo "epochs: $epochs each; ratio = PyTorch s/epoch / EveryO s/epoch (> 1: EveryO faster)"

# The CNN, ViT and GPT: ms per training step over a short run, EveryO beside
# PyTorch at 1 and 2 threads (PyTorch at 2 threads in both splits), by
# tools/bench/bench_transformer.py. A model whose data is missing says skipped.
steps=${BENCH_STEPS:-30}
echo
if [ $have_torch = 0 ]; then
    echo "CNN, ViT, GPT: skipped (python3-torch not installed)"
else
    "$py" "$here/bench_transformer.py" --eo-train "$eo" --steps "$steps" --models cnn,vit,gpt
fi
