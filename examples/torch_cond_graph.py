#!/usr/bin/env python3
"""A PyTorch step with data-dependent control flow captured in a CUDA graph, one NVTX range "step"
per replay.

`torch.cond` picks one of two MLP branches by a predicate computed on the GPU; captured with
`torch.cuda.graph`, PyTorch can keep the choice on the device as a CUDA graph conditional (IF)
node instead of copying the predicate to the host. Whether this PyTorch does is printed (and
whether capture worked at all); either way the program is one a user would write, for kjoule to
trace. PyTorch 2.11 on the GPU machine's image cannot capture it (untraced as under kjoule,
2026-11-27: "operation failed due to a previous error during capture"), and the step runs eagerly
with the predicate read on the host. Random weights; prints one JSON line at the end.
"""
import argparse
import json
import time

import torch
import torch.cuda.nvtx as nvtx
from torch_steps import capture_graph


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--dim", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=512)
    a = ap.parse_args()
    dev = "cuda"
    torch.manual_seed(0)
    w1 = torch.randn(a.dim, a.dim, device=dev, dtype=torch.float16) * 0.02
    w2 = torch.randn(a.dim, a.dim, device=dev, dtype=torch.float16) * 0.02
    x = torch.randn(a.batch, a.dim, device=dev, dtype=torch.float16)

    def branch_a(x):
        return torch.relu(x @ w1) @ w2

    def branch_b(x):
        return torch.nn.functional.gelu(x @ w2) @ w1

    def step(x):
        pred = x.float().mean() > 0
        y = torch.cond(pred, branch_a, branch_b, (x,))
        return torch.layer_norm(x + y, (a.dim,))

    mode = "graph"
    try:
        g, out = capture_graph(lambda: step(x))
        run = g.replay
    except Exception as e:  # this PyTorch cannot capture torch.cond: run it eagerly
        mode = f"eager ({type(e).__name__}: {str(e).splitlines()[0][:120]})"
        torch.cuda.synchronize()

        def run():
            step(x)
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        nvtx.range_push("step")
        run()
        nvtx.range_pop()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    if mode == "graph":
        assert torch.isfinite(out.float()).all()
    times.sort()
    print(json.dumps({"mode": mode, "steps": len(times), "median_ms": times[len(times) // 2]}))


if __name__ == "__main__":
    main()
