#!/bin/sh
# tools/build/isa-link.sh CC NAME OUT OBJECT... — one CPU kernel variant as
# one relocatable object whose global symbols carry the suffix _NAME.
#
# The objects are ops/cpu/*.c and core/backend_cpu.c compiled with the
# variant's target flags (Makefile, "CPU kernel variants"). Joined with
# `cc -r`, the calls between them are still by name; renaming every global
# symbol the joined object defines, and with it every reference to one,
# turns eo_k_matmul into eo_k_matmul_NAME and eo_backend_cpu into
# eo_backend_cpu_NAME, while references to what the variant does not
# define (memcpy, expf, the core's functions) stay as they are. So the
# variant calls only its own functions, links beside the baseline ones
# without a clash, and the kernel sources need no per-variant spelling.
set -e
cc=$1; name=$2; out=$3; shift 3
# shellcheck disable=SC2086
$cc -r -nostdlib -o "$out.joined.o" "$@"
nm --defined-only -g "$out.joined.o" | awk -v s="_$name" 'NF == 3 {print $3, $3 s}' > "$out.syms"
test -s "$out.syms" || { echo "isa-link.sh: $out defines no global symbol" >&2; exit 1; }
objcopy --redefine-syms="$out.syms" "$out.joined.o" "$out.tmp"
mv "$out.tmp" "$out"
rm -f "$out.joined.o"
