#!/usr/bin/env python3
"""A transformer feed-forward block under torch.compile(mode="max-autotune"): Inductor benchmarks
Triton GEMM templates against cuBLAS for each matrix product while it compiles (hundreds of
candidate kernels that run only then), fuses the pointwise work into Triton kernels, and runs the
chosen ones in CUDA graphs. One NVTX range "step" per forward. Weights and inputs are random
(fp16); the compiled block is checked once against the same block run eagerly.
Prints one JSON line at the end: ms per step.
"""
import argparse
import json

import torch
from torch_steps import timed_steps


class FeedForward(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = torch.nn.LayerNorm(dim)
        self.up = torch.nn.Linear(dim, 4 * dim)
        self.down = torch.nn.Linear(4 * dim, dim)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--iters", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=5)
    a = ap.parse_args()
    torch.manual_seed(0)
    m = FeedForward(a.dim).cuda().half().eval()
    x = torch.randn(a.tokens, a.dim, device="cuda", dtype=torch.half)
    fast = torch.compile(m, mode="max-autotune")
    with torch.no_grad():
        ref = m(x)
        got = fast(x).clone()
        err = ((got.float() - ref.float()).norm() / ref.float().norm()).item()
        if not err < 0.01:
            raise SystemExit(f"compile_autotune: compiled block differs from eager: relative error {err:.4f}")
        ms = timed_steps(lambda: fast(x), a.iters, a.warmup)
    print(json.dumps({"program": "compile_autotune", "tokens": a.tokens, "dim": a.dim,
                      "ms_per_step": round(ms, 4), "rel_error_vs_eager": round(err, 5)}))


if __name__ == "__main__":
    main()
