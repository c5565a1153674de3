#!/usr/bin/env python3
"""A jitted JAX training step: a two-block transformer (fp32 parameters, bf16 compute), its loss
and gradients (jax.value_and_grad) and an Adam update, all in one jit whose parameters and
optimizer state are donated, run for N steps, one NVTX range "step" per step.

Written to try kjoule on a program nobody tuned it for: XLA runs the step as command buffers
(CUDA graphs) of cuBLAS GEMMs and Triton/XLA fusions, backward included. NVTX comes from
torch.cuda.nvtx (torch creates no CUDA context here). Prints one JSON line at the end.
"""
import argparse
import json
import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax_step import block, init, timed_steps  # noqa: E402


def loss_fn(params, x, y, heads):
    """Mean squared error of the stacked blocks' output against y, computed in bf16."""
    h = x
    for p in params:
        h = block(jax.tree_util.tree_map(lambda w: w.astype(jnp.bfloat16), p), h, heads)
    return jnp.mean((h.astype(jnp.float32) - y.astype(jnp.float32)) ** 2)


def adam(params, grads, m, v, t, lr=1e-4, b1=0.9, b2=0.999, eps=1e-8):
    """One Adam update of every leaf; returns the new parameters, moments and step count."""
    t = t + 1
    m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
    v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
    c1, c2 = 1 - b1 ** t, 1 - b2 ** t
    params = jax.tree_util.tree_map(lambda p, m, v: p - lr * (m / c1) / (jnp.sqrt(v / c2) + eps),
                                    params, m, v)
    return params, m, v, t


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--blocks", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=512)
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    a = ap.parse_args()

    keys = jax.random.split(jax.random.PRNGKey(0), a.blocks + 2)
    params = [jax.tree_util.tree_map(lambda w: w.astype(jnp.float32), init(k, a.dim, 4 * a.dim))
              for k in keys[:a.blocks]]
    x = jax.random.normal(keys[-2], (a.batch, a.seq_len, a.dim), jnp.bfloat16)
    y = jax.random.normal(keys[-1], (a.batch, a.seq_len, a.dim), jnp.bfloat16)
    zeros = lambda: jax.tree_util.tree_map(jnp.zeros_like, params)  # noqa: E731
    state = {"p": params, "m": zeros(), "v": zeros(), "t": jnp.zeros((), jnp.float32)}

    def train(state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(state["p"], x, y, a.heads)
        p, m, v, t = adam(state["p"], grads, state["m"], state["v"], state["t"])
        return {"p": p, "m": m, "v": v, "t": t}, loss

    train = jax.jit(train, donate_argnums=0)
    state, loss = train(state, x, y)  # compile (XLA autotunes here)
    loss.block_until_ready()
    first = float(loss)
    box = {"state": state}

    def step():
        box["state"], out = train(box["state"], x, y)
        return out

    last, figures = timed_steps(step, a.steps)
    figures.update({"loss_first": first, "loss_last": float(last), "blocks": a.blocks})
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
