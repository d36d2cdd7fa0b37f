#!/bin/sh
# tools/build/need-packages.sh TEST PACKAGE... — make sure Debian packages are there.
#
# TEST is a shell command that succeeds when what we need is installed.
# If it fails: as root, install the packages with apt-get (refreshing the
# package lists once if the first try cannot find them); otherwise print
# the exact command a person should run, and fail.
test_cmd=$1; shift
if sh -c "$test_cmd" >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" = 0 ]; then
    echo "installing: $*"
    export DEBIAN_FRONTEND=noninteractive
    # No -q: apt's own progress (its download bar on a terminal, a "Get:"
    # line per package in a log) stays visible, since a dataset package is
    # a long download and a silent one looks like a hang.
    apt-get install -y "$@" ||
        { echo "refreshing the package lists and trying again"; apt-get update && apt-get install -y "$@"; } || {
        echo "error: 'apt-get install -y $*' failed" >&2; exit 1; }
    sh -c "$test_cmd" >/dev/null 2>&1 && exit 0
    echo "error: installed $* but '$test_cmd' still fails" >&2
    exit 1
fi
echo "error: missing packages. Install them with:" >&2
echo "    sudo apt-get install -y $*" >&2
exit 1
