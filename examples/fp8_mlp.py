#!/usr/bin/env python3
"""An FP8 feed-forward block in eager PyTorch, as FP8 inference and training recipes run it on
Hopper: layer norm in bf16, the activations quantised to float8_e4m3fn with a per-tensor scale,
two `torch._scaled_mm` GEMMs (cuBLASLt's FP8 kernels, bf16 out), GELU and the residual add.
One NVTX range "step" per forward. Weights and inputs are random; the result is checked once
against the same block in bf16 on the dequantised weights.
Prints one JSON line at the end: ms per step.
"""
import argparse
import json

import torch
from torch_steps import timed_steps

F8 = torch.float8_e4m3fn
F8_MAX = torch.finfo(F8).max


def quantise(t):
    """t as float8 with a per-tensor scale (amax / F8_MAX), and that scale (fp32, on the GPU)."""
    scale = (t.abs().amax().float() / F8_MAX).clamp(min=1e-12)
    return (t / scale).to(F8), scale


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--dim", type=int, default=4096)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=10)
    a = ap.parse_args()
    torch.manual_seed(0)
    dev = "cuda"
    d, ff = a.dim, 4 * a.dim
    w1 = torch.randn(ff, d, device=dev, dtype=torch.bfloat16) / d ** 0.5
    w2 = torch.randn(d, ff, device=dev, dtype=torch.bfloat16) / ff ** 0.5
    w1q, s1 = quantise(w1)
    w2q, s2 = quantise(w2)
    x = torch.randn(a.tokens, d, device=dev, dtype=torch.bfloat16)

    def block(x):
        h = torch.nn.functional.layer_norm(x, (d,))
        hq, sh = quantise(h)
        u = torch._scaled_mm(hq, w1q.t(), scale_a=sh, scale_b=s1, out_dtype=torch.bfloat16)
        u = torch.nn.functional.gelu(u, approximate="tanh")
        uq, su = quantise(u)
        y = torch._scaled_mm(uq, w2q.t(), scale_a=su, scale_b=s2, out_dtype=torch.bfloat16)
        return x + y

    with torch.no_grad():
        got = block(x)
        h = torch.nn.functional.layer_norm(x, (d,))
        u = torch.nn.functional.gelu(h @ (w1q.to(torch.bfloat16) * s1.to(torch.bfloat16)).t(), approximate="tanh")
        ref = x + u @ (w2q.to(torch.bfloat16) * s2.to(torch.bfloat16)).t()
        err = ((got.float() - ref.float()).norm() / ref.float().norm()).item()
        if not err < 0.1:
            raise SystemExit(f"fp8_mlp: FP8 block differs from its bf16 reference: relative error {err:.3f}")
        ms = timed_steps(lambda: block(x), a.iters, a.warmup)
    print(json.dumps({"program": "fp8_mlp", "tokens": a.tokens, "dim": d, "ms_per_step": round(ms, 4),
                      "rel_error_vs_bf16": round(err, 4)}))


if __name__ == "__main__":
    main()
