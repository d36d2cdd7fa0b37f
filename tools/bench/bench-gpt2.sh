#!/bin/sh
# tools/bench/bench-gpt2.sh EO_TRAIN — GPT-2 124M training steps, EveryO beside
# llm.c's CPU trainer and PyTorch, same shapes, same run, 1 and 2 threads.
#
# Writes a random token shard in llm.c's format (tools/bench/llmc_files.py),
# then per thread count runs eo-train --model gpt2, llm.c's train_gpt2.c and
# tools/bench/bench_gpt2_torch.py for BENCH_STEPS steps at batch 4, context
# 64 (llm.c's CPU default; BENCH_T=1024 adds the long context, slow) and
# prints ms/step and peak resident memory (/usr/bin/time -v's high-water).
#
# llm.c: set LLMC_DIR to a checkout of https://github.com/karpathy/llm.c
# (git clone https://github.com/karpathy/llm.c). Its train_gpt2.c hard-codes
# B, T, 40 steps, validation and sampling and its file names, so a copy is
# patched in a scratch folder (B, T, steps from -D macros; validation and
# sampling off: only the timed training step remains) and built with the
# user's compiler and llm.c's own flags; a random-init checkpoint in llm.c's
# format and the token files are laid out there as it expects. Nothing of
# llm.c enters this repository. Without LLMC_DIR its rows say skipped.
set -u
eo=$1
steps=${BENCH_STEPS:-3}
Ts="64 ${BENCH_T:-}"
py=/usr/bin/python3
cc=${CC:-cc}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
have_torch=1
"$py" -c "import torch, numpy" 2>/dev/null && [ "${BENCH_TORCH:-1}" = 1 ] || have_torch=0
"$py" -c 'import numpy' 2>/dev/null || { echo "bench-gpt2: needs numpy (apt-get install python3-numpy)"; exit 1; }

shard=$tmp/dev/data/tinyshakespeare/tiny_shakespeare_train.bin
mkdir -p "$(dirname "$shard")"
"$py" "$here/llmc_files.py" tokens "$shard" 1048576 || exit 1
cp "$shard" "$tmp/dev/data/tinyshakespeare/tiny_shakespeare_val.bin"

llmc=0
if [ -n "${LLMC_DIR:-}" ] && [ -f "$LLMC_DIR/train_gpt2.c" ]; then
    cp -r "$LLMC_DIR/llmc" "$tmp/llmc"
    sed -e 's/int B = 4;/int B = LLMC_B;/' -e 's/int T = 64;/int T = LLMC_T;/' \
        -e 's/step <= 40;/step <= LLMC_STEPS;/' -e 's/if (step % 10 == 0) {/if (0) {/' \
        -e 's/if (step > 0 \&\& step % 20 == 0) {/if (0) {/' "$LLMC_DIR/train_gpt2.c" >"$tmp/bench.c"
    if [ "$(diff "$LLMC_DIR/train_gpt2.c" "$tmp/bench.c" | grep -c '^>')" != 5 ]; then
        echo "bench-gpt2: this train_gpt2.c no longer has the 5 lines the patch expects; llm.c skipped"
    else
        "$py" "$here/llmc_files.py" checkpoint "$tmp/gpt2_124M.bin" && llmc=1
    fi
fi

ms_rss() { # log -> "ms/step rss-MiB"
    echo "$1 $(sed -n 's/.*Maximum resident set size (kbytes): \([0-9]*\).*/\1/p' "$2" | awk '{printf "%.0f", $1/1024}')"
}

printf '%-8s %-5s %-8s %10s %10s %12s\n' who T threads ms/step tokens/s "peak RSS MiB"
for T in $Ts; do
    [ $llmc = 1 ] && { (cd "$tmp" && $cc -O3 -Ofast -march=native -fopenmp -DOMP -DLLMC_B=4 -DLLMC_T=$T \
        -DLLMC_STEPS=$steps -Wno-unused-result -o train_gpt2 bench.c -lm) || llmc=0; }
    for t in 1 2; do
        /usr/bin/time -v "$eo" --model gpt2 --tokens "$shard" --val-tokens "$shard" --context $T --batch 4 \
            --steps $steps --eval-every 0 --val-windows 4 --threads $t --quiet --plot "$tmp/p.svg" >"$tmp/eo" 2>&1 ||
            { cat "$tmp/eo"; exit 1; }
        set -- $(ms_rss "$(sed -n 's/^done:.* \([0-9.]*\) ms\/step.*/\1/p' "$tmp/eo")" "$tmp/eo")
        printf '%-8s %-5s %-8s %10s %10.0f %12s\n' EveryO $T $t "$1" "$(awk "BEGIN{print 4*$T*1000/$1}")" "$2"
        if [ $llmc = 1 ]; then
            # mean over the steps after the first (its first touches memory)
            (cd "$tmp" && OMP_NUM_THREADS=$t /usr/bin/time -v ./train_gpt2) >"$tmp/lc" 2>&1
            ms=$(sed -n 's/^step \([0-9]*\):.*took \([0-9.]*\) ms.*/\1 \2/p' "$tmp/lc" |
                 awk '$1>0{s+=$2;n++} END{if(n) printf "%.1f", s/n}')
            set -- $(ms_rss "$ms" "$tmp/lc")
            printf '%-8s %-5s %-8s %10s %10.0f %12s\n' llm.c $T $t "$1" "$(awk "BEGIN{print 4*$T*1000/$1}")" "$2"
        else
            printf '%-8s %-5s %-8s %s\n' llm.c $T $t "skipped: set LLMC_DIR to a checkout (git clone https://github.com/karpathy/llm.c)"
        fi
        if [ $have_torch = 1 ]; then
            OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t /usr/bin/time -v "$py" "$here/bench_gpt2_torch.py" train \
                --threads $t --context $T --steps $steps "$shard" >"$tmp/pt" 2>&1 || { cat "$tmp/pt"; continue; }
            set -- $(ms_rss "$(sed -n 's/^ms_per_step=\([0-9.]*\).*/\1/p' "$tmp/pt")" "$tmp/pt")
            printf '%-8s %-5s %-8s %10s %10.0f %12s  (%s)\n' PyTorch $T $t "$1" "$(awk "BEGIN{print 4*$T*1000/$1}")" "$2" \
                "$(head -1 "$tmp/pt")"
        else
            printf '%-8s %-5s %-8s %s\n' PyTorch $T $t "skipped (BENCH_TORCH=0, or no torch: apt-get install python3-torch)"
        fi
    done
done
echo "batch 4, $steps steps each; EveryO: mean over all steps; llm.c, PyTorch: mean over steps after the first"
