#!/bin/sh
# tools/build/cross.sh ARCH MAKE [CUDA] — build EveryO and its Check suite
# with Debian's cross compiler for ARCH and run the suite under qemu-user.
#
#   aarch64   64-bit little-endian (the reference: same sizes as x86-64)
#   armhf     32-bit size_t and pointers (ARMv7, hard float)
#   s390x     64-bit big-endian
#
# What it does, each step skipped when its result is already there:
#  1. the cross compiler (gcc-TRIPLET) and qemu-user, through need-packages.sh
#     (as root it installs them; otherwise it prints the apt-get line);
#  2. Check and zlib for the target: no multiarch packages (adding a foreign
#     architecture to apt is not wanted on a build machine), so their Debian
#     source packages are fetched with a private apt source list (the
#     system's own configuration is left alone; the mirror is the one the
#     system already uses) into build/cross-src/, and built static into
#     build/cross-ARCH/sysroot/;
#  3. the library, the tools and eo-tests with the cross compiler, NATIVE=0
#     (portable kernels), in build/cross-ARCH/;
#  4. eo-tests under qemu-ARCH, nice'd (emulation is CPU-heavy). The tests
#     that run the programs (suite cli) start them through qemu too:
#     EO_TEST_RUNNER names the emulator, since a container has no
#     binfmt_misc to do it behind the shell's back.
# CUDA (1 by default) includes the CUDA backend, whose suites run on the PTX
# interpreter: it is the tests' GPU, so it must be 32-bit and big-endian
# clean too. CK_RUN_SUITE etc. pass through to Check.
set -eu
arch=${1:?usage: cross.sh aarch64|armhf|s390x MAKE [CUDA]}
make_cmd=${2:-make}
cuda=${3:-1}
tflags=
case $arch in
aarch64) triplet=aarch64-linux-gnu   qemu=qemu-aarch64 ;;
armhf)   triplet=arm-linux-gnueabihf qemu=qemu-arm ;;
s390x)   triplet=s390x-linux-gnu     qemu=qemu-s390x
         # GCC 12 for s390x evaluates float arithmetic in double under
         # -std=c11 (FLT_EVAL_METHOD 1): slower, and results that differ
         # from every other target's (and from a float stored in memory).
         # fast: each float operation rounds to float, as elsewhere.
         tflags=-fexcess-precision=fast ;;
*) echo "cross.sh: ARCH must be aarch64, armhf or s390x (cortex-m4: make cortex-m4)" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
out=build/cross-$arch
# Objects of a CUDA=0 build go apart (as the native build/…-cpu does):
# sharing one folder would link objects compiled for the other setting.
bld=$out
[ "$cuda" = 0 ] && bld=$out-cpu
sysroot=$root/$out/sysroot
src=$root/build/cross-src

sh tools/build/need-packages.sh \
    "command -v $triplet-gcc && command -v $qemu && command -v dpkg-source && command -v pkg-config && command -v xz && command -v bzip2" \
    gcc-$triplet qemu-user dpkg-dev pkg-config xz-utils bzip2

# ---- 2. Check and zlib for the target --------------------------------------
fetch_sources() {
    # deb-src of the system's own Debian mirror and release.
    [ -f "$src/check.dsc" ] && [ -f "$src/zlib.dsc" ] && return 0
    mkdir -p "$src/lists/partial"
    uri=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null |
        grep -v security | head -n 1)
    [ -n "$uri" ] || uri=$(sed -n 's/^deb[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]*\)\{0,1\}\([^[:space:]]*\).*/\2/p' \
        /etc/apt/sources.list 2>/dev/null | grep -v security | head -n 1)
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
    [ -n "$uri" ] || { echo "cross.sh: no Debian mirror found in /etc/apt to fetch Check and zlib from" >&2; exit 1; }
    echo "deb-src $uri $codename main" > "$src/sources.list"
    set -- -o Dir::Etc::SourceList="$src/sources.list" -o Dir::Etc::SourceParts=/nonexistent \
        -o Dir::State::Lists="$src/lists" -o APT::Sandbox::User=root
    echo "cross.sh: fetching the source packages of Check and zlib ($uri $codename)"
    apt-get "$@" -qq update
    (cd "$src" && apt-get "$@" -qq source --download-only check zlib)
    ln -sf "$(cd "$src" && ls check_*.dsc | head -n 1)" "$src/check.dsc"
    ln -sf "$(cd "$src" && ls zlib_*.dsc | head -n 1)" "$src/zlib.dsc"
}

unpack() { # unpack NAME -> prints the unpacked folder under $out/deps
    rm -rf "$out/deps/$1"
    mkdir -p "$out/deps"
    dpkg-source --no-check -x "$src/$1.dsc" "$out/deps/$1" >/dev/null
    echo "$out/deps/$1"
}

if [ ! -f "$sysroot/lib/libcheck.a" ] || [ ! -f "$sysroot/lib/libz.a" ]; then
    fetch_sources
    mkdir -p "$sysroot"
    d=$(unpack zlib)
    echo "cross.sh: building zlib for $triplet"
    (cd "$d" && CHOST=$triplet CC=$triplet-gcc CFLAGS=-O2 ./configure --static --prefix="$sysroot" >/dev/null &&
        nice make -s -j2 libz.a >/dev/null && make -s install >/dev/null)
    d=$(unpack check)
    echo "cross.sh: building Check for $triplet"
    (cd "$d" && ./configure --host="$triplet" --prefix="$sysroot" --enable-static --disable-shared \
        --enable-subunit=no --disable-build-docs >/dev/null &&
        nice make -s -j2 -C lib >/dev/null && nice make -s -j2 -C src >/dev/null &&
        make -s -C lib install >/dev/null && make -s -C src install >/dev/null &&
        mkdir -p "$sysroot/lib/pkgconfig" && cp check.pc "$sysroot/lib/pkgconfig/" &&
        cp check_stdint.h "$sysroot/include/")
fi

# ---- 3. build -----------------------------------------------------------
# pkg-config answers from the target's sysroot only; the Makefile takes
# Check's and zlib's flags from it.
export PKG_CONFIG_LIBDIR="$sysroot/lib/pkgconfig" PKG_CONFIG_PATH=
export C_INCLUDE_PATH="$sysroot/include"
echo "cross.sh: building EveryO for $triplet (CUDA=$cuda) in $bld"
nice $make_cmd --no-print-directory -j2 CC=$triplet-gcc NATIVE=0 CUDA="$cuda" BUILD="$bld" TARGET_CFLAGS="$tflags" \
    CHECK_LIBS="-L$sysroot/lib -lcheck -lm -lrt -lpthread" \
    "$bld/eo-tests" tools

# ---- 4. run under qemu -------------------------------------------------------
export QEMU_LD_PREFIX=/usr/$triplet
export EO_TEST_RUNNER=$qemu
# Emulation is several times slower than the hardware the timeouts were
# set for (the training test alone takes minutes under qemu-arm, and over
# 15 under qemu-s390x on a busy 2-core machine).
export CK_TIMEOUT_MULTIPLIER=${CK_TIMEOUT_MULTIPLIER:-40}
echo "cross.sh: running $bld/eo-tests under $qemu"
start=$(date +%s)
{ nice $qemu "$bld/eo-tests"; echo $? > "$bld/eo-tests.rc"; } 2>&1 | tee "$bld/eo-tests.log"
rc=$(cat "$bld/eo-tests.rc")
summary=$(grep -E '^[0-9]+%: Checks: ' "$bld/eo-tests.log" | tail -n 1)
echo "cross.sh: $arch ($triplet, CUDA=$cuda): ${summary:-no summary line} in $(( $(date +%s) - start )) s under $qemu"
exit "$rc"
