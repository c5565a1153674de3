#!/usr/bin/env python3
"""A GPT-2-shaped model (12 layers x 768, 12 heads, vocabulary 50304, random weights and tokens,
no download) trained data-parallel with DistributedDataParallel over the torchrun ranks (NCCL,
DDP's default 25 MiB gradient buckets), one NVTX range "step" per step. The model and its
activations in bf16 (or --dtype fp16), fused AdamW on them, as `kjoule predict --model` counts a
step with optimizer adam and no master copies.

    kjoule run -o ddp.kjdb -- torchrun --standalone --nproc-per-node 2 examples/ddp_train.py
    kjoule compare ddp.kjdb --region step

--model-yml FILE writes its MODEL.yml (dp = world size) for `kjoule predict --model`. Set
NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 to keep NVLink
multicast off (the script sets them where unset).
"""
import argparse
import json
import time


def parse():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=8, help="sequences a rank a step")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3, help="steps before the measured ones (also in a 'step' range)")
    ap.add_argument("--dtype", choices=["bf16", "fp16"], default="bf16")
    ap.add_argument("--model-yml", help="write the MODEL.yml of a step here (rank 0)")
    ap.add_argument("--timing", action="store_true",
                    help="every rank prints one JSON line: its mean ms a measured step (the GPU waited for before"
                         " and after the measured steps)")
    return ap.parse_args()


def main():
    a = parse()
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    from nccl_ranks import init_rank

    rank, dp, _ = init_rank()
    local = torch.cuda.current_device()
    dt = torch.bfloat16 if a.dtype == "bf16" else torch.float16
    V = 50304

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            d = a.hidden
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            b, s, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, a.heads, d // a.heads).permute(2, 0, 3, 1, 4)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, s, d))
            return x + self.down(F.gelu(self.up(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(V, a.hidden)
            self.blocks = nn.ModuleList(Block() for _ in range(a.layers))
            self.ln_f = nn.LayerNorm(a.hidden)

        def forward(self, ids):
            x = self.emb(ids)
            for blk in self.blocks:
                x = blk(x)
            return self.ln_f(x) @ self.emb.weight.t()  # output layer tied to the embedding

    torch.manual_seed(1234)  # the same initial weights on every rank
    model = DDP(GPT().to(device=local, dtype=dt), device_ids=[local])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    g = torch.Generator(device="cuda").manual_seed(rank)
    ids = torch.randint(0, V, (a.batch, a.seq + 1), device="cuda", generator=g)
    t0 = None
    for i in range(a.warmup + a.steps):
        if a.timing and i == a.warmup:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        torch.cuda.nvtx.range_push("step")
        logits = model(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, V).float(), ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    if a.timing:
        step_ms = (time.perf_counter() - t0) * 1e3 / a.steps if t0 is not None and a.steps > 0 else None
        print(json.dumps({"rank": rank, "step_ms": step_ms, "steps": a.steps}), flush=True)
    if rank == 0:
        n = sum(p.numel() for p in model.parameters())
        print(f"ddp_train: dp {dp}, {a.layers} x {a.hidden}, {n / 1e6:.1f} M parameters, "
              f"{a.warmup}+{a.steps} steps, loss {loss.item():.3f}", flush=True)
        if a.model_yml:
            with open(a.model_yml, "w") as f:
                f.write(f"# a step of examples/ddp_train.py (one rank's work and its gradient all-reduce)\n"
                        f"layers: {a.layers}\nhidden: {a.hidden}\nheads: {a.heads}\nseq: {a.seq}\n"
                        f"batch: {a.batch}\ndp: {dp}\nmode: train\noptimizer: adam\n"
                        f"precision: {a.dtype}\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
