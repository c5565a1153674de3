"""What the PyTorch examples share: the timed loop (warm-up calls, then each step inside an NVTX
range, the iteration kjoule compare finds, with the GPU synchronised before and after the loop), a
training loop on it, and the capture of a step into a CUDA graph."""
import math
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


def train_steps(loss_fn, opt, steps, warmup):
    """Trains for warmup untimed steps, then steps timed ones (timed_steps, NVTX range "step"): each
    loss_fn() under bf16 autocast, its backward, opt.step() and opt.zero_grad(set_to_none=True).
    Returns (mean ms per timed step, first loss, last loss); asserts both losses are finite."""
    losses = []

    def step():
        with torch.autocast("cuda", torch.bfloat16):
            loss = loss_fn()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.detach())

    ms = timed_steps(step, steps, warmup=warmup)
    first, last = float(losses[0]), float(losses[-1])
    assert math.isfinite(first) and math.isfinite(last), (first, last)
    return ms, first, last
