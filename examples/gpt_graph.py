#!/usr/bin/env python3
"""A GPT-2-medium-shaped decoder (24 layers, hidden 1024, 16 heads; random fp16 weights, built
here, no download) run eagerly, captured whole with torch.cuda.graph, or under
torch.compile(mode="reduce-overhead").

One NVTX range "forward" per forward (around graph.replay() when captured), so kjoule splits the
run into iterations; with a graph, the range closes long before the GPU work runs.
Prints one JSON line with the wall time per forward (ms) at the end.
"""
import argparse
import json
import math
import time

import torch
from nvml_energy import handle as nvml_handle, per_call
from torch_steps import capture_graph
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.up = nn.Linear(d, 4 * d)
        self.down = nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.down(F.gelu(self.up(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, layers=24, d=1024, heads=16, vocab=50257, ctx=1024):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.wte(ids) + self.wpe(pos)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x)[:, -1])


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--mode", choices=["eager", "graph", "compile"], default="graph")
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--iters", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--no-sync", action="store_true",
                    help="forwards back to back: no host synchronisation between them")
    a = ap.parse_args()

    torch.manual_seed(0)
    with torch.device("cuda"):
        model = GPT(layers=a.layers).half().eval()
    ids = torch.randint(0, 50257, (a.batch, a.seq_len), device="cuda")

    with torch.inference_mode():
        if a.mode == "graph":
            graph, static_out = capture_graph(lambda: model(ids))

            def forward():
                graph.replay()
                return static_out
        elif a.mode == "compile":
            compiled = torch.compile(model, mode="reduce-overhead")

            def forward():
                return compiled(ids)
        else:
            def forward():
                return model(ids)

        try:  # NVML's energy counter over the timed forwards, where pynvml is installed
            import pynvml
            pynvml.nvmlInit()
            nv = nvml_handle(pynvml, torch.cuda.current_device())
        except Exception:
            nv = None
        times = []
        e0 = t_all = None
        for i in range(a.warmup + a.iters):
            if i == a.warmup:
                torch.cuda.synchronize()
                e0 = pynvml.nvmlDeviceGetTotalEnergyConsumption(nv) if nv else None
                t_all = time.perf_counter()
            if not a.no_sync:
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            torch.cuda.nvtx.range_push("forward")
            out = forward()
            torch.cuda.nvtx.range_pop()
            if not a.no_sync:
                torch.cuda.synchronize()
            if i >= a.warmup:
                times.append((time.perf_counter() - t0) * 1e3)
        torch.cuda.synchronize()
        wall = time.perf_counter() - t_all
        e1 = pynvml.nvmlDeviceGetTotalEnergyConsumption(nv) if nv else None
        assert math.isfinite(float(out.float().abs().sum()))
    times.sort()
    energy, why = per_call(e0, e1, wall, len(times), nv is not None)
    print(json.dumps({"mode": a.mode, "forwards": len(times), "median_ms": times[len(times) // 2],
                      "min_ms": times[0], "mean_ms": wall * 1e3 / len(times),
                      "energy_j_per_forward_nvml": energy, "energy_not_measured": why,
                      "energy_window_s": wall}))


if __name__ == "__main__":
    main()
