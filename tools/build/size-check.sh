#!/bin/sh
# tools/build/size-check.sh README MEASURED [TOLERANCE_PERCENT]
#
# Keeps the size tables of README.md honest. MEASURED holds lines of
# `make size` output (NAME TEXT DATA BSS [TOTAL], the numbers last, the
# name may have spaces; other lines are ignored). For each measured NAME,
# README must have a table row whose first cell is NAME (backticks and
# thousands separators ignored) followed by text, data and bss; each
# figure must be within TOLERANCE_PERCENT (default 10) of the measured one,
# or within 64 bytes. The tolerance absorbs the compiler version and
# -march=native (a CPU with AVX-512 compiles a few more loops), not a
# change of what the library holds. Fails listing every row that drifted
# or is missing, with the figure to write.
set -eu
readme=$1 measured=$2 tol=${3:-10}
awk -v tol="$tol" -v readme="$readme" '
function num(s) { gsub(/[ ,`]/, "", s); return s }
function cell(s) { gsub(/`/, "", s); sub(/^ +/, "", s); sub(/ +$/, "", s); return s }
FNR == NR {
    # A measured line: the last three or four fields numeric.
    n = NF
    if (n >= 5 && $n ~ /^[0-9]+$/ && $(n-1) ~ /^[0-9]+$/ && $(n-2) ~ /^[0-9]+$/ && $(n-3) ~ /^[0-9]+$/) n--
    if (n < 4 || $n !~ /^[0-9]+$/ || $(n-1) !~ /^[0-9]+$/ || $(n-2) !~ /^[0-9]+$/) next
    name = $1
    for (i = 2; i <= n - 3; i++) name = name " " $i
    want[name] = $(n-2) " " $(n-1) " " $n
    order[++count] = name
    next
}
/^\|/ {
    split($0, c, "|")
    name = cell(c[2])
    if (!(name in want) || num(c[3]) !~ /^[0-9]+$/) next
    seen[name]++
    split(want[name], w, " ")
    for (k = 1; k <= 3; k++) {
        got = num(c[k + 2]) + 0
        d = got - w[k]; if (d < 0) d = -d
        if (d > 64 && d * 100 > tol * w[k]) {
            printf "size-check: %s:%d: \"%s\" %s is %s, measured %s (more than %s %% apart)\n", \
                readme, FNR, name, k == 1 ? "text" : k == 2 ? "data" : "bss", got, w[k], tol
            bad = 1
        }
    }
}
END {
    if (count == 0) { print "size-check: no measured sizes read" > "/dev/stderr"; exit 1 }
    for (i = 1; i <= count; i++)
        if (!(order[i] in seen)) {
            printf "size-check: %s has no table row \"%s\" (measured %s)\n", readme, order[i], want[order[i]]
            bad = 1
        }
    if (bad) { print "size-check: FAILED: update the table(s) in " readme " from the measurement above"; exit 1 }
    printf "size-check: %s agrees with the measured sizes within %s %% (%d rows)\n", readme, tol, count
}' "$measured" "$readme"
