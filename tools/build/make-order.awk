# tools/build/make-order.awk — rules that name a variable defined later.
#
#   awk -f tools/build/make-order.awk Makefile Makefile
#
# (the file twice: the first pass records where each variable is first
# assigned, the second reads the rules). Make expands a rule's targets and
# prerequisites, an ifeq/ifneq condition and the right side of := where it
# reads them, so a variable assigned further down is still empty there: the
# rule silently loses a prerequisite, which a full build hides and a fresh
# clone shows (`make install` once failed so, without ptx_embed.inc).
# Recipes and = assignments are expanded later and are not checked.
# Prints file:line for each and exits 1 if any.
FNR == 1 { pass++ }
pass == 1 {
    if (match($0, /^[ ]*(override[ ]+)?[A-Za-z_][A-Za-z0-9_]*[ ]*(\?|:|\+|::)?=/)) {
        v = $0
        sub(/^[ ]*(override[ ]+)?/, "", v)
        sub(/[ ]*(\?|:|\+|::)?=.*/, "", v)
        if (!(v in def)) def[v] = FNR
    }
    if ($1 == "define" && !($2 in def)) def[$2] = FNR
    next
}
$0 ~ /^\t/ || $0 ~ /^[ ]*#/ { next }
{
    directive = $0 ~ /^[ ]*(ifeq|ifneq|ifdef|ifndef|else|endif|define|endef|export|include|-include)([ ]|$)/
    rule = !directive && $0 ~ /^[^=]*[^:=]:([^=]|$)/
    cond = $0 ~ /^[ ]*(ifeq|ifneq|ifdef|ifndef|else[ ]+if)/
    imm = $0 ~ /:=/
    if (!(rule || cond || imm)) next
    s = $0
    while (match(s, /\$\(([A-Za-z_][A-Za-z0-9_]*)[):]/)) {
        v = substr(s, RSTART + 2, RLENGTH - 3)
        if ((v in def) && def[v] > FNR) {
            printf "%s:%d: $(%s) is defined only at line %d, so it expands to nothing here\n", FILENAME, FNR, v, def[v]
            bad = 1
        }
        s = substr(s, RSTART + RLENGTH)
    }
}
END { exit bad }
