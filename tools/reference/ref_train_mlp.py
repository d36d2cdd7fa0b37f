#!/usr/bin/python3
"""tools/reference/ref_train_mlp.py — the PyTorch reference for the main job.

Trains the same MLP as `eo-train` (784-256-10, ReLU; PyTorch's default
Kaiming-uniform init, which EveryO's EO_INIT_KAIMING_UNIFORM reproduces),
with the same optimizer (AdamW, betas 0.9/0.999, eps 1e-8), the same
cosine learning-rate schedule with no warm-up, batch size and epochs, on
the same Fashion-MNIST files, and prints one RESULT line that
tools/bench/bench-train.sh parses:

  RESULT seconds_per_epoch=... images_per_s=... peak_rss_mib=... test_acc=...

Run with Debian's python3-torch (/usr/bin/python3). Threads: --threads
sets torch.set_num_threads; OpenBLAS's own pool is set from the
environment by the caller (OPENBLAS_NUM_THREADS).
"""
import argparse
import gzip
import math
import os
import resource
import struct
import time

import numpy as np
import torch


def load_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    zero, dtype, rank = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    dims = struct.unpack(">" + "I" * rank, data[4:4 + 4 * rank])
    arr = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank)
    return arr.reshape(dims)


def load_split(root, prefix):
    def pick(name):
        gz = os.path.join(root, name + ".gz")
        return gz if os.path.exists(gz) else os.path.join(root, name)
    x = load_idx(pick(f"{prefix}-images-idx3-ubyte")).reshape(-1, 784)
    y = load_idx(pick(f"{prefix}-labels-idx1-ubyte"))
    return (torch.from_numpy(x.astype(np.float32) / 255.0),
            torch.from_numpy(y.astype(np.int64)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    xtr, ytr = load_split(a.data, "train")
    xte, yte = load_split(a.data, "t10k")

    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 10))
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.999),
                            eps=1e-8, weight_decay=0.0)
    steps = math.ceil(len(xtr) / a.batch)
    total = steps * a.epochs
    # Same schedule as eo_lr_at(EO_LR_COSINE) with warmup 0 and min 0.
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(s / total, 1.0))))
    loss_fn = torch.nn.CrossEntropyLoss()

    train_time = 0.0
    seen = 0
    for epoch in range(a.epochs):
        perm = torch.randperm(len(xtr))
        t0 = time.perf_counter()
        model.train()
        for i in range(steps):
            idx = perm[i * a.batch:(i + 1) * a.batch]
            x, y = xtr[idx], ytr[idx]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            sched.step()
            seen += len(idx)
        train_time += time.perf_counter() - t0
        model.eval()
        with torch.no_grad():
            acc = (model(xte).argmax(1) == yte).float().mean().item()
        print(f"epoch {epoch + 1}/{a.epochs} loss {loss.item():.4f} test acc {100 * acc:.2f}%",
              flush=True)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(f"RESULT seconds_per_epoch={train_time / a.epochs:.3f} "
          f"images_per_s={seen / train_time:.0f} peak_rss_mib={rss:.1f} test_acc={acc:.4f}")


if __name__ == "__main__":
    main()
