#!/bin/sh
# tools/build/qemu-cpu-check.sh MAKE BUILD DATA — the installed programs on
# CPUs older than this one, under qemu-user's CPU models.
#
# The library is built for x86-64's baseline and picks its AVX2 or
# AVX-512 kernels at run time (Makefile, "CPU kernel variants"). An AVX
# instruction that leaked into shared code would only show on a CPU
# without it, as SIGILL, so this installs the build into a scratch DESTDIR
# and trains a few steps with the installed eo-train on emulated CPUs:
#   Nehalem  no AVX at all: must run, on the base kernels;
#   Haswell  AVX2 + FMA + F16C, no AVX-512: must run, on the avx2 kernels.
# (qemu 7.2 emulates no AVX-512, so the avx512 variant is run by make
# test on a machine that has it.) Needs qemu-x86_64 (Debian: qemu-user)
# and the Fashion-MNIST files in DATA.
set -e
make=$1 build=$2 data=$3
case $(uname -m) in x86_64) ;; *) echo "qemu-cpu-check: skipped (x86-64 only)"; exit 0 ;; esac
command -v qemu-x86_64 >/dev/null || { echo "qemu-cpu-check: qemu-x86_64 not found (apt-get install qemu-user)" >&2; exit 1; }
dest=$(mktemp -d "${TMPDIR:-/tmp}/eo-qemu.XXXXXX")
trap 'rm -rf "$dest"' EXIT
$make --no-print-directory -s install DESTDIR="$dest" PREFIX=/opt/everyo >/dev/null
train=$dest/opt/everyo/bin/eo-train
for pair in Nehalem:base Haswell:avx2; do
    cpu=${pair%%:*} want=${pair#*:}
    out=$dest/$cpu.txt
    if ! qemu-x86_64 -cpu "$cpu" "$train" --data "$data" --subset 256 --test-subset 128 --batch 64 \
            --epochs 1 --threads 2 --quiet --plot "$dest/$cpu.svg" > "$out" 2>&1; then
        cat "$out" >&2
        echo "qemu-cpu-check: FAILED: the installed eo-train on qemu -cpu $cpu" >&2
        exit 1
    fi
    got=$(sed -n 's/^CPU kernels: \([a-z0-9]*\).*/\1/p' "$out")
    [ "$got" = "$want" ] || { cat "$out" >&2; echo "qemu-cpu-check: FAILED: -cpu $cpu chose '$got' kernels, expected $want" >&2; exit 1; }
    echo "qemu-cpu-check: -cpu $cpu: $(grep '^CPU kernels' "$out"); $(grep '^done' "$out")"
done
echo "qemu-cpu-check: OK (the installed eo-train ran on CPUs without AVX and without AVX-512)"
