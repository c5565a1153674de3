#!/usr/bin/env python3
"""FlexAttention training steps: causal attention with a sliding window written as a mask
function, compiled by torch.compile into Triton kernels (forward and backward) that skip the
masked blocks through a block mask. One NVTX range "step" per forward + backward.
Inputs are random (bf16); the forward and the query gradient are checked once against PyTorch's
scaled_dot_product_attention with the same mask as a dense boolean tensor.
Prints one JSON line at the end: ms per step.
"""
import argparse
import json

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention
from torch_steps import timed_steps


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--window", type=int, default=512)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=5)
    a = ap.parse_args()
    torch.manual_seed(0)
    dev = "cuda"
    win = a.window

    def sliding_causal(b, h, q, kv):
        return (q >= kv) & (q - kv < win)

    mask = create_block_mask(sliding_causal, B=None, H=None, Q_LEN=a.seq, KV_LEN=a.seq, device=dev)
    attn = torch.compile(flex_attention)
    shape = (a.batch, a.heads, a.seq, a.head_dim)
    q, k, v = (torch.randn(shape, device=dev, dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    go = torch.randn(shape, device=dev, dtype=torch.bfloat16)

    def step():
        q.grad = k.grad = v.grad = None
        o = attn(q, k, v, block_mask=mask)
        o.backward(go)
        return o

    o = step()
    dq = q.grad.clone()
    q.grad = k.grad = v.grad = None
    i = torch.arange(a.seq, device=dev)
    dense = (i[:, None] >= i[None, :]) & (i[:, None] - i[None, :] < win)
    o_ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=dense)
    o_ref.backward(go)
    err_o = ((o.float() - o_ref.float()).norm() / o_ref.float().norm()).item()
    err_dq = ((dq.float() - q.grad.float()).norm() / q.grad.float().norm()).item()
    if not (err_o < 0.02 and err_dq < 0.05):
        raise SystemExit(f"flex_attention: differs from SDPA: output {err_o:.4f}, dq {err_dq:.4f}")
    ms = timed_steps(step, a.iters, a.warmup)
    print(json.dumps({"program": "flex_attention", "seq": a.seq, "window": win, "ms_per_step": round(ms, 4),
                      "rel_error_o": round(err_o, 5), "rel_error_dq": round(err_dq, 5)}))


if __name__ == "__main__":
    main()
