"""Writes core/bpe_unicode.c: the character classes GPT-2's pre-tokenisation
expression uses (\\p{L}, \\p{N}, \\s), for every code point from U+0080 on.

GPT2Tokenizer (transformers 4.x) matches its expression with the `regex`
module, so the classes are asked of that module, code point by code point,
rather than derived from a Unicode table: whatever its notion of \\s (it
leaves out U+001C..U+001F, which Python's `re` counts as space), the C
side has the same. Run with a Python that has `regex` (pip install regex):

    python3 tools/reference/ref_bpe_unicode.py > core/bpe_unicode.c

The table is the list of code points where the class changes, each as
(code point << 2) | class, searched by bisection (core/bpe_split.c).
"""
import sys

import regex

L, N, S, O = 0, 1, 2, 3  # letter, number, space, other (as in core/bpe_split.c)
pl, pn, ps = regex.compile(r"\p{L}"), regex.compile(r"\p{N}"), regex.compile(r"\s")


def cls(cp):
    if 0xD800 <= cp <= 0xDFFF:
        return O  # surrogates are not UTF-8; core/bpe_split.c never asks
    c = chr(cp)
    if pl.match(c):
        assert not pn.match(c) and not ps.match(c)
        return L
    if pn.match(c):
        assert not ps.match(c)
        return N
    return S if ps.match(c) else O


def main():
    runs, prev = [], None
    for cp in range(0x80, 0x110000):
        c = cls(cp)
        if c != prev:
            runs.append((cp, c))
            prev = c
    ascii_cls = [cls(cp) for cp in range(0x80)]
    out = sys.stdout
    out.write("/* core/bpe_unicode.c — a data table written by tools/reference/ref_bpe_unicode.py\n"
              " * (Python `regex` %s); do not edit by hand.\n *\n" % regex.__version__)
    out.write(" * The classes of GPT-2's pre-tokenisation expression, as the `regex`\n"
              " * module GPT2Tokenizer uses decides them: 0 letter (\\p{L}), 1 number\n"
              " * (\\p{N}), 2 space (\\s), 3 anything else. eo_bpe_ascii_class holds\n"
              " * U+0000..U+007F; eo_bpe_unicode_runs the code points from U+0080 on\n"
              " * where the class changes, as (code point << 2) | class, ascending:\n"
              " * a code point has the class of the last run that starts at or before\n"
              " * it. */\n")
    out.write('#include "core/bpe_unicode.h"\n\n')
    out.write("const unsigned char eo_bpe_ascii_class[128] = {\n")
    for i in range(0, 128, 32):
        out.write("    " + ",".join(str(c) for c in ascii_cls[i:i + 32]) + ",\n")
    out.write("};\n\n")
    out.write("const uint32_t eo_bpe_unicode_runs[%d] = {\n" % len(runs))
    vals = ["0x%x" % ((cp << 2) | c) for cp, c in runs]
    for i in range(0, len(vals), 8):
        out.write("    " + ", ".join(vals[i:i + 8]) + ",\n")
    out.write("};\n\nconst size_t eo_bpe_unicode_run_count = %d;\n" % len(runs))


if __name__ == "__main__":
    main()
