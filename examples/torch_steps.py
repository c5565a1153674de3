"""The timed loop the PyTorch examples share: warm-up calls, then each step inside an NVTX range
(the iteration kjoule compare finds), with the GPU synchronised before and after the loop."""
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
