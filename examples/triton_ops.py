#!/usr/bin/env python3
"""Hand-written Triton kernels in a loop: a row softmax and a tiled matmul with a fused ReLU,
each compiled by Triton at first call (its own cubins, launched through its own launcher), one
NVTX range "step" per iteration. Inputs are random; outputs are checked against PyTorch once.
Prints one JSON line at the end: ms per step.
"""
import argparse
import json
import time

import torch
import torch.cuda.nvtx as nvtx
import triton
import triton.language as tl


@triton.jit
def softmax_rows(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    ok = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=ok, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(y_ptr + row * stride + cols, (e / tl.sum(e, axis=0)).to(y_ptr.dtype.element_ty), mask=ok)


@triton.jit
def matmul_relu(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * sam + (k0 + rk)[None, :] * sak,
                    mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k0 + rk)[:, None] * sbk + rn[None, :] * sbn,
                    mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    acc = tl.maximum(acc, 0.0)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def softmax(x):
    y = torch.empty_like(x)
    softmax_rows[(x.shape[0],)](x, y, x.shape[1], x.stride(0), BLOCK=triton.next_power_of_2(x.shape[1]))
    return y


def mm_relu(a, b):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = (triton.cdiv(M, 128), triton.cdiv(N, 128))
    matmul_relu[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                      c.stride(0), c.stride(1), BM=128, BN=128, BK=64, num_warps=8, num_stages=3)
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--m", type=int, default=4096)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--k", type=int, default=2048)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    a = ap.parse_args()
    torch.manual_seed(0)
    x = torch.randn(a.m, a.k, device="cuda", dtype=torch.float16)
    w = torch.randn(a.k, a.n, device="cuda", dtype=torch.float16) / a.k ** 0.5
    c = mm_relu(x, w)
    assert torch.allclose(c, torch.relu(x @ w), atol=2e-2, rtol=2e-2), "matmul_relu is wrong"
    s = softmax(c)
    assert torch.allclose(s, torch.softmax(c.float(), dim=1).half(), atol=1e-3), "softmax is wrong"
    times = []
    for i in range(a.warmup + a.iters):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        nvtx.range_push("step")
        s = softmax(mm_relu(x, w))
        nvtx.range_pop()
        torch.cuda.synchronize()
        if i >= a.warmup:
            times.append(time.perf_counter() - t0)
    print(json.dumps({"program": "triton_ops", "m": a.m, "n": a.n, "k": a.k,
                      "ms_per_step": 1e3 * sorted(times)[len(times) // 2],
                      "triton": triton.__version__, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
