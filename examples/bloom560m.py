#!/usr/bin/env python3
"""BLOOM-560M inference with random fp16 weights, built from its config (no download).

One NVTX range "forward" per forward pass, so kjoule can split the run into iterations.
Prints one JSON line with the wall time per forward (ms) at the end.
"""
import argparse
import json
import time

import torch
from transformers import BloomConfig, BloomForCausalLM


def bloom560m_config():
    # bigscience/bloom-560m dimensions
    return BloomConfig(vocab_size=250880, hidden_size=1024, n_layer=24, n_head=16,
                       layer_norm_epsilon=1e-5, initializer_range=0.02, use_cache=False,
                       apply_residual_connection_post_layernorm=False, hidden_dropout=0.0,
                       attention_dropout=0.0, bos_token_id=1, eos_token_id=2, pad_token_id=3)


def build_bloom560m(seq_len=5, batch=1, seed=0):
    """BLOOM-560M on the GPU with random fp16 weights (seeded), in eval mode, and random input ids."""
    torch.manual_seed(seed)
    torch.backends.cuda.matmul.allow_tf32 = False
    with torch.device("cuda"):
        model = BloomForCausalLM(bloom560m_config()).to(torch.float16).eval()
    ids = torch.randint(0, 250880, (batch, seq_len), device="cuda")
    return model, ids


def timed_forward(forward, ids):
    """One forward inside the NVTX range "forward", the GPU synchronised before and after:
    (wall ms, output)."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    torch.cuda.nvtx.range_push("forward")
    out = forward(input_ids=ids)
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3, out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seq-len", type=int, default=5)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--cuda-graph", action="store_true",
                    help="capture the forward once and replay it (torch.compile reduce-overhead: "
                         "HF BLOOM copies a CPU scalar inside forward, so torch.cuda.graph cannot)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--torch-profiler", action="store_true",
                    help="run the timed loop under torch.profiler (CPU+CUDA), for overhead comparisons")
    a = ap.parse_args()

    model, ids = build_bloom560m(a.seq_len, a.batch, a.seed)
    forward = model
    if a.cuda_graph:
        forward = torch.compile(model, mode="reduce-overhead", fullgraph=False)

    times = []
    prof = None
    if a.torch_profiler:
        from torch.profiler import ProfilerActivity, profile
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        prof.__enter__()
    with torch.inference_mode():
        for i in range(a.warmup + a.iters):
            ms, out = timed_forward(forward, ids)
            if i >= a.warmup:
                times.append(ms)
    if prof is not None:
        prof.__exit__(None, None, None)
    logits = out.logits.float()
    assert torch.isfinite(logits).all(), "non-finite logits"
    times.sort()
    print(json.dumps({"model": "bloom-560m", "seq_len": a.seq_len, "batch": a.batch,
                      "cuda_graph": a.cuda_graph, "iters": a.iters,
                      "forward_ms_median": times[len(times) // 2],
                      "forward_ms_mean": sum(times) / len(times),
                      "forward_ms_p10": times[len(times) // 10],
                      "forward_ms_min": times[0], "forward_ms_max": times[-1]}))


if __name__ == "__main__":
    main()
