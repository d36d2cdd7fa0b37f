"""EveryO's byte-level BPE encoder beside tiktoken, same text, same run.

    python3 tools/bench/bench_tokenizer.py --tiktoken-file gpt2.tiktoken [--text FILE]

Encodes the text (default: the Debian `fortunes` corpus, all files joined,
about 2.6 MB) with GPT-2's ranks, single-threaded on both sides:
  - tiktoken: tiktoken.Encoding built from the rank file with GPT-2's
    expression (no network), encode_ordinary, after one warm-up call;
  - EveryO: build/eo-tokenize --tiktoken FILE --time count, which times the
    library's eo_bpe_encode alone (file reading and vocabulary loading
    excluded, as the tiktoken side excludes them).
Best of --repeat runs each. Checks the ids are identical (eo-tokenize
encode against tiktoken's) and prints tokens/s and MB/s for both.

Needs `pip install tiktoken` and the rank file (openai-whisper's package
carries it: pip download openai-whisper --no-deps, then
whisper/assets/gpt2.tiktoken inside the archive). Run `make` first.
"""
import argparse
import base64
import glob
import os
import platform
import re
import subprocess
import sys
import time

GPT2_PAT = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def fortunes():
    parts = []
    for p in sorted(glob.glob("/usr/share/games/fortunes/*")):
        if "." not in os.path.basename(p) and os.path.isfile(p):
            with open(p, "rb") as f:
                parts.append(f.read())
    return b"".join(parts)


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tiktoken-file", required=True)
    ap.add_argument("--text", help="a text file (default: the fortunes corpus)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--eo-tokenize", default=os.path.join(ROOT, "build", "eo-tokenize"))
    a = ap.parse_args()
    import tiktoken

    if a.text:
        with open(a.text, "rb") as f:
            data = f.read()
        path = a.text
    else:
        data = fortunes()
        if not data:
            sys.exit("no text: install the fortunes package or give --text FILE")
        path = os.path.join(ROOT, "build", "bench_tokenizer.txt")
        with open(path, "wb") as f:
            f.write(data)
    text = data.decode("utf-8")  # tiktoken takes str; the corpus must be UTF-8

    ranks = {}
    with open(a.tiktoken_file, "rb") as f:
        for line in f:
            if line.strip():
                tok, rank = line.split()
                ranks[base64.b64decode(tok)] = int(rank)
    enc = tiktoken.Encoding(name="gpt2_local", pat_str=GPT2_PAT, mergeable_ranks=ranks,
                            special_tokens={"<|endoftext|>": 50256})
    enc.encode_ordinary("warm up")
    best_tk, ids = None, None
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        ids = enc.encode_ordinary(text)
        dt = time.perf_counter() - t0
        best_tk = dt if best_tk is None else min(best_tk, dt)

    cmd = [a.eo_tokenize, "--tiktoken", a.tiktoken_file]
    out = subprocess.run(cmd + ["encode", path], check=True, capture_output=True).stdout
    eo_ids = [int(x) for x in out.split()]
    same = eo_ids == ids
    best_eo = None
    for _ in range(a.repeat):
        r = subprocess.run(cmd + ["--time", "count", path], check=True, capture_output=True, text=True)
        m = re.search(r"in ([0-9.]+) s", r.stderr)
        dt = float(m.group(1))
        best_eo = dt if best_eo is None else min(best_eo, dt)

    n, nb = len(ids), len(data)
    print("machine: %s, %d CPUs (%s)" % (cpu_name(), os.cpu_count(), platform.machine()))
    print("text: %s, %d bytes, %d GPT-2 tokens; ids identical: %s" % (
        "fortunes corpus" if not a.text else a.text, nb, n, "yes" if same else "NO"))
    print("%-26s %12s %10s %8s" % ("encoder (1 thread)", "tokens/s", "MB/s", "s"))
    for name, dt in (("tiktoken %s" % tiktoken.__version__, best_tk), ("EveryO eo_bpe_encode", best_eo)):
        print("%-26s %12.0f %10.2f %8.3f" % (name, n / dt, nb / dt / 1e6, dt))
    print("EveryO / tiktoken: %.2fx" % (best_tk / best_eo))
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
