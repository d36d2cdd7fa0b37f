#!/bin/sh
# tests/install/run.sh MAKE CC CXX BUILD — install EveryO into a scratch
# DESTDIR and build a C and a C++ program against it with pkg-config alone,
# as a user of the installed package would; then uninstall and check that
# nothing is left. Run by `make test` (target test-install).
set -e
make=$1 cc=$2 cxx=${3:-c++} build=$4
here=$(dirname "$0")
dest=$(mktemp -d "${TMPDIR:-/tmp}/eo-install.XXXXXX")
trap 'rm -rf "$dest"' EXIT
prefix=/opt/everyo
$make --no-print-directory -s install DESTDIR="$dest" PREFIX=$prefix >/dev/null

export PKG_CONFIG_PATH="$dest$prefix/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$dest"
export PKG_CONFIG_LIBDIR="$PKG_CONFIG_PATH"   # only ours: no system .pc files
cflags=$(pkg-config --cflags everyo) libs=$(pkg-config --libs everyo)
static=$(pkg-config --static --libs everyo)
echo "test-install: pkg-config everyo $(pkg-config --modversion everyo): $cflags $libs (static: $static)"

# Each installed header compiles alone, in C and in C++, with that one -I.
for h in "$dest$prefix/include/everyo/"*.h; do
    name=everyo/$(basename "$h")
    printf '#include <%s>\n' "$name" | $cc -std=c11 -Wall -Wextra -Wpedantic -Werror $cflags -x c -fsyntax-only -
    printf '#include <%s>\n' "$name" | $cxx -std=c++11 -Wall -Wextra -Werror $cflags -x c++ -fsyntax-only -
done

# The shared library: found through the soname, run with the DESTDIR's lib.
$cc -std=c11 -Wall -Wextra -Werror $cflags "$here/consumer.c" $libs -o "$dest/consumer-c"
$cxx -std=c++11 -Wall -Wextra -Werror $cflags "$here/consumer.cpp" $libs -o "$dest/consumer-cxx"
LD_LIBRARY_PATH="$dest$prefix/lib" "$dest/consumer-c"
LD_LIBRARY_PATH="$dest$prefix/lib" "$dest/consumer-cxx"
# The static library with Libs.private.
$cc -std=c11 $cflags "$here/consumer.c" -static-libgcc $(echo "$static" | sed 's/-leveryo/-l:libeveryo.a/') -o "$dest/consumer-static"
"$dest/consumer-static"

# The host companion (libeveryo-io: checkpoints, IDX, the thread pool)
# through `pkg-config everyo-io` alone (it Requires everyo): shared, run
# through the rpath the README describes (no LD_LIBRARY_PATH), and static.
io_cflags=$(pkg-config --cflags everyo-io) io_libs=$(pkg-config --libs everyo-io)
io_static=$(pkg-config --static --libs everyo-io)
echo "test-install: pkg-config everyo-io: $io_libs (static: $io_static)"
mkdir "$dest/io-shared" "$dest/io-static"
$cc -std=c11 -Wall -Wextra -Wpedantic -Werror $io_cflags "$here/io_consumer.c" $io_libs \
    -Wl,-rpath,"$dest$prefix/lib" -o "$dest/io-consumer"
"$dest/io-consumer" "$dest/io-shared"
$cc -std=c11 $io_cflags "$here/io_consumer.c" \
    $(echo "$io_static" | sed -e 's/-leveryo-io\( \|$\)/-l:libeveryo-io.a\1/' -e 's/-leveryo\( \|$\)/-l:libeveryo.a\1/') \
    -o "$dest/io-consumer-static"
"$dest/io-consumer-static" "$dest/io-static"
ldd "$dest/io-consumer-static" | grep -q libeveryo && { echo "test-install: the static io consumer loads a shared libeveryo" >&2; exit 1; }

# Only the public API is exported.
for so in "$dest$prefix/lib/"libeveryo.so.*.*.* "$dest$prefix/lib/"libeveryo-io.so.*.*.*; do
    bad=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v '^eo_' || true)
    [ -z "$bad" ] || { echo "test-install: $(basename "$so") exports beyond eo_: $bad" >&2; exit 1; }
    echo "test-install: $(nm -D --defined-only "$so" | wc -l) symbols exported, soname $(objdump -p "$so" | awk '/SONAME/ {print $2}')"
done
for t in "$dest$prefix/bin/"eo-*; do "$t" --version >/dev/null || { echo "test-install: $t --version failed" >&2; exit 1; }; done

$make --no-print-directory -s uninstall DESTDIR="$dest" PREFIX=$prefix >/dev/null
left=$(find "$dest$prefix" -type f)
[ -z "$left" ] || { echo "test-install: uninstall left: $left" >&2; exit 1; }
echo "test-install: OK (installed, C and C++ programs and the io companion's built and run, uninstalled)"
