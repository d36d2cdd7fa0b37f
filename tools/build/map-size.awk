# tools/build/map-size.awk — bytes a static library contributes to a linked
# program, from GNU ld's map file (-Wl,-Map,FILE):
#
#   awk -v lib=libeveryo-fs.a -f tools/build/map-size.awk prog.map
#
# prints "TEXT DATA BSS": the input sections kept from members of `lib`
# (text: .text* and .rodata*; data: .data*; bss: .bss* and COMMON). The
# "Discarded input sections" list before the memory map is skipped, so
# with --gc-sections this is what the program really carries of the
# library. make cortex-m4 prints it for infer_tiny (tools/build/cortex-m4.sh).
function hex(h,    i, v) {
    h = tolower(h); sub(/^0x/, "", h); v = 0
    for (i = 1; i <= length(h); i++) v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
    return v
}
/^Linker script and memory map/ { on = 1; next }
!on { next }
# An input section's name on a line of its own, its address, size and file on the next.
/^ [.A-Z][^ ]*$/ { pending = $1; next }
{
    if (pending != "" && $1 ~ /^0x/ && NF >= 3) { sec = pending; size = $2; file = $3 }
    else if ($0 ~ /^ [.A-Z]/ && $2 ~ /^0x/ && $3 ~ /^0x/ && NF >= 4) { sec = $1; size = $3; file = $4 }
    else { pending = ""; next }
    pending = ""
    if (index(file, lib "(") == 0) next
    n = hex(size)
    if (sec ~ /^\.(text|rodata)/) text += n
    else if (sec ~ /^\.data/) data += n
    else if (sec ~ /^(\.bss|COMMON)/) bss += n
}
END { printf "%d %d %d\n", text, data, bss }
