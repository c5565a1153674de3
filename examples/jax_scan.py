#!/usr/bin/env python3
"""A jitted JAX model whose layers run in a loop on the device: N steps, one NVTX range "step" each.

Real JAX models stack their layers' weights and run them with `jax.lax.scan` (Flax's nn.scan,
MaxText's scanned layers); a decode loop runs with `jax.lax.while_loop` until a count read on the
device. XLA keeps such loops on the GPU as while loops: inside a command buffer they become CUDA
graph conditional (WHILE) nodes, or the loop runs on the host, one predicate copy a trip. Either
way one step's GPU work is a loop, not a flat list of kernels: the program kjoule's graph
attribution and replay have to survive. Transformer blocks as in examples/jax_step.py (bf16).
Prints one JSON line at the end.
"""
import argparse
import json
import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax_step import block, init, timed_steps  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--loop", choices=("scan", "while"), default="scan",
                    help="scan: lax.scan over the stacked layers; while: lax.while_loop until a device-side count")
    a = ap.parse_args()

    keys = jax.random.split(jax.random.PRNGKey(0), a.layers)
    layers = [init(k, a.dim, 4 * a.dim) for k in keys]
    stacked = jax.tree_util.tree_map(lambda *w: jnp.stack(w), *layers)
    x = jax.random.normal(jax.random.PRNGKey(1), (a.batch, a.seq_len, a.dim), jnp.bfloat16)

    def scanned(p, x):
        y, _ = jax.lax.scan(lambda h, w: (block(w, h, a.heads), None), x, p)
        return y

    def looped(p, x, n):
        def body(c):
            i, h = c
            w = jax.tree_util.tree_map(lambda t: jax.lax.dynamic_index_in_dim(t, i % a.layers, keepdims=False), p)
            return i + 1, block(w, h, a.heads)
        return jax.lax.while_loop(lambda c: c[0] < n, body, (jnp.int32(0), x))[1]

    if a.loop == "scan":
        step = jax.jit(scanned)
        args = (stacked, x)
    else:
        step = jax.jit(looped)
        args = (stacked, x, jnp.int32(a.layers))
    step(*args).block_until_ready()  # compile (XLA autotunes here)
    _, figures = timed_steps(lambda: step(*args), a.steps)
    print(json.dumps({"loop": a.loop, "layers": a.layers, **figures}))


if __name__ == "__main__":
    main()
