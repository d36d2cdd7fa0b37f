#!/bin/sh
# tools/examples/readme-check.sh MARKDOWN... — the examples shown in the
# READMEs are the files that `make test` compiles and runs, byte for byte.
#
# A code block is tied to its file by the line just above it:
#     <!-- example: tools/examples/train_xor.c -->
#     ```c
#     ...the whole file...
#     ```
# Each such block is cut out and compared with the file; any difference
# fails, so the text a reader copies always builds.
status=0
for md in "$@"; do
    [ -f "$md" ] || { echo "readme-check: no $md" >&2; status=1; continue; }
    grep -q '^<!-- example: ' "$md" || { echo "readme-check: $md shows no example" >&2; status=1; }
    for f in $(sed -n 's/^<!-- example: \(.*\) -->$/\1/p' "$md"); do
        got=$(awk -v f="$f" '
            $0 == "<!-- example: " f " -->" { want = 1; next }
            want == 1 && /^```/ { want = 2; next }
            want == 2 && /^```$/ { exit }
            want == 2 { print }' "$md")
        if [ "$got" != "$(cat "$f")" ]; then
            echo "readme-check: $md shows a $f that differs from the file:" >&2
            printf '%s\n' "$got" | diff - "$f" | head -20 >&2
            status=1
        else
            echo "readme-check: $md shows $f as it is"
        fi
    done
done
exit $status
