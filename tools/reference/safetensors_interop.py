#!/usr/bin/env python3
"""tools/reference/safetensors_interop.py -- check that EveryO's safetensors files and
the reference implementation's agree, in both directions, bit for bit.

Run by hand after `make` (it needs the `safetensors` package; PyTorch is
used too when it is installed, numpy otherwise):

    python3 tools/reference/safetensors_interop.py [path/to/eo-safetensors]

1. `eo-safetensors sample` writes a file; Python loads it and compares every
   tensor's bytes, shape, dtype and the metadata with what the C side wrote,
   and checks the data checksum the writer adds (everyo.crc32) with zlib.
2. Python writes a file; `eo-safetensors dump` reads it and the printed bit
   patterns are compared with Python's.
Exit status 0 when everything matches.
"""
import os
import re
import subprocess
import sys
import tempfile
import zlib

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file as np_load, save_file as np_save

try:
    import torch
    from safetensors.torch import load_file as torch_load, save_file as torch_save
except ImportError:  # numpy alone exercises the same Rust reader and writer
    torch = None

# What `eo-safetensors sample` writes (keep in step with tools/formats/eo-safetensors.c).
W_BITS = [0x3F000000, 0xBFA00000, 0x7F61B1E6, 0x00000001, 0x80000000, 0x7FC00001]
SAMPLE = {
    "layer.weight": np.array(W_BITS, dtype="<u4").view("<f4").reshape(2, 3),
    "layer.bias": np.array([1, 2, 3], dtype="<f4"),
    "indices": np.array([0, -1, 2**31 - 1, -(2**31)], dtype="<i4"),
    "scalar": np.array(42.0, dtype="<f4"),
    "empty": np.zeros((0, 3), dtype="<f4"),
}
SAMPLE_META = {"format": "pt", "note": 'written by "eo-safetensors" \u00e9'}
CRC_KEY = "everyo.crc32"  # EO_ST_CHECKSUM_KEY, added by every EveryO writer


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def c_to_python(tool, d):
    path = os.path.join(d, "from_c.safetensors")
    subprocess.run([tool, "sample", path], check=True)
    got = np_load(path)
    assert set(got) == set(SAMPLE), f"names differ: {sorted(got)}"
    for k, v in SAMPLE.items():
        assert same(got[k], v), f"numpy: {k} differs: {got[k]!r} vs {v!r}"
    with safe_open(path, framework="np") as f:
        meta = dict(f.metadata())
    # The writer's data checksum: zlib's CRC-32 of everything after the header.
    crc = meta.pop(CRC_KEY, None)
    with open(path, "rb") as fh:
        raw = fh.read()
    data = raw[8 + int.from_bytes(raw[:8], "little"):]
    assert crc == "%08x" % zlib.crc32(data), f"{CRC_KEY} {crc!r} is not the data's CRC-32"
    assert meta == SAMPLE_META, f"metadata differs: {meta!r}"
    print(f"C -> Python (numpy): {len(SAMPLE)} tensors, metadata and data CRC-32 bit-exact")
    if torch is not None:
        got = torch_load(path)
        for k, v in SAMPLE.items():
            assert same(got[k].numpy(), v), f"torch: {k} differs"
        print(f"C -> Python (torch {torch.__version__}): bit-exact")


def unescape(s):
    """Undo eo-safetensors' escaping of metadata (\\\\, \\n, \\xNN)."""
    return re.sub(r"\\(\\|n|x[0-9a-f]{2})",
                  lambda m: {"\\": "\\", "n": "\n"}.get(m.group(1)) or chr(int(m.group(1)[1:], 16)),
                  s)


def parse_dump(text):
    """name -> (dtype, shape, values as printed) from `eo-safetensors dump`."""
    out, meta = {}, {}
    for line in text.splitlines():
        if line.startswith("meta "):
            k, _, v = line[5:].partition("=")
            meta[unescape(k)] = unescape(v)
            continue
        head, _, vals = line.partition(":")
        name, dtype, shape, _nbytes = head.split(" ")
        dims = tuple(int(x) for x in shape.strip("[]").split(",") if x)
        out[name] = (dtype, dims, vals.split())
    return out, meta


def expected_words(arr):
    if arr.dtype == np.int32:
        return [str(int(x)) for x in arr.reshape(-1)]
    return ["0x%08x" % x for x in arr.reshape(-1).view("<u4")]


def python_to_c(tool, d):
    rng = np.random.default_rng(7)
    tensors = {
        "w1": rng.standard_normal((784, 16)).astype("<f4"),
        "b1": np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3.4e38, -1.5], "<f4"),
        "steps": np.array([[1, -2], [2**31 - 1, -(2**31)]], "<i4"),
        "s": np.array(3.25, "<f4"),
        "z": np.zeros((2, 0), "<f4"),
    }
    meta = {"epoch": "3", "quote\"and\\slash": "line\nbreak \u2713"}
    path = os.path.join(d, "from_python.safetensors")
    if torch is not None:
        torch_save({k: torch.from_numpy(v.copy()) for k, v in tensors.items()}, path, metadata=meta)
    else:
        np_save(tensors, path, metadata=meta)
    res = subprocess.run([tool, "dump", path], check=True, capture_output=True, text=True)
    got, got_meta = parse_dump(res.stdout)
    assert set(got) == set(tensors), f"names differ: {sorted(got)}"
    for k, v in tensors.items():
        dtype, shape, words = got[k]
        want_dtype = "I32" if v.dtype == np.int32 else "F32"
        assert dtype == want_dtype and shape == v.shape, f"{k}: {dtype} {shape} vs {v.shape}"
        assert words == expected_words(v), f"{k}: values differ"
    assert got_meta == meta, f"metadata differs: {got_meta!r}"
    who = f"torch {torch.__version__}" if torch is not None else "numpy"
    print(f"Python ({who}) -> C: {len(tensors)} tensors bit-exact, metadata matches")


def main():
    tool = sys.argv[1] if len(sys.argv) > 1 else os.path.join("build", "eo-safetensors")
    with tempfile.TemporaryDirectory() as d:
        c_to_python(tool, d)
        python_to_c(tool, d)
    print("safetensors interop: OK")


if __name__ == "__main__":
    main()
