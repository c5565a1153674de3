#!/usr/bin/env python3
"""A torchrun job: each worker (rank) runs a few BLOOM-560M forwards on the one GPU and the
workers agree on a checksum through a gloo all_reduce. Checks that `kjoule run -- torchrun ...`
traces every worker torchrun starts, each as its own process:

    kjoule run -o ddp.kjdb -- torchrun --standalone --nproc_per_node 2 examples/torchrun_infer.py
"""
import argparse
import os

import torch
import torch.distributed as dist
from bloom560m import build_bloom560m


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--seq-len", type=int, default=5)
    a = ap.parse_args()
    dist.init_process_group("gloo")  # one GPU here: NCCL needs a device per rank
    rank = dist.get_rank()
    model, ids = build_bloom560m(a.seq_len, seed=rank)
    with torch.inference_mode():
        for _ in range(a.iters):
            torch.cuda.nvtx.range_push("forward")
            out = model(input_ids=ids)
            torch.cuda.nvtx.range_pop()
    s = out.logits.float().sum().cpu().reshape(1)
    dist.all_reduce(s)
    print(f"rank {rank} of {dist.get_world_size()} (pid {os.getpid()}): checksum {s.item():.3f}",
          flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
