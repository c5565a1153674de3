#!/usr/bin/env python3
"""Two towers run side by side inside one CUDA graph: a forward captured with torch.cuda.graph
whose capture forks onto two side streams (a GEMM-heavy MLP tower and a norm/softmax tower) and
joins them before a final projection, so the graph has parallel branches. One NVTX range "forward"
around each graph.replay(), plus NVTX ranges "tower_a"/"tower_b" open while each tower was captured.

Written to try kjoule on a program nobody tuned it for: per-iteration attribution of a graph whose
kernels overlap, and a topology replay with fork and join edges. Prints one JSON line at the end.
"""
import argparse
import json
import math

import torch
import torch.nn as nn
from torch_steps import capture_graph, timed_steps


class Towers(nn.Module):
    def __init__(self, d, depth):
        super().__init__()
        self.a = nn.ModuleList(nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
                               for _ in range(depth))
        self.b = nn.ModuleList(nn.LayerNorm(d) for _ in range(depth))
        self.out = nn.Linear(2 * d, d)
        self.sa, self.sb = torch.cuda.Stream(), torch.cuda.Stream()

    def forward(self, x):
        main = torch.cuda.current_stream()
        self.sa.wait_stream(main)
        self.sb.wait_stream(main)
        with torch.cuda.stream(self.sa), torch.cuda.nvtx.range("tower_a"):
            ya = x
            for m in self.a:
                ya = ya + m(ya)
        with torch.cuda.stream(self.sb), torch.cuda.nvtx.range("tower_b"):
            yb = x
            for n in self.b:
                yb = torch.softmax(n(yb), dim=-1) * yb.shape[-1]
        main.wait_stream(self.sa)
        main.wait_stream(self.sb)
        return self.out(torch.cat([ya, yb], dim=-1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--depth", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--iters", type=int, default=200)
    a = ap.parse_args()

    torch.manual_seed(0)
    with torch.device("cuda"):
        model = Towers(a.dim, a.depth).half().eval()
    x = torch.randn(a.tokens, a.dim, device="cuda", dtype=torch.half)
    with torch.inference_mode():
        graph, out = capture_graph(lambda: model(x))
        ms = timed_steps(graph.replay, a.iters, warmup=3, range_name="forward")
        assert math.isfinite(float(out.float().abs().sum()))
    print(json.dumps({"forwards": a.iters, "mean_ms": ms, "dim": a.dim, "depth": a.depth}))


if __name__ == "__main__":
    main()
