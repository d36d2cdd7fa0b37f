#!/bin/sh
# tools/bench/gpu-report.sh — everything EveryO can learn from one GPU in a
# few minutes, in one run (`make gpu-report`):
#   1. the performance model's estimates for this GPU (eo-bench --device sim),
#   2. every PTX kernel timed with CUDA events beside cuBLAS and the device's
#      copy bandwidth, with the estimate and measured/estimated printed next
#      to each measurement, so the model is checked every time,
#   3. the CUDA test suites through the real driver (make test-cuda),
#   4. a short training run of each model on the GPU,
# with CSV, SVG and logs under OUT (default build/gpu-report). Without a
# GPU it says so in one line and exits 0.
#
#   sh tools/bench/gpu-report.sh BUILD_DIR [OUT] [MAKE]
build=${1:-build}
out=${2:-$build/gpu-report}
make=${3:-make}

# A GPU needs the driver library and a device it can see.
if ! { ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 ' || [ -e /usr/lib/x86_64-linux-gnu/libcuda.so.1 ]; }; then
    echo "gpu-report: skipped: no GPU (libcuda.so.1 not found)"
    exit 0
fi
if command -v nvidia-smi >/dev/null 2>&1 && ! nvidia-smi -L >/dev/null 2>&1; then
    echo "gpu-report: skipped: no GPU (nvidia-smi sees no device)"
    exit 0
fi

mkdir -p "$out" || exit 1
$make --no-print-directory "$build/eo-bench" "$build/eo-train" "$build/eo-tests" > "$out/build.log" 2>&1 || {
    echo "gpu-report: build failed, see $out/build.log"; tail -20 "$out/build.log"; exit 1; }

# The device's name decides which row of the model to estimate for: from
# nvidia-smi, else from the first line of a quick benchmark run (which
# also tells when the driver sees no device).
name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
if [ -z "$name" ]; then
    first=$("$build/eo-bench" --device cuda --quick 2>&1 | head -1)
    name=$(echo "$first" | sed -n 's/^eo-bench --device cuda: \(.*\), compute capability.*/\1/p')
    if [ -z "$name" ]; then
        echo "gpu-report: skipped: ${first#eo-bench --device cuda: }"
        exit 0
    fi
fi
echo "gpu-report: $name -> $out"
fail=0
t0=$(date +%s)

# 1. Estimates (CPU only, about half a minute).
if "$build/eo-bench" --device sim --gpu "$name" --csv "$out/estimates.csv" > "$out/estimates.txt" 2>&1; then
    predicted="--predicted $out/estimates.csv"
else
    echo "gpu-report: no model row for '$name': measured figures only"
    predicted=""
fi

# 2. Kernels on the GPU, with the estimates beside them.
"$build/eo-bench" --device cuda $predicted --csv "$out/kernels.csv" > "$out/kernels.txt" 2>&1 || fail=1
cat "$out/kernels.txt"

# 3. The CUDA suites through the real driver.
if $make --no-print-directory test-cuda > "$out/test-cuda.log" 2>&1; then
    echo "test-cuda: passed"
else
    echo "test-cuda: FAILED (see $out/test-cuda.log)"; tail -15 "$out/test-cuda.log"; fail=1
fi

# 4. A short training run per model. A model the CUDA backend cannot run
#    yet is reported, not fatal.
echo "model,status,seconds,last_line" > "$out/train.csv"
for m in mlp cnn vit gpt; do
    case $m in
        gpt) args="--model gpt --steps 50 --eval-every 0 --val-windows 64" ;;
        *) args="--model $m --steps 100 --subset 12800 --test-subset 2000 --plot $out/train-$m.svg" ;;
    esac
    s=$(date +%s)
    if "$build/eo-train" $args --device cuda --quiet > "$out/train-$m.log" 2>&1; then st=ok; else st=failed; fi
    e=$(( $(date +%s) - s ))
    last=$(tail -1 "$out/train-$m.log" | tr ',' ';')
    echo "$m,$st,$e,$last" >> "$out/train.csv"
    echo "train $m on the GPU: $st in ${e}s: $last"
done

# Measured against estimated, as a bar chart (ratio 1 = the model was right).
awk -F, 'NR > 1 && $8 > 0 { n++; k[n] = $1 " " $2; r[n] = $9 }
    END {
        w = 720; h = 40 + 22 * n; max = 1
        for (i = 1; i <= n; i++) if (r[i] > max) max = r[i]
        printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n", w, h
        printf "<text x=\"10\" y=\"18\">measured / estimated time per kernel (1 = estimate exact; bars right of the line: slower than estimated)</text>\n"
        x0 = 260; s = (w - x0 - 60) / max
        printf "<line x1=\"%d\" y1=\"28\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", x0 + s, x0 + s, h - 4
        for (i = 1; i <= n; i++) {
            y = 30 + 22 * (i - 1)
            printf "<text x=\"10\" y=\"%d\">%s</text>\n", y + 14, k[i]
            printf "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"16\" fill=\"#4a7ab5\"/>\n", x0, y, r[i] * s
            printf "<text x=\"%.1f\" y=\"%d\">%.2fx</text>\n", x0 + r[i] * s + 4, y + 14, r[i]
        }
        print "</svg>"
    }' "$out/kernels.csv" > "$out/measured-vs-estimated.svg"

echo "gpu-report: done in $(( $(date +%s) - t0 ))s; files in $out:"
ls "$out" | sed 's/^/  /'
exit $fail
