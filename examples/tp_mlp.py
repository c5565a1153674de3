"""A tensor-parallel MLP stack on several GPUs, one process per GPU (docs/multi-gpu.md).

Each layer is column-parallel (x @ W1 shard, GELU) then row-parallel (@ W2 shard) and ends in
an all_reduce over the ranks, as Megatron's MLP does. Every iteration is one NVTX range named
`step` (torch.cuda.nvtx), so `kjoule compare` splits each rank's run into iterations.

    kjoule run -o tp.kjdb -- env NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \\
        NVSHMEM_DISABLE_NVLS=1 torchrun --standalone --nproc-per-node 2 examples/tp_mlp.py
    kjoule compare tp.kjdb

--die-rank R --die-after N: rank R kills itself with SIGKILL after N steps (as the OOM killer or
`kill -9` would), for trying what the run says of a rank that dies (docs/multi-gpu.md). It waits a
second first, so the tracer has handed over what those steps recorded (a process killed at once
loses its last ~0.2 s of records); the other ranks wait in the next all_reduce until the launcher
stops them.
"""
import argparse
import os
import signal
import time

import torch
import torch.distributed as dist


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--die-rank", type=int, default=-1, help="this rank SIGKILLs itself (default: none)")
    ap.add_argument("--die-after", type=int, default=0, help="... after this many steps")
    a = ap.parse_args()
    if a.die_rank >= 0 and not 0 <= a.die_after < a.steps:
        ap.error("--die-after must be at least 0 and less than --steps")
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(1234 + rank)
    shard = 4 * a.hidden // world
    dt = torch.bfloat16
    w1 = [torch.randn(a.hidden, shard, device=dev, dtype=dt, generator=g) * 0.02 for _ in range(a.layers)]
    w2 = [torch.randn(shard, a.hidden, device=dev, dtype=dt, generator=g) * 0.02 for _ in range(a.layers)]
    x = torch.randn(a.batch, a.hidden, device=dev, dtype=dt, generator=g)
    dist.broadcast(x, 0)  # every rank holds the same activations, as tensor parallelism needs
    for step in range(a.steps):
        if rank == a.die_rank and step == a.die_after:
            print(f"tp_mlp: rank {rank} kills itself (SIGKILL) after {step} steps", flush=True)
            time.sleep(1.0)
            os.kill(os.getpid(), signal.SIGKILL)
        torch.cuda.nvtx.range_push("step")
        h = x
        for l in range(a.layers):
            y = torch.nn.functional.gelu(h @ w1[l]) @ w2[l]
            dist.all_reduce(y)
            h = torch.nn.functional.layer_norm(y + h, (a.hidden,))
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    dist.barrier()
    if rank == 0:
        print(f"tp_mlp: {world} ranks, {a.steps} steps, hidden {a.hidden}, layers {a.layers},"
              f" checksum {float(h.float().abs().mean()):.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
