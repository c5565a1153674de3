#!/usr/bin/env python3
"""ResNet-50 (torchvision, random weights, no download), channels-last fp16, cudnn.benchmark on:
cuDNN tries many candidate kernels in warm-up, then the forwards use a few of them.
One NVTX range "forward" per forward. Prints one JSON line at the end."""
import argparse
import json
import time

import torch
import torchvision


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    a = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None).cuda().half().eval()
    model = model.to(memory_format=torch.channels_last)
    x = torch.randn(a.batch, 3, 224, 224, device="cuda", dtype=torch.half)
    x = x.to(memory_format=torch.channels_last)
    times = []
    with torch.inference_mode():
        for i in range(a.warmup + a.iters):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            torch.cuda.nvtx.range_push("forward")
            y = model(x)
            torch.cuda.nvtx.range_pop()
            torch.cuda.synchronize()
            if i >= a.warmup:
                times.append((time.perf_counter() - t0) * 1e3)
    assert torch.isfinite(y.float()).all()
    times.sort()
    print(json.dumps({"batch": a.batch, "forwards": len(times), "median_ms": times[len(times) // 2]}))


if __name__ == "__main__":
    main()
