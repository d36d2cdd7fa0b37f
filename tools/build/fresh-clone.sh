#!/bin/sh
# tools/build/fresh-clone.sh [STEP...] — the README's commands on a fresh
# clone of the committed HEAD, as a new user runs them (CI: .ci/run).
#
# A full build in the working tree hides a rule that only works once
# something else has been built (`make install` once failed on a fresh
# clone because the PIC ptx.o had lost its dependency on the embedded
# PTX). So this clones HEAD into a temporary folder and runs there, as
# README.md writes them:
#   install  make install PREFIX=<tmp>, an installed program, the README's
#            pkg-config compile line on tools/examples/train_xor.c, run
#            against the installed shared library; make uninstall
#   tree     make lib headers, the README's build-tree compile line
#   size     make size, compared with README.md's table (tools/build/size-check.sh)
#   m4       make cortex-m4 (when arm-none-eabi-gcc and qemu-system-arm
#            are installed; it says it skipped otherwise)
# Default: all four. Uncommitted changes are not seen: commit first.
# Also checks the Makefile for rules that name a variable defined later
# (tools/build/make-order.awk). JOBS (default 2) is passed to make -j.
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
steps=${*:-install tree size m4}
jobs=${JOBS:-2}
awk -f "$here/tools/build/make-order.awk" "$here/Makefile" "$here/Makefile"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/eo-fresh.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
head=$(git -C "$here" rev-parse HEAD) ||
    { echo "fresh-clone: $here is not a git checkout: nothing to clone" >&2; exit 1; }
git clone -q --no-checkout "$here" "$tmp/everyo"
git -C "$tmp/everyo" checkout -q "$head"
cd "$tmp/everyo"
echo "fresh-clone: $(git log -1 --format='%h %s' | cut -c1-72)"
t0=$(date +%s)
step_time() { echo "fresh-clone: $1 OK ($(( $(date +%s) - t0 )) s so far)"; }

for step in $steps; do
    case $step in
    install)
        prefix=$tmp/prefix
        make -j"$jobs" --no-print-directory -s install PREFIX="$prefix" >/dev/null
        "$prefix/bin/eo-train" --version
        "$prefix/bin/eo-safetensors" --help >/dev/null
        # README: cc app.c $(pkg-config --cflags --libs everyo)
        PKG_CONFIG_PATH=$prefix/lib/pkgconfig
        export PKG_CONFIG_PATH
        cc tools/examples/train_xor.c $(pkg-config --cflags --libs everyo) -o "$tmp/app"
        LD_LIBRARY_PATH=$prefix/lib "$tmp/app"
        make --no-print-directory -s uninstall PREFIX="$prefix" >/dev/null
        left=$(find "$prefix" -type f)
        [ -z "$left" ] || { echo "fresh-clone: make uninstall left: $left" >&2; exit 1; }
        step_time install ;;
    tree)
        # README: make lib headers; cc -std=c11 -Ibuild/include app.c build/libeveryo.a -lm -ldl
        make -j"$jobs" --no-print-directory -s lib headers >/dev/null
        cc -std=c11 -Ibuild/include tools/examples/train_xor.c build/libeveryo.a -lm -ldl -o "$tmp/app-tree"
        "$tmp/app-tree"
        step_time "build-tree compile" ;;
    size)
        make -j"$jobs" --no-print-directory size | tee "$tmp/size.txt"
        sh tools/build/size-check.sh README.md "$tmp/size.txt"
        step_time size ;;
    m4)
        if command -v arm-none-eabi-gcc >/dev/null 2>&1 && command -v qemu-system-arm >/dev/null 2>&1; then
            make -j"$jobs" --no-print-directory cortex-m4
            step_time cortex-m4
        else
            echo "fresh-clone: make cortex-m4 skipped: arm-none-eabi-gcc or qemu-system-arm not installed"
        fi ;;
    *) echo "fresh-clone: unknown step '$step' (install tree size m4)" >&2; exit 2 ;;
    esac
done
echo "fresh-clone: OK ($steps) in $(( $(date +%s) - t0 )) s"
