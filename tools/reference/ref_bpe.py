"""Makes the byte-level BPE fixtures of the tokenizer tests (tests/test_bpe.c).

    make bpe-fixtures [GPT2_TIKTOKEN=FILE]    (or run it with the Python below:
    python3 tools/reference/ref_bpe.py [--gpt2-tiktoken FILE])

writes, under tests/fixtures/bpe/:
  vocab.json, merges.txt  a byte-level BPE of 1,500 tokens trained on the
                          Debian `fortunes` corpus by Hugging Face's
                          `tokenizers` (BpeTrainer, ByteLevel pre-tokenizer,
                          all 256 bytes in the initial alphabet,
                          "<|endoftext|>" as id 0)
  cases.bin               the test corpus and, per case, the ids Hugging
                          Face's GPT2Tokenizer (the Python one of
                          transformers 4.x: regex + bpe(), the reference)
                          gives with that vocabulary
  gpt2_ids.bin            per case, the ids tiktoken gives with GPT-2's own
                          ranks (only when --gpt2-tiktoken FILE is given;
                          the file itself is never committed)

Needs (no torch): pip install 'transformers<5' tokenizers tiktoken regex;
transformers 5 made GPT2Tokenizer the Rust one, so 4.x is asked for the
Python reference. Deterministic: the corpus is picked by index, the random
cases by a fixed seed, and BpeTrainer is deterministic for one input.

Invalid UTF-8: GPT2Tokenizer takes a str, so it never sees invalid bytes.
The C tokenizer treats each byte that does not start valid UTF-8 as one
character of the "other" class and keeps the byte (core/tokenizer.h); the
reference for those cases is GPT2Tokenizer's own _tokenize with the text
decoded by errors="surrogateescape" (each such byte becomes a lone
surrogate, which is "other" to the expression, and is encoded back to its
byte before the byte-level map) — the only change made to it. For valid
UTF-8 the two are checked to agree here. tiktoken refuses lone surrogates,
so gpt2_ids.bin has no ids for those cases (count 0xFFFFFFFF).

File format (little-endian): u32 case count; per case u32 byte count, the
bytes, u32 id count, the ids as u16. gpt2_ids.bin: u32 case count; per
case u32 id count (0xFFFFFFFF: not computed), the ids as u16.
"""
import argparse
import base64
import glob
import json
import os
import random
import struct
import sys

FORTUNES = "/usr/share/games/fortunes"
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "fixtures", "bpe")
GPT2_PAT = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def fortunes():
    """Every fortune of the corpus, in file and then file order."""
    out = []
    for path in sorted(glob.glob(os.path.join(FORTUNES, "*"))):
        if "." in os.path.basename(path) or os.path.isdir(path):
            continue
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", "replace")
        out.extend(t for t in text.split("\n%\n") if t.strip())
    return out


def train(texts, out):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=1500, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tk.train_from_iterator(texts, trainer)
    tk.model.save(out)


def handmade():
    """Cases aimed at each rule of the expression and each path of the C code."""
    s = [
        "Hello world", " Hello world", "Hello  world", "Hello   world", "trailing spaces   ",
        "   leading", "\n\n\nnewlines\n\n", "a \n b", "tab\tand\t\ttabs\t", "\r\nCRLF\r\n",
        "x\x0by\x0cz", "\x1c\x1d\x1e\x1f separators", "nbsp\u00a0here \u00a0 there",
        "ideographic\u3000\u3000space\u3000", "line\u2028sep\u2029para", "nel\u0085x",
        " \u3000x", "  \u3000 x", "end with space ", " ", "  ", "\n", "\t \n \t",
        "don't I'm you're we've they'll he'd it's", "DON'T I'M YOU'RE WE'VE THEY'LL HE'D IT'S",
        "'s 't 're 've 'm 'll 'd", "'S 'T 'RE 'VE 'M 'LL 'D", "''s '''t", "' s", " 's", "'",
        "x'", "'re'", "y'all", "rock'n'roll", "?'s", "'sam 'tea 'rex 'velvet 'mom 'llama 'dad",
        "12345 67 8.9 1,000,000 3rd 4th", "\u0663\u0664\u0665 \uff11\uff12 \u216b \u00b2\u00b3 \u2460",
        "x2 2x  3  y", "Ελληνικά κείμενα", "Русский текст, да.", "עברית ועוד", "العربية هنا",
        "हिन्दी पाठ", "中文文本测试", "日本語のテキスト", "한국어 텍스트", "ภาษาไทย",
        "e\u0301 cafe\u0301 n\u0303o\u0308", "\u0301\u0301leading marks", "a\u200db\u200cc",
        "emoji 😀😃 👍🏽 👨‍👩‍👧 🇫🇷 ❤️", "😀", " 😀x", "math ∑∫√∞ ≠ ≤", "«quotes» „low“ ‘single’",
        "tabs\t\t\tthen text", "mixed 1a a1 _a a_ __init__", "$$$ %%% ^^^ &&& ***", "a-b_c.d/e\\f",
        "<|endoftext|>"[1:], "<|endoftext", "a" * 300, " " * 200, "1" * 150, "!" * 100,
        "中" * 100, "supercalifragilisticexpialidocious" * 5, " " * 70 + "x", "\t" * 80 + "\n",
        ("ab" * 40) + " " + ("ba" * 40), "z" * 65, "y" * 64, "\u00e9" * 40, "a" + " " * 65,
    ]
    return [t.encode("utf-8") for t in s]


def invalid():
    return [
        b"\xff", b"\xfe\xff", b"abc\x80def", b"\xc3(", b"\xe2\x82", b"x\xe2\x82", b"\xc0\xaf",
        b"\xed\xa0\x80 surrogate", b"\xf4\x90\x80\x80 too big", b"\xf0\x9f\x98 cut emoji",
        b" \xff\xfe x", b"'\xff", b"'s\xff", b"\xff's", b"word\xffword", b"  \xff", b"\x80" * 70,
        b"\xc3\xa9\xc3", b"ok \xe2\x82\xac \xe2\x82", b"\xf8\x88\x80\x80\x80", b"\n\xa0\n",
        b"1\xff2", b"\xe3\x80\x80\xff", b"abc" + b"\xc2" * 66,
    ]


def random_cases(rng):
    pool = list("aAzZ09 _'-.,!?\t\n") + ["\u00e9", "\u00df", "\u03b1", "\u0416", "\u4e2d", "\u3000",
                                            "\u00a0", "\u0663", "\u2028", "\U0001F600", "\u0301",
                                            "\u200d", "s", "t", "re", "ll", "  "]
    out = []
    for _ in range(300):
        out.append("".join(rng.choice(pool) for _ in range(rng.randint(1, 40))).encode())
    for _ in range(200):
        out.append(bytes(rng.randrange(256) for _ in range(rng.randint(1, 40))))
    return out


def corpus(all_fortunes):
    """About 120 KB of fortunes (every 40th, in cases of up to ~2 KB), then
    the hand-made, invalid and random cases."""
    cases, cur = [], ""
    for t in all_fortunes[::40]:
        cur += t + "\n%\n"
        if len(cur) > 2000:
            cases.append(cur.encode("utf-8"))
            cur = ""
    if cur:
        cases.append(cur.encode("utf-8"))
    return cases + handmade() + invalid() + random_cases(random.Random(27))


def reference_ids(vocab, merges, cases):
    import regex
    from transformers import GPT2Tokenizer

    class SurrogateEscape(GPT2Tokenizer):
        """GPT2Tokenizer with one change: lone surrogates from
        errors="surrogateescape" go back to their bytes."""

        def _tokenize(self, text):
            out = []
            for token in regex.findall(self.pat, text):
                token = "".join(self.byte_encoder[b] for b in token.encode("utf-8", "surrogateescape"))
                out.extend(self.bpe(token).split(" "))
            return out

    plain = GPT2Tokenizer(vocab, merges)
    ref = SurrogateEscape(vocab, merges)
    assert plain.pat.pattern == GPT2_PAT, plain.pat.pattern
    ids = []
    for c in cases:
        text = c.decode("utf-8", "surrogateescape")
        got = ref.convert_tokens_to_ids(ref._tokenize(text))
        try:
            c.decode("utf-8")
            valid = True
        except UnicodeDecodeError:
            valid = False
        if valid:
            want = plain.encode(text)
            assert got == want, (c, got, want)
            back = plain.decode(want, clean_up_tokenization_spaces=False)
            assert back == text, (c, back)
        ids.append(got)
    return ids


def tiktoken_ids(path, cases):
    import tiktoken
    ranks = {}
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                tok, rank = line.split()
                ranks[base64.b64decode(tok)] = int(rank)
    enc = tiktoken.Encoding(name="gpt2_local", pat_str=GPT2_PAT, mergeable_ranks=ranks,
                            special_tokens={"<|endoftext|>": 50256})
    out = []
    for c in cases:
        try:
            out.append(enc.encode_ordinary(c.decode("utf-8")))
        except UnicodeDecodeError:
            out.append(None)
    return out


def is_utf8(b):
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def write_cases(path, cases, ids):
    with open(path, "wb") as f:
        f.write(struct.pack("<I", len(cases)))
        for c, i in zip(cases, ids):
            f.write(struct.pack("<I", len(c)) + c + struct.pack("<I", len(i)))
            f.write(struct.pack("<%dH" % len(i), *i))


def write_ids(path, ids):
    with open(path, "wb") as f:
        f.write(struct.pack("<I", len(ids)))
        for i in ids:
            if i is None:
                f.write(struct.pack("<I", 0xFFFFFFFF))
            else:
                f.write(struct.pack("<I", len(i)) + struct.pack("<%dH" % len(i), *i))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpt2-tiktoken", help="GPT-2's rank file (openai-whisper's whisper/assets/gpt2.tiktoken)")
    ap.add_argument("--out", default=OUT)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    all_f = fortunes()
    if not all_f:
        sys.exit("no fortunes under %s (apt-get install fortunes)" % FORTUNES)
    train(all_f, a.out)
    vocab, merges = os.path.join(a.out, "vocab.json"), os.path.join(a.out, "merges.txt")
    cases = corpus(all_f)
    ids = reference_ids(vocab, merges, cases)
    write_cases(os.path.join(a.out, "cases.bin"), cases, ids)
    # Not the reference, a cross-check: the Rust tokenizer of `tokenizers`
    # with the same files (what transformers 5 calls GPT2Tokenizer).
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    fast = Tokenizer(models.BPE.from_file(vocab, merges))
    fast.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    fast.decoder = decoders.ByteLevel()
    valid = [(c, i) for c, i in zip(cases, ids) if is_utf8(c)]
    differ = sum(fast.encode(c.decode()).ids != i for c, i in valid)
    print("tokenizers (Rust) %s: %d of %d valid UTF-8 cases differ from GPT2Tokenizer" % (
        __import__("tokenizers").__version__, differ, len(valid)))
    print("%d cases, %d bytes, %d ids" % (len(cases), sum(map(len, cases)), sum(map(len, ids))))
    if a.gpt2_tiktoken:
        g = tiktoken_ids(a.gpt2_tiktoken, cases)
        write_ids(os.path.join(a.out, "gpt2_ids.bin"), g)
        print("gpt2: %d ids" % sum(len(i) for i in g if i))
    else:
        print("no --gpt2-tiktoken: gpt2_ids.bin left as it was (it must match these cases)")


if __name__ == "__main__":
    main()
