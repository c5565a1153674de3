#!/usr/bin/env python3
"""A serving-style decode loop through Hugging Face transformers: a Llama-shaped model built from
its config (random fp16 weights, no download) answers a stream of requests with
`model.generate()`. With `--cache static` (the default) transformers compiles the decode step
(torch.compile, CUDA graphs), as serving setups do; `--cache dynamic` decodes eagerly.

One NVTX range "request" per generate() call: one prefill and --new-tokens - 1 decode steps.
With --token-ranges, also one range "token" per generated token (a logits processor closes one
and opens the next), as a user who wants per-token figures would add.
Prints one JSON line at the end: ms per request and per token, tokens per second.
"""
import argparse
import json
import time

import torch
import torch.cuda.nvtx as nvtx
from transformers import LlamaConfig, LlamaForCausalLM, LogitsProcessor, LogitsProcessorList


class TokenRanges(LogitsProcessor):
    """Closes the range of the token just computed and opens the next one."""

    def __init__(self):
        self.open = False

    def __call__(self, input_ids, scores):
        if self.open:
            nvtx.range_pop()
        nvtx.range_push("token")
        self.open = True
        return scores

    def close(self):
        if self.open:
            nvtx.range_pop()
            self.open = False


def build_decoder(layers=8, hidden=1024, heads=16, kv_heads=8, batch=4, prompt=64, new_tokens=32,
                  cache="static"):
    """The Llama-shaped model on the GPU (random fp16 weights, seed 0), a batch of prompts, their
    mask and generate()'s arguments: (model, ids, mask, gen)."""
    torch.manual_seed(0)
    cfg = LlamaConfig(hidden_size=hidden, intermediate_size=int(hidden * 2.75) // 64 * 64,
                      num_hidden_layers=layers, num_attention_heads=heads,
                      num_key_value_heads=kv_heads, vocab_size=32000,
                      max_position_embeddings=prompt + new_tokens + 64)
    model = LlamaForCausalLM(cfg).to(device="cuda", dtype=torch.float16).eval()
    ids = torch.randint(3, cfg.vocab_size, (batch, prompt), device="cuda")
    mask = torch.ones_like(ids)
    gen = dict(max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
               pad_token_id=0, eos_token_id=None)
    if cache == "static":
        gen["cache_implementation"] = "static"
    return model, ids, mask, gen


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--prompt", type=int, default=64)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--requests", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=3, help="requests before the measured ones")
    ap.add_argument("--cache", choices=["static", "dynamic"], default="static")
    ap.add_argument("--token-ranges", action="store_true")
    a = ap.parse_args()

    model, ids, mask, gen = build_decoder(a.layers, a.hidden, a.heads, a.kv_heads, a.batch, a.prompt,
                                          a.new_tokens, a.cache)
    ranges = TokenRanges() if a.token_ranges else None
    if ranges:
        gen["logits_processor"] = LogitsProcessorList([ranges])

    times = []
    first, differ = None, 0  # greedy decoding of one prompt: every request's tokens are the same
    with torch.inference_mode():
        for r in range(a.warmup + a.requests):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            nvtx.range_push("request")
            out = model.generate(input_ids=ids, attention_mask=mask, **gen)
            if ranges:
                ranges.close()
            nvtx.range_pop()
            torch.cuda.synchronize()
            if r >= a.warmup:
                times.append(time.perf_counter() - t0)
            if first is None:
                first = out.clone()
            elif not torch.equal(out, first):
                differ += 1
    new = out.shape[1] - a.prompt
    ms = 1e3 * sorted(times)[len(times) // 2]
    print(json.dumps({"model": "llama-shaped", "layers": a.layers, "hidden": a.hidden,
                      "batch": a.batch, "prompt": a.prompt, "new_tokens": new,
                      "cache": a.cache, "requests": a.requests, "ms_per_request": ms,
                      "ms_per_token": ms / new, "tokens_per_s": a.batch * new / (ms / 1e3),
                      "requests_unlike_the_first": differ,
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
