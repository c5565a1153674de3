#!/usr/bin/env python3
"""A ResNet-50 training step (torchvision, random weights and labels, no download): channels-last,
bf16 autocast, cudnn.benchmark on, SGD with momentum, each step in an NVTX range "step".

Written to try kjoule on a program nobody tuned it for: cuDNN's convolution backward (data and
weight gradients, split-K reductions, workspaces), batch-norm backward, and the autotuning
candidates cuDNN runs in its first steps. Prints one JSON line at the end.
"""
import argparse
import json

import torch
import torch.nn.functional as F
import torchvision
from torch_steps import train_steps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=5)
    a = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None).cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(a.batch, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (a.batch,), device="cuda")
    ms, first, last = train_steps(lambda: F.cross_entropy(model(x), y), opt, a.steps, a.warmup)
    print(json.dumps({"steps": a.steps, "mean_ms": ms, "loss_first": first, "loss_last": last}))


if __name__ == "__main__":
    main()
