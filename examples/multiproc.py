#!/usr/bin/env python3
"""Two worker processes (torch.multiprocessing, spawn) and one plain subprocess, each doing a few
GEMMs on the GPU: checks that `kjoule run` traces every process of a program as its own process."""
import argparse
import subprocess
import sys

import torch
import torch.multiprocessing as mp


def work(rank, n):
    torch.cuda.set_device(0)
    a = torch.randn(512, 512, device="cuda", dtype=torch.float16)
    for _ in range(n):
        a = torch.nn.functional.normalize(a @ a, dim=1)
    torch.cuda.synchronize()
    print(f"worker {rank} done", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--child", action="store_true", help="run one worker's work in this process")
    a = ap.parse_args()
    if a.child:
        work(-1, a.iters)
        return
    mp.spawn(work, args=(a.iters,), nprocs=a.workers, join=True)
    subprocess.run([sys.executable, __file__, "--child", "--iters", str(a.iters)], check=True)


if __name__ == "__main__":
    main()
