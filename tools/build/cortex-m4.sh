#!/bin/sh
# tools/build/cortex-m4.sh MAKE HOSTBUILD FMNIST — the CPU library on a
# Cortex-M4 (hard float, single-precision FPU), and the inference example
# run on a simulated MPS2 AN386 board in 256 KiB of RAM.
#
#  1. installs arm-none-eabi-gcc, newlib and qemu-system-arm if missing;
#  2. builds the freestanding library (CUDA=0, portable kernels) for the
#     M4 twice: with -ffunction-sections -fdata-sections (each kernel its
#     own section, so the linker's --gc-sections drops those a program
#     never calls) and without, and with -Wdouble-promotion (an accidental
#     float->double is software emulation on this FPU; -Werror makes it fail);
#  3. links tools/embedded/infer_tiny.c with the weights make examples
#     trains (HOSTBUILD/examples/mlp_image.h, eo-safetensors c-image) and 100 test images
#     compiled in, startup and linker script for the board
#     (tools/embedded/), prints arm-none-eabi-size for each and the
#     library's part of the program, and fails when README.md's table
#     of them has drifted (tools/build/size-check.sh);
#  4. runs it under qemu-system-arm -M mps2-an386 (output on UART0, exit
#     through semihosting), runs the same program built for the host, and
#     fails unless the predictions agree line for line.
set -eu
make_cmd=${1:-make}
hostbuild=${2:-build}
fmnist=${3:-/usr/share/datasets/fashion-mnist}
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
out=build/cortex-m4
cpu="-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16"
warn="-Wall -Wextra -Wpedantic -Werror -Wdouble-promotion"

sh tools/build/need-packages.sh \
    "command -v arm-none-eabi-gcc && test -f \"\$(arm-none-eabi-gcc $cpu -print-file-name=libc_nano.a)\" && command -v qemu-system-arm" \
    gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm

# The host side: the trained weights as a C header, and the host library.
$make_cmd --no-print-directory "$hostbuild/examples/mlp_image.h" "$hostbuild/libeveryo.a" >/dev/null

# ---- 2. the library for the M4 --------------------------------------------------
for v in gc nogc; do
    sections=; [ $v = gc ] && sections="-ffunction-sections -fdata-sections"
    nice $make_cmd --no-print-directory -s CC=arm-none-eabi-gcc CUDA=0 NATIVE=0 BUILD=$out/$v \
        OPT="-O2 -g" TARGET_CFLAGS="$cpu $sections -Wdouble-promotion" "$out/$v/libeveryo-fs.a"
done

# ---- 3. the program -------------------------------------------------------------
mkdir -p "$out/gen"
[ -f "$out/gen/tiny_images.h" ] || sh tools/embedded/idx-to-c.sh "$fmnist" 100 > "$out/gen/tiny_images.h"
inc="-I. -I$out/gen -I$hostbuild/examples"
srcs="tools/embedded/infer_tiny.c tools/embedded/board_mps2.c"
for v in gc nogc; do
    sections=; gc=; [ $v = gc ] && sections="-ffunction-sections -fdata-sections" && gc=-Wl,--gc-sections
    arm-none-eabi-gcc -std=c11 -O2 -g $cpu $sections $warn -ffreestanding $inc $srcs \
        -T tools/embedded/mps2-an386.ld -nostartfiles --specs=nano.specs --specs=nosys.specs $gc \
        -Wl,-Map,$out/infer_tiny-$v.map "$out/$v/libeveryo-fs.a" -lm -o "$out/infer_tiny-$v.elf"
done
# The sizes, in `make size`'s form, compared with README.md's table
# (tools/build/size-check.sh): the library alone, the whole program with
# and without --gc-sections, and the part of the program that is the
# library (tools/build/map-size.awk over the linker's map).
{
    printf '%-52s %10s %8s %8s\n' build text data bss
    arm-none-eabi-size -t "$out/gc/libeveryo-fs.a" | awk 'END { printf "%-52s %10s %8s %8s\n", "libeveryo-fs.a (CUDA=0, -O2, per-function sections)", $1, $2, $3 }'
    arm-none-eabi-size "$out/infer_tiny-gc.elf" | awk 'NR == 2 { printf "%-52s %10s %8s %8s\n", "infer_tiny with --gc-sections", $1, $2, $3 }'
    arm-none-eabi-size "$out/infer_tiny-nogc.elf" | awk 'NR == 2 { printf "%-52s %10s %8s %8s\n", "infer_tiny without --gc-sections", $1, $2, $3 }'
    for v in gc nogc; do
        name="infer_tiny's library part, with --gc-sections"; [ $v = nogc ] && name="infer_tiny's library part, without"
        awk -v lib=libeveryo-fs.a -f tools/build/map-size.awk "$out/infer_tiny-$v.map" |
            awk -v n="$name" '{ printf "%-52s %10s %8s %8s\n", n, $1, $2, $3 }'
    done
} > "$out/size.txt"
echo "cortex-m4: sizes (arm-none-eabi-size; the program's text includes the 0.8 MB checkpoint and the images):"
sed 's/^/  /' "$out/size.txt"
sh tools/build/size-check.sh README.md "$out/size.txt"
# RAM: .data + .bss + the stack, all inside the 256 KiB region (the linker
# fails if they are not).
ram=$(arm-none-eabi-size -A "$out/infer_tiny-gc.elf" | awk '$1 == ".data" || $1 == ".bss" || $1 == ".stack" { s += $2 } END { print s }')
echo "cortex-m4: RAM used: $ram of 262144 bytes (.data + .bss + 16 KiB stack); the weights and images stay in flash"

# ---- 4. run it, and the same program on the host ----------------------------------
echo "cortex-m4: running on qemu-system-arm -M mps2-an386"
timeout 300 qemu-system-arm -M mps2-an386 -nographic -monitor none -serial stdio -semihosting \
    -kernel "$out/infer_tiny-gc.elf" > "$out/m4.txt" || { cat "$out/m4.txt"; echo "cortex-m4: FAILED on the board" >&2; exit 1; }
${CC:-cc} -std=c11 -O2 $warn -DTINY_STEP_BYTES="(1 << 20)" $inc tools/embedded/infer_tiny.c tools/embedded/board_host.c \
    "$hostbuild/libeveryo.a" -lm -ldl -o "$out/infer_tiny-host"
"$out/infer_tiny-host" > "$out/host.txt"
head -n 10 "$out/m4.txt" | sed 's/^/  /'
echo "  ..."
tail -n 2 "$out/m4.txt" | sed 's/^/  /'
grep -v '^arena' "$out/m4.txt" > "$out/m4.pred"
grep -v '^arena' "$out/host.txt" > "$out/host.pred"
if cmp -s "$out/m4.pred" "$out/host.pred"; then
    echo "cortex-m4: OK, the board's $(grep -c '^image' "$out/m4.pred") predictions match the host's"
else
    diff "$out/host.pred" "$out/m4.pred" | head -n 20
    echo "cortex-m4: FAILED, the board's predictions differ from the host's" >&2
    exit 1
fi
