#!/usr/bin/env python3
"""A GPT-2-shaped decoder (examples/gpt_graph.py's model; random weights, no download) trained under
torch.compile: forward, cross entropy and backward through Inductor's Triton kernels (AOTAutograd),
bf16 autocast over fp32 parameters, fused AdamW, for N steps, each in an NVTX range "step".

Written to try kjoule on a program nobody tuned it for: a compiled training step (--mode default
launches Inductor's kernels one by one; --mode reduce-overhead runs them as CUDA graphs).
Prints one JSON line at the end.
"""
import argparse
import json

import torch
import torch.nn.functional as F
from gpt_graph import GPT
from torch_steps import train_steps


class LM(torch.nn.Module):
    """GPT with a loss over every position (gpt_graph's GPT predicts the last token only)."""

    def __init__(self, layers, vocab):
        super().__init__()
        self.gpt = GPT(layers=layers, vocab=vocab)

    def forward(self, ids, targets):
        g = self.gpt
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = g.wte(ids) + g.wpe(pos)
        for blk in g.blocks:
            x = blk(x)
        logits = g.head(g.ln(x))
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.view(-1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=["default", "reduce-overhead", "max-autotune-no-cudagraphs"],
                    default="default")
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=512)
    ap.add_argument("--vocab", type=int, default=50304)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    a = ap.parse_args()

    torch.manual_seed(0)
    with torch.device("cuda"):
        model = LM(a.layers, a.vocab)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    ids = torch.randint(0, a.vocab, (a.batch, a.seq_len), device="cuda")
    targets = torch.roll(ids, -1, 1)
    compiled = torch.compile(model, mode=a.mode)
    ms, first, last = train_steps(lambda: compiled(ids, targets), opt, a.steps, a.warmup)
    print(json.dumps({"mode": a.mode, "steps": a.steps, "mean_ms": ms, "loss_first": first,
                      "loss_last": last, "layers": a.layers}))


if __name__ == "__main__":
    main()
