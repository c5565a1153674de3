#!/usr/bin/env python3
"""A jitted JAX transformer block (bf16) run for N steps, one NVTX range "step" per step.

XLA runs each jitted step as a CUDA graph built node by node (command buffers, on by default),
and emits NVTX ranges of its own (XlaModule:..., Thunk:...). NVTX comes from torch.cuda.nvtx
(torch is only used for that; it creates no CUDA context here). Prints one JSON line at the end.
"""
import argparse
import json
import os
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import torch.cuda.nvtx as nvtx  # noqa: E402
from nvml_energy import handle as nvml_handle, per_call  # noqa: E402


def init(key, d, f):
    ks = jax.random.split(key, 6)
    s = 0.02
    return {
        "wqkv": jax.random.normal(ks[0], (d, 3 * d), jnp.bfloat16) * s,
        "wo": jax.random.normal(ks[1], (d, d), jnp.bfloat16) * s,
        "w1": jax.random.normal(ks[2], (d, f), jnp.bfloat16) * s,
        "w2": jax.random.normal(ks[3], (f, d), jnp.bfloat16) * s,
        "g1": jnp.ones((d,), jnp.bfloat16),
        "g2": jnp.ones((d,), jnp.bfloat16),
    }


def rms(x, g):
    x32 = x.astype(jnp.float32)
    return (x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, -1, keepdims=True) + 1e-6)).astype(x.dtype) * g


def block(p, x, heads):
    b, t, d = x.shape
    q, k, v = jnp.split(rms(x, p["g1"]) @ p["wqkv"], 3, axis=-1)
    q, k, v = (z.reshape(b, t, heads, d // heads) for z in (q, k, v))
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k).astype(jnp.float32) / jnp.sqrt(d / heads)
    mask = jnp.tril(jnp.ones((t, t), bool))
    a = jax.nn.softmax(jnp.where(mask, s, -1e30), axis=-1).astype(x.dtype)
    o = jnp.einsum("bhqk,bkhd->bqhd", a, v).reshape(b, t, d)
    x = x + o @ p["wo"]
    return x + jax.nn.gelu(rms(x, p["g2"]) @ p["w1"]) @ p["w2"]


def timed_steps(run, steps):
    """Calls run() (it launches one step and returns its output) `steps` times, each inside an NVTX
    range "step" that closes when the launch returns, then waits for the step. NVML's energy counter
    is read around the whole loop. Returns the last output and the figures the examples print."""
    try:  # NVML's energy counter over the timed steps (host waits between them included)
        import pynvml
        pynvml.nvmlInit()
        nv = nvml_handle(pynvml, 0, use_torch=False)
    except Exception:
        nv = None
    times = []
    e0 = pynvml.nvmlDeviceGetTotalEnergyConsumption(nv) if nv else None
    t_all = time.perf_counter()
    for _ in range(steps):
        t0 = time.perf_counter()
        nvtx.range_push("step")
        y = run()
        nvtx.range_pop()
        y.block_until_ready()
        times.append((time.perf_counter() - t0) * 1e3)
    wall = time.perf_counter() - t_all
    e1 = pynvml.nvmlDeviceGetTotalEnergyConsumption(nv) if nv else None
    assert bool(jnp.isfinite(y.astype(jnp.float32)).all())
    times.sort()
    energy, why = per_call(e0, e1, wall, len(times), nv is not None)
    return y, {"steps": len(times), "median_ms": times[len(times) // 2], "mean_period_ms": wall * 1e3 / len(times),
               "energy_j_per_step_nvml": energy, "energy_not_measured": why, "energy_window_s": wall}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=512)
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    a = ap.parse_args()

    p = init(jax.random.PRNGKey(0), a.dim, 4 * a.dim)
    x = jax.random.normal(jax.random.PRNGKey(1), (a.batch, a.seq_len, a.dim), jnp.bfloat16)
    step = jax.jit(lambda p, x: block(p, x, a.heads))
    step(p, x).block_until_ready()  # compile (XLA autotunes here)
    _, figures = timed_steps(lambda: step(p, x), a.steps)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
