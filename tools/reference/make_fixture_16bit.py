"""tools/reference/make_fixture_16bit.py -- writes tests/fixtures/st16.safetensors,
the BF16/F16 fixture of the safetensors tests (tests/test_weights.c).

PyTorch does the rounding: `ref` is a float32 tensor of edge cases (ties
to even in both formats, f16 subnormals and overflow, bf16's largest
values, signed zero, infinities, a NaN), `ref.bf16` is
ref.to(torch.bfloat16) and `ref.f16` is ref.half(), `w.bf16` / `b.f16` a
small layer's weights in 16 bits. The file is written by hand in the
safetensors layout (8-byte little-endian header length, JSON header padded
with spaces to a multiple of 8, little-endian data), as the `safetensors`
package does, so it is made the same with or without that package; when
the package is installed, the script also reads the file back with it and
checks every tensor.

    /usr/bin/python3 tools/reference/make_fixture_16bit.py tests/fixtures/st16.safetensors
"""
import json
import struct
import sys

import torch


def edge_values():
    f = [1.0, -2.5, 0.0, -0.0, 1.0 / 3.0,
         # bf16 ties: 1 + 2^-8 (halfway, even below), 1 + 3*2^-8 (halfway, even above)
         1.00390625, 1.01171875,
         # f16 ties: 1 + 2^-11, 1 + 3*2^-11
         1.00048828125, 1.00146484375,
         65504.0, 65519.0, 65520.0,  # f16: largest, still rounds down, rounds to inf
         6.0e-8, 2.0 ** -25, 3.0e-5,  # f16 subnormals and the tie at half the smallest
         3.3895313892515355e38,  # bf16's largest finite
         float("inf"), float("-inf"), float("nan"), 1e-40]
    return torch.tensor(f, dtype=torch.float32)


def raw(t):
    t = t.contiguous()
    if t.dtype in (torch.bfloat16, torch.float16):
        return t.view(torch.int16).numpy().astype("<i2").tobytes()
    return t.numpy().astype("<f4").tobytes()


NAMES = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16"}


def write(path, tensors, meta):
    header, blobs, at = {"__metadata__": meta}, [], 0
    for name, t in tensors.items():
        b = raw(t)
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/st16.safetensors"
    ref = edge_values()
    g = torch.Generator().manual_seed(12)
    w = torch.randn(3, 4, generator=g)
    b = torch.randn(3, generator=g)
    tensors = {"ref": ref, "ref.bf16": ref.to(torch.bfloat16), "ref.f16": ref.half(),
               "w.bf16": w.to(torch.bfloat16), "b.f16": b.half()}
    write(path, tensors, {"made_by": "tools/reference/make_fixture_16bit.py",
                          "torch": torch.__version__})
    try:
        from safetensors.torch import load_file
    except ImportError:
        print(f"{path}: written ({len(tensors)} tensors); safetensors package absent, not "
              "read back")
        return
    back = load_file(path)
    for k, v in tensors.items():
        assert torch.equal(back[k].view(torch.int16) if v.dtype != torch.float32 else back[k].nan_to_num(),
                           v.view(torch.int16) if v.dtype != torch.float32 else v.nan_to_num()), k
    print(f"{path}: written and read back with the safetensors package")


if __name__ == "__main__":
    main()
