#!/usr/bin/env python3
"""A second workload for kjoule, of other kernel families than BLOOM's: a small ResNet-style CNN
(cuDNN convolutions, batch norm, ReLU, pooling) whose feature map then goes through a block of
scaled-dot-product attention (torch's fused SDPA kernels), in fp16 with random weights.

One NVTX range "forward" per forward pass. Prints one JSON line with the wall time per forward.
"""
import argparse
import json
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.skip = None if stride == 1 and cin == cout else nn.Sequential(
            nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return F.relu(y + (x if self.skip is None else self.skip(x)))


class ConvAttn(nn.Module):
    def __init__(self, width=64, heads=8, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        chans = [width, width * 2, width * 4, width * 8]
        layers, cin = [], width
        for i, c in enumerate(chans):
            layers += [Block(cin, c, 1 if i == 0 else 2), Block(c, c, 1)]
            cin = c
        self.body = nn.Sequential(*layers)
        self.heads = heads
        self.qkv = nn.Linear(cin, 3 * cin)
        self.proj = nn.Linear(cin, cin)
        self.norm = nn.LayerNorm(cin)
        self.head = nn.Linear(cin, classes)

    def forward(self, x):
        f = self.body(self.stem(x))                      # B, C, H, W
        t = f.flatten(2).transpose(1, 2)                  # B, HW, C
        b, n, c = t.shape
        q, k, v = self.qkv(self.norm(t)).view(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v)       # B, heads, HW, C/heads
        t = t + self.proj(a.transpose(1, 2).reshape(b, n, c))
        return self.head(t.mean(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    torch.backends.cudnn.benchmark = False  # the same convolution algorithms in every run
    with torch.device("cuda"):
        model = ConvAttn().to(torch.float16).eval()
    x = torch.randn(a.batch, 3, a.size, a.size, device="cuda", dtype=torch.float16)
    times = []
    with torch.inference_mode():
        for i in range(a.warmup + a.iters):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            torch.cuda.nvtx.range_push("forward")
            out = model(x)
            torch.cuda.nvtx.range_pop()
            torch.cuda.synchronize()
            if i >= a.warmup:
                times.append((time.perf_counter() - t0) * 1e3)
    assert torch.isfinite(out.float()).all(), "non-finite output"
    times.sort()
    print(json.dumps({"model": "convattn", "batch": a.batch, "size": a.size, "iters": a.iters,
                      "forward_ms_median": times[len(times) // 2],
                      "forward_ms_mean": sum(times) / len(times),
                      "forward_ms_min": times[0], "forward_ms_max": times[-1]}))


if __name__ == "__main__":
    main()
