"""What the PyTorch examples share: the timed loop (warm-up calls, then each step inside an NVTX
range, the iteration kjoule compare finds, with the GPU synchronised before and after the loop) and
the capture of a step into a CUDA graph."""
import time

import torch
import torch.cuda.nvtx as nvtx


def timed_steps(step, iters, warmup=0, range_name="step"):
    """Calls step() warmup times untimed, then iters times, each inside an NVTX range named
    range_name (none when None); returns the mean wall time per step in ms."""
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(iters):
        if range_name:
            with nvtx.range(range_name):
                step()
        else:
            step()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) * 1e3 / iters


def capture_graph(fn, warmup=3):
    """Runs fn() warmup times on a side stream (as torch.cuda.graph asks), then captures one call
    into a CUDA graph; returns (graph, what the captured call returned)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    return graph, out
