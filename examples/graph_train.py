#!/usr/bin/env python3
"""A whole training step captured in one CUDA graph: forward, loss, backward and a capturable Adam
update of a GPT-2-shaped decoder (examples/gpt_graph.py's blocks; random weights, no download,
bf16 parameters), replayed N times, one NVTX range "step" around each graph.replay().

Written to try kjoule on a program nobody tuned it for: a graph of the kind whole-network capture
makes (thousands of nodes: GEMMs, attention backward, reductions, memsets, the optimizer's
multi-tensor kernels). Prints one JSON line at the end.
"""
import argparse
import json
import math

import torch
import torch.nn.functional as F
from gpt_graph import Block
from torch_steps import capture_graph, timed_steps


class Decoder(torch.nn.Module):
    def __init__(self, layers, d, heads, vocab):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, d)
        self.blocks = torch.nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = torch.nn.LayerNorm(d)

    def forward(self, ids, targets):
        x = self.emb(ids)
        for blk in self.blocks:
            x = blk(x)
        logits = F.linear(self.ln(x), self.emb.weight)
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.view(-1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=512)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--steps", type=int, default=300)
    a = ap.parse_args()
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = Decoder(a.layers, 1024, 16, a.vocab).to(torch.bfloat16)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, capturable=True)
    ids = torch.randint(0, a.vocab, (a.batch, a.seq_len), device="cuda")
    targets = torch.roll(ids, -1, 1)

    def step():
        opt.zero_grad(set_to_none=False)
        loss = model(ids, targets)
        loss.backward()
        opt.step()
        return loss

    graph, loss = capture_graph(step)
    graph.replay()
    first = float(loss)
    ms = timed_steps(graph.replay, a.steps, warmup=3, range_name="step")
    last = float(loss)
    assert math.isfinite(first) and math.isfinite(last), (first, last)
    print(json.dumps({"steps": a.steps, "mean_ms": ms, "loss_first": first, "loss_last": last}))


if __name__ == "__main__":
    main()
