#!/usr/bin/env python3
"""Work on two CUDA streams at once, as overlapped pipelines do: each step runs a chain of GEMMs
on one stream while another stream normalises and reduces a second tensor; events order them,
and the step ends when both are done (the GEMM stream waits for the other). Kernels of the two
streams overlap in time, so the sum of kernel times exceeds the GPU's busy time.
One NVTX range "step" per step. Prints one JSON line at the end: ms per step and, from a run of
each stream alone, how much of the shorter one overlapped.
"""
import argparse
import json

import torch
from torch_steps import timed_steps


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dim", type=int, default=2048)
    ap.add_argument("--rows", type=int, default=8192)
    ap.add_argument("--iters", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=10)
    a = ap.parse_args()
    torch.manual_seed(0)
    dev = "cuda"
    mm_stream, aux_stream = torch.cuda.Stream(), torch.cuda.Stream()
    w = [torch.randn(a.dim, a.dim, device=dev, dtype=torch.half) / a.dim ** 0.5 for _ in range(4)]
    x = torch.randn(a.dim, a.dim, device=dev, dtype=torch.half)
    y = torch.randn(a.rows, a.dim, device=dev, dtype=torch.half)
    out = {}

    def gemms():
        h = x
        for wi in w:
            h = torch.relu(h @ wi)
        out["h"] = h

    def aux():
        z = torch.nn.functional.layer_norm(y, (a.dim,))
        out["s"] = torch.softmax(z.float(), dim=-1).sum(dim=0)

    def step(use_mm=True, use_aux=True):
        start = torch.cuda.Event()
        start.record()
        if use_aux:
            with torch.cuda.stream(aux_stream):
                aux_stream.wait_event(start)
                aux()
        if use_mm:
            with torch.cuda.stream(mm_stream):
                mm_stream.wait_event(start)
                gemms()
        torch.cuda.current_stream().wait_stream(mm_stream)
        torch.cuda.current_stream().wait_stream(aux_stream)

    with torch.no_grad():
        for _ in range(a.warmup):
            step()
        alone_mm = timed_steps(lambda: step(use_aux=False), 50, range_name=None)
        alone_aux = timed_steps(lambda: step(use_mm=False), 50, range_name=None)
        ms = timed_steps(step, a.iters)
    print(json.dumps({"program": "two_streams", "ms_per_step": round(ms, 4), "gemm_stream_alone_ms": round(alone_mm, 4),
                      "aux_stream_alone_ms": round(alone_aux, 4),
                      "overlap_ms": round(alone_mm + alone_aux - ms, 4)}))


if __name__ == "__main__":
    main()
