#!/usr/bin/python3
"""tools/bench/bench_transformer.py -- EveryO against PyTorch on the two
transformer workloads, in the same run (the machine is shared and noisy, so
only ratios measured side by side mean much):

  GPT  character-level, fortunes corpus (tools/train/textlm.h's recipe), context
       64, d_model 128, 4 heads, 4 layers, batch 32, AdamW lr 1e-3 wd 0.01
       (constant); validation loss on the same 512 evenly spaced windows;
  CNN  eo-train's conv32-pool-conv64-pool-fc128-fc10, batch 128, AdamW 2e-3
       (timing and peak resident memory only: --models cnn);
  ViT  Fashion-MNIST, 4x4 patches, d_model 64, 4 heads, 2 blocks, mean
       pooling, batch 128, AdamW lr 1e-3 wd 0.01 with cosine decay over the
       run; accuracy on the first 2,000 test images.

Each side trains STEPS steps from its own seeded initialisation and batch
order (same recipe, different random streams), so the losses agree only
statistically; the step times are means over the training steps alone.

    /usr/bin/python3 tools/bench/bench_transformer.py --eo-train build/eo-train [--steps 200]
                     [--threads 1,2] [--models gpt,vit]

(`make bench-transformer` runs it.) PyTorch runs in a child process per
configuration with torch.set_num_threads(n) and OMP/OpenBLAS limited to the
same n; on 2 threads the split torch 1 + OpenBLAS 2 is measured too, since
the two pools fight on this kind of machine (see BASELINES).
"""
import argparse
import gzip
import json
import math
import os
import re
import subprocess
import sys
import time

FORTUNES = "/usr/share/games/fortunes"
FMNIST = "/usr/share/datasets/fashion-mnist"


# ---- PyTorch side (runs in a child process) --------------------------------

def fortunes_text(d=FORTUNES):
    names = sorted(n for n in os.listdir(d) if not n.endswith(".dat")
                   and os.path.isfile(os.path.join(d, n)) and not os.path.islink(os.path.join(d, n)))
    raw = b"".join(open(os.path.join(d, n), "rb").read() for n in names)
    raw = raw.replace(b"\t", b" ").lower()
    return bytes(c for c in raw if c == 10 or 32 <= c < 127)


def val_window_start(n, T, K, k):  # tools/train/textlm.c's eo_val_window_start
    span = n - T - 1 if n > T + 1 else 0
    return k * (span // K)


def idx_images(path):
    with gzip.open(path, "rb") as f:
        b = f.read()
    n = int.from_bytes(b[4:8], "big")
    import numpy as np
    return np.frombuffer(b, dtype=np.uint8, offset=16).reshape(n, 784).astype(np.float32) / 255.0


def idx_labels(path):
    with gzip.open(path, "rb") as f:
        b = f.read()
    import numpy as np
    return np.frombuffer(b, dtype=np.uint8, offset=8).astype(np.int64)


def worker(model, steps, tt, seed):
    import numpy as np
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
    from ref_transformer import GPT, ViT
    torch.set_num_threads(tt)
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    if model == "gpt":
        text = fortunes_text()
        chars = sorted(set(text))
        lut = np.zeros(256, dtype=np.int64)
        lut[chars] = np.arange(len(chars))
        tok = torch.from_numpy(lut[np.frombuffer(text, dtype=np.uint8)])
        ntrain = len(tok) * 9 // 10
        train, val = tok[:ntrain], tok[ntrain:]
        T, B = 64, 32
        net = GPT(len(chars), T, 128, 4, 4)
        opt = torch.optim.AdamW(net.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                                weight_decay=0.01)
        offs = torch.arange(T + 1)
        spent = 0.0
        for _ in range(steps):
            st = torch.randint(0, ntrain - T, (B,), generator=g)
            w = train[st[:, None] + offs]
            t0 = time.perf_counter()
            logits = net(w[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), w[:, 1:].reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            spent += time.perf_counter() - t0
        K = 512
        starts = torch.tensor([val_window_start(len(val), T, K, k) for k in range(K)])
        tot = 0.0
        with torch.no_grad():
            for k0 in range(0, K, B):
                w = val[starts[k0:k0 + B, None] + offs]
                lg = net(w[:, :-1])
                tot += F.cross_entropy(lg.reshape(-1, lg.shape[-1]), w[:, 1:].reshape(-1)).item() * len(w)
        return {"ms": 1000 * spent / steps, "metric": tot / K}
    x = torch.from_numpy(idx_images(f"{FMNIST}/train-images-idx3-ubyte.gz"))
    if model == "cnn":  # eo-train's CNN: conv32-pool-conv64-pool-fc128-fc10, AdamW 2e-3
        import torch.nn as nn
        y = torch.from_numpy(idx_labels(f"{FMNIST}/train-labels-idx1-ubyte.gz"))
        net = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                            nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(),
                            nn.Linear(128, 10))
        opt = torch.optim.AdamW(net.parameters(), lr=2e-3, weight_decay=0.01)
        x = x.reshape(-1, 1, 28, 28)
        B, spent = 128, 0.0
        perm = torch.randperm(len(x), generator=g)
        for s in range(steps):
            i = perm[(s * B) % (len(x) - B + 1):][:B]
            t0 = time.perf_counter()
            loss = F.cross_entropy(net(x[i]), y[i])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            spent += time.perf_counter() - t0
        import resource
        return {"ms": 1000 * spent / steps, "metric": float(loss.item()),
                "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    y = torch.from_numpy(idx_labels(f"{FMNIST}/train-labels-idx1-ubyte.gz"))
    xt = torch.from_numpy(idx_images(f"{FMNIST}/t10k-images-idx3-ubyte.gz"))[:2000]
    yt = torch.from_numpy(idx_labels(f"{FMNIST}/t10k-labels-idx1-ubyte.gz"))[:2000]
    net = ViT(28, 4, 64, 4, 2, 10)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: (1 + math.cos(math.pi * min(s / steps, 1))) / 2)
    B = 128
    perm = torch.randperm(len(x), generator=g)
    spent = 0.0
    for s in range(steps):
        i = perm[(s * B) % (len(x) - B + 1):][:B]
        t0 = time.perf_counter()
        loss = F.cross_entropy(net(x[i]), y[i])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        spent += time.perf_counter() - t0
    with torch.no_grad():
        acc = (net(xt).argmax(1) == yt).float().mean().item()
    return {"ms": 1000 * spent / steps, "metric": acc}


# ---- the driver ---------------------------------------------------------------

def run_torch(model, steps, tt, blas, seed):
    env = dict(os.environ, OMP_NUM_THREADS=str(tt), OPENBLAS_NUM_THREADS=str(blas),
               MKL_NUM_THREADS=str(blas))
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", model,
                          "--steps", str(steps), "--torch-threads", str(tt), "--seed", str(seed)],
                         env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def run_eo(eo_train, model, steps, threads, seed):
    if model == "gpt":
        cmd = [eo_train, "--model", "gpt", "--steps", str(steps), "--eval-every", "0",
               "--threads", str(threads), "--seed", str(seed), "--quiet"]
    elif model == "cnn":
        cmd = [eo_train, "--model", "cnn", "--steps", str(steps), "--threads", str(threads),
               "--seed", str(seed), "--test-subset", "2000", "--quiet", "--plot", os.devnull]
    else:
        cmd = [eo_train, "--model", "vit", "--steps", str(steps), "--threads", str(threads),
               "--seed", str(seed), "--test-subset", "2000", "--quiet", "--plot", os.devnull]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    ms = float(re.search(r"([\d.]+) ms/step", out).group(1))
    rss = re.search(r"peak resident ([\d.]+) MiB", out)
    if model == "gpt":
        metric = float(re.search(r"done: validation loss ([\d.]+)", out).group(1))
    elif model == "cnn":  # timing only: the step count is too short for accuracy
        return {"ms": ms, "metric": 0.0, "rss": float(rss.group(1)) if rss else 0.0}
    else:
        metric = float(re.search(r"done: test accuracy ([\d.]+)%", out).group(1)) / 100
    return {"ms": ms, "metric": metric}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--eo-train", default="build/eo-train")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--models", default="gpt,vit")  # also: cnn
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--worker")
    ap.add_argument("--torch-threads", type=int, default=1)
    a = ap.parse_args()
    if a.worker:
        print(json.dumps(worker(a.worker, a.steps, a.torch_threads, a.seed)))
        return
    rows = []
    for model in a.models.split(","):
        need = FORTUNES if model == "gpt" else FMNIST
        if not os.path.isdir(need):
            print(f"{model}: skipped ({need} not found)", flush=True)
            continue
        what = "val loss" if model == "gpt" else "test acc" if model == "vit" else "-"
        for n in (int(t) for t in a.threads.split(",")):
            eo = run_eo(a.eo_train, model, a.steps, n, a.seed)
            splits = [(n, n)] + ([(1, n)] if n > 1 else [])
            for tt, blas in splits:
                pt = run_torch(model, a.steps, tt, blas, a.seed)
                rows.append((model, n, f"{tt}+{blas}", eo, pt, what))
                print(f"{model} {n} thread(s): EveryO {eo['ms']:.1f} ms/step {what} {eo['metric']:.4f}; "
                      f"PyTorch (torch {tt} + BLAS {blas}) {pt['ms']:.1f} ms/step {what} "
                      f"{pt['metric']:.4f}"
                      + (f"; peak resident EveryO {eo['rss']:.0f} / PyTorch {pt['rss']:.0f} MiB"
                         if "rss" in eo and "rss" in pt else ""), flush=True)
    print(f"\n{a.steps} training steps each; ratio = EveryO time / PyTorch time (< 1: EveryO faster)")
    print(f"| model | threads | PyTorch threads (torch+BLAS) | EveryO ms/step | PyTorch ms/step | ratio "
          f"| EveryO metric | PyTorch metric |")
    print("|---|---|---|---|---|---|---|---|")
    for model, n, split, eo, pt, what in rows:
        print(f"| {model} | {n} | {split} | {eo['ms']:.1f} | {pt['ms']:.1f} | {eo['ms'] / pt['ms']:.2f} "
              f"| {what} {eo['metric']:.4f} | {what} {pt['metric']:.4f} |")


if __name__ == "__main__":
    main()
