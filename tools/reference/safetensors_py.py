"""tools/reference/safetensors_py.py -- a small pure-Python reader and writer for the
safetensors format, for the reference scripts (tools/reference/ref_transformer.py)
on machines where the `safetensors` package is not installed.

Format: 8-byte little-endian header length N, N bytes of JSON mapping each
tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (plus an
optional "__metadata__" object of strings), then the raw little-endian
data, offsets counted from the end of the header.

Tensors are exchanged as numpy arrays; only the dtypes the fixtures use
(F32, F64, I32, I64) are supported.
"""
import json
import struct

import numpy as np

_DTYPES = {"F32": "<f4", "F64": "<f8", "I32": "<i4", "I64": "<i8"}
_NAMES = {np.dtype(v): k for k, v in _DTYPES.items()}


def load(path):
    """Return (tensors, metadata): a dict name -> numpy array (a copy, in
    header order) and the metadata dict (empty if there is none)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {}) or {}
    base = 8 + n
    out = {}
    for name, e in header.items():
        if e["dtype"] not in _DTYPES:
            raise ValueError(f"{path}: {name}: dtype {e['dtype']} not supported here")
        b, end = e["data_offsets"]
        a = np.frombuffer(raw[base + b:base + end], dtype=_DTYPES[e["dtype"]])
        out[name] = a.reshape(e["shape"]).copy()
    return out, meta


def save(path, tensors, metadata=None):
    """Write tensors (name -> numpy array, in dict order) and optional
    string metadata; the header is padded with spaces to a multiple of 8
    bytes so the data area is aligned, as the reference writer does."""
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, a in tensors.items():
        a = np.ascontiguousarray(a)
        dt = a.dtype.newbyteorder("<") if a.dtype.byteorder == ">" else a.dtype
        if np.dtype(dt) not in _NAMES:
            raise ValueError(f"{name}: dtype {a.dtype} not supported here")
        data = a.astype(dt).tobytes()
        header[name] = {"dtype": _NAMES[np.dtype(dt)], "shape": list(a.shape),
                        "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
