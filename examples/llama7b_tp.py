#!/usr/bin/env python3
"""A Vicuna-7B-shaped LLaMA (32 layers, hidden 4096, 32 heads, FFN 11008, vocabulary 32000) built
from its config with random fp16 weights (no download, no transformers), tensor-parallel over the
torchrun ranks as Megatron splits it: q/k/v and gate/up column-parallel (each rank holds heads/tp
heads and 11008/tp FFN columns), o and down row-parallel, their partial outputs summed by
dist.all_reduce (NCCL). One prefill of --prompt tokens, then --decode-steps decode steps with a KV
cache; each step inside an NVTX range ("prefill", "decode"; --nvtx step names every one "step").

    kjoule run -o tp.kjdb -- torchrun --standalone --nproc-per-node 2 examples/llama7b_tp.py --layers 8
    kjoule compare tp.kjdb --region decode

Set NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 (NVLink multicast
off) where the machine's NVLink multicast is not to be used (docs/multi-gpu-sweep.md).
--model-yml FILE writes the MODEL.yml of one decode step (tp = world size, mode inference) for
`kjoule predict --model`.

--cuda-graph: each decode position's step (its all-reduces included) captured once into a CUDA
graph after the first round, which warms up eagerly; later rounds replay the graphs, as serving
engines do, so a decode step is the GPU's work rather than PyTorch's launches (eager decode at
batch 1 spends most of a step on the host).
"""
import argparse
import itertools
import json
import math
import os
import sys
import time


def parse():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--intermediate", type=int, default=11008)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--prompt", type=int, default=128, help="prompt tokens (prefill length)")
    ap.add_argument("--decode-steps", type=int, default=32)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3, help="prefill + decode rounds (the first warms up)")
    ap.add_argument("--nvtx", choices=["phase", "step"], default="phase",
                    help="range names: prefill/decode (phase) or one name 'step' for both")
    ap.add_argument("--model-yml", help="write the MODEL.yml of a decode step here (rank 0)")
    ap.add_argument("--timing", action="store_true",
                    help="every rank prints one JSON line: its decode ms a step and prefill ms (median over the rounds"
                         " after the first; the GPU waited for around each phase)")
    ap.add_argument("--cuda-graph", action="store_true",
                    help="decode steps replayed as CUDA graphs after the first round (one graph a position)")
    ap.add_argument("--serve", action="store_true",
                    help="take turns with other jobs (bench/trace_overhead/turns.py's protocol, examples/rank_turns.py):"
                         " after a prefill and a warm-up (and the graphs' capture), each turn runs N decode steps")
    ap.add_argument("--kjoule-cost", type=int, help="kjoule's cost study bits, set in every rank (turns.py)")
    ap.add_argument("--destroy-after-graphs", action="store_true",
                    help="call destroy_process_group even after --cuda-graph captured the all-reduces (it hangs:"
                         " pytorch/pytorch#115388; to show that it does untraced too)")
    return ap.parse_args()


def main():
    a = parse()
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F

    from nccl_ranks import init_rank

    rank, tp, _ = init_rank()
    if a.serve:  # the protocol's stream kept apart before anything is printed
        import rank_turns
        out = rank_turns.protocol_stdout() if rank == 0 else None
        if rank:
            os.dup2(2, 1)
    local = torch.cuda.current_device()
    if a.heads % tp or a.intermediate % tp:
        raise SystemExit(f"tp {tp} must divide heads {a.heads} and intermediate {a.intermediate}")
    dev, dt = torch.device("cuda", local), torch.float16
    hd, nh = a.hidden // a.heads, a.heads // tp
    ff = a.intermediate // tp
    g = torch.Generator(device=dev).manual_seed(1234 + rank)

    def w(*shape, fan_in):
        return (torch.randn(*shape, device=dev, dtype=dt, generator=g) / math.sqrt(fan_in))

    emb = w(a.vocab, a.hidden, fan_in=1) * 0.02
    layers = []
    for _ in range(a.layers):
        layers.append(dict(
            ln1=torch.ones(a.hidden, device=dev, dtype=dt), ln2=torch.ones(a.hidden, device=dev, dtype=dt),
            qkv=w(3 * nh * hd, a.hidden, fan_in=a.hidden),          # column-parallel q, k, v
            o=w(a.hidden, nh * hd, fan_in=a.hidden),                # row-parallel
            gate_up=w(2 * ff, a.hidden, fan_in=a.hidden),           # column-parallel gate, up
            down=w(a.hidden, ff, fan_in=a.intermediate)))           # row-parallel
    norm_f = torch.ones(a.hidden, device=dev, dtype=dt)
    lm_head = w(a.vocab, a.hidden, fan_in=a.hidden)                  # replicated (small beside 32 layers)
    inv = 1.0 / (10000 ** (torch.arange(0, hd, 2, device=dev, dtype=torch.float32) / hd))

    def rms(x, wt):
        v = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(v + 1e-6)).to(dt) * wt

    def rope(x, pos):  # x [b, nh, s, hd]
        f = torch.outer(pos.float(), inv)
        cos, sin = f.cos().to(dt), f.sin().to(dt)
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), -1).flatten(-2)

    def forward(ids, cache, start):
        b, s = ids.shape
        pos = torch.arange(start, start + s, device=dev)
        x = F.embedding(ids, emb)
        for i, L in enumerate(layers):
            h = rms(x, L["ln1"])
            q, k, v = (h @ L["qkv"].t()).view(b, s, 3, nh, hd).permute(2, 0, 3, 1, 4)
            q, k = rope(q, pos), rope(k, pos)
            ck, cv = cache[i]
            ck[:, :, start:start + s], cv[:, :, start:start + s] = k, v
            att = F.scaled_dot_product_attention(q, ck[:, :, :start + s], cv[:, :, :start + s],
                                                 is_causal=s > 1)
            out = att.transpose(1, 2).reshape(b, s, nh * hd) @ L["o"].t()
            dist.all_reduce(out)                      # row-parallel: sum the partial outputs
            x = x + out
            h = rms(x, L["ln2"])
            gu = h @ L["gate_up"].t()
            out = (F.silu(gu[..., :ff]) * gu[..., ff:]) @ L["down"].t()
            dist.all_reduce(out)
            x = x + out
        return rms(x[:, -1:], norm_f) @ lm_head.t()

    total = a.prompt + a.decode_steps
    graphs = []  # --cuda-graph: (graph, its logits) per decode position, captured after round 0

    def new_cache():
        return [(torch.empty(a.batch, nh, total, hd, device=dev, dtype=dt),
                 torch.empty(a.batch, nh, total, hd, device=dev, dtype=dt)) for _ in layers]

    def capture(cache, static_ids):
        # warm-up on a side stream (the all-reduces' communicator already exists), then one graph
        # a position: each reads and writes the same cache and input tensors when replayed
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for t in range(min(2, a.decode_steps)):
                forward(static_ids, cache, a.prompt + t)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        for t in range(a.decode_steps):
            gr = torch.cuda.CUDAGraph()
            with torch.cuda.graph(gr):
                out = forward(static_ids, cache, a.prompt + t)
            graphs.append((gr, out))
        torch.cuda.synchronize()

    name = lambda phase: "step" if a.nvtx == "step" else phase

    def leave():
        """The process group destroyed; but ncclCommDestroy hangs once a communicator's collectives
        were captured into CUDA graphs (pytorch/pytorch#115388), traced or not: then the graphs are
        freed and the group is left to the interpreter's exit (--destroy-after-graphs: destroyed)."""
        if graphs and not a.destroy_after_graphs:
            graphs.clear()
            torch.cuda.synchronize()
            return
        dist.destroy_process_group()

    if a.serve:
        with torch.inference_mode():
            cache = new_cache()
            static_ids = torch.zeros(a.batch, 1, dtype=torch.long, device=dev)
            forward(torch.randint(0, a.vocab, (a.batch, a.prompt), device=dev, generator=g), cache, 0)
            for t in range(a.decode_steps):  # eager warm-up
                forward(static_ids, cache, a.prompt + t)
            if a.cuda_graph:
                capture(cache, static_ids)
            if a.kjoule_cost is not None:
                rank_turns.kjoule_cost_study(a.kjoule_cost)
            torch.cuda.synchronize()
            positions = itertools.cycle(range(a.decode_steps))

            def step():  # the next decode position, cycling over the cache's
                t = next(positions)
                torch.cuda.nvtx.range_push(name("decode"))
                if graphs:
                    graphs[t][0].replay()
                else:
                    forward(static_ids, cache, a.prompt + t)
                torch.cuda.nvtx.range_pop()

            share, gather = rank_turns.torch_channel(dist, torch)
            rank_turns.serve(rank, tp, step, torch.cuda.synchronize, share, gather,
                             lines=sys.stdin if rank == 0 else None, out=out)
        leave()
        return
    decode_ms, prefill_ms = [], []
    with torch.inference_mode():
        cache = new_cache() if a.cuda_graph else None
        static_ids = torch.zeros(a.batch, 1, dtype=torch.long, device=dev)
        for r in range(a.repeat):
            if not a.cuda_graph:
                cache = new_cache()
            if a.cuda_graph and r == 1:
                capture(cache, static_ids)
            ids = torch.randint(0, a.vocab, (a.batch, a.prompt), device=dev, generator=g)
            if a.timing:
                torch.cuda.synchronize()
                t0 = time.perf_counter()
            torch.cuda.nvtx.range_push(name("prefill"))
            logits = forward(ids, cache, 0)
            torch.cuda.nvtx.range_pop()
            if a.timing:
                torch.cuda.synchronize()
                t1 = time.perf_counter()
            for t in range(a.decode_steps):
                nxt = logits.argmax(-1)
                torch.cuda.nvtx.range_push(name("decode"))
                if graphs:
                    static_ids.copy_(nxt)
                    graphs[t][0].replay()
                    logits = graphs[t][1]
                else:
                    logits = forward(nxt, cache, a.prompt + t)
                torch.cuda.nvtx.range_pop()
            torch.cuda.synchronize()
            if a.timing and r >= (2 if a.cuda_graph else 1):  # past warm-up (and the round that captures)
                prefill_ms.append((t1 - t0) * 1e3)
                decode_ms.append((time.perf_counter() - t1) * 1e3 / max(1, a.decode_steps))
    if a.timing:
        med = lambda v: sorted(v)[len(v) // 2] if v else None
        print(json.dumps({"rank": rank, "decode_ms_per_step": med(decode_ms), "prefill_ms": med(prefill_ms),
                          "rounds": len(decode_ms)}), flush=True)
    if rank == 0:
        print(f"llama7b_tp: tp {tp}, {a.layers} layers, prompt {a.prompt}, {a.decode_steps} decode steps x "
              f"{a.repeat}, batch {a.batch}{', decode as CUDA graphs' if a.cuda_graph else ''}: done", flush=True)
        if a.model_yml:
            with open(a.model_yml, "w") as f:
                f.write(f"# one decode step of examples/llama7b_tp.py (attention over the cache not modelled)\n"
                        f"layers: {a.layers}\nhidden: {a.hidden}\nheads: {a.heads}\nseq: 1\n"
                        f"batch: {a.batch}\ntp: {tp}\nmode: inference\nprecision: fp16\nnorm: RMSlayernorm\n"
                        f"rope: true\nffn: swiglu\nintermediate: {a.intermediate}\nvocab: {a.vocab}\n"
                        f"lm_head: replicated\n")
    leave()


if __name__ == "__main__":
    main()
