#!/usr/bin/env python3
"""A GPT-style decoder trained for a few steps in plain PyTorch (random weights, random tokens, built
here, no download), shaped as `kjoule predict --model` decomposes a training step into the operators
`kjoule sweep` measures (src/predict/kj_model.c, src/sweep/worker):

  embedding            token embedding only, vocabulary 50304 (KJ_SWEEP_VOCAB, padded to 128);
                       no position embedding: kj_model.c has none (RoPE is off by default)
  layernorm x (2L+1)   nn.LayerNorm (weight and bias) before attention, before the FFN, and at the
                       end; --norm rms: nn.RMSNorm (kj_model.c's norm: RMSlayernorm)
  linear1              QKV projection d -> 3d with bias
  flash_atten          F.scaled_dot_product_attention(is_causal=True) on [b, h, l, d/h]
  linear2              attention output d -> d with bias
  res_add x 2L         x + attn, x + ffn (their backward: autograd's sum of the two gradients)
  linear3, gelu, linear4   FFN d -> 4d (bias), GELU tanh form, 4d -> d (bias)
  linear_final         d -> 50304 without bias, tied to the embedding (so the parameter count is
                       the lastStage_optimizer's: layers, final norm, one vocab x d matrix)
  parallel_cross_entropy_128   F.cross_entropy on the [b*l, 50304] logits
  lastStage_optimizer  AdamW (betas 0.9/0.95, eps 1e-8, weight decay 0.01), fused

Precision, as the sweep worker measures it: the model (parameters, activations, gradients) is in
--precision (bf16 or fp16) with no autocast, so every operator runs in half precision as the
worker's kernels do; autocast would instead keep layernorm, softmax and cross entropy in fp32 and
re-cast every weight on every forward. The optimizer is Megatron's mixed-precision one, the form the
worker's optimizer operator measures (one fused AdamW over fp32 master parameters with fp32 grads,
m and v, writing the half-precision model copy): fp32 master copies of every parameter, the half
gradients copied into fp32 gradients (torch._foreach_copy_), torch.optim.AdamW(fused=True) on the
masters, the masters copied back into the model (torch._foreach_copy_). PyTorch has no fused AdamW
that writes the half copy itself, so MODEL.yml says `master_copies: true` and the operator sum counts
the two copies as the `master_copies` operator. --no-master: AdamW directly on the half parameters
(m and v in half; MODEL.yml then says `master_copies: false`).
fp16 runs without loss scaling (a few steps from random weights do not overflow; the check at the
end says if they did).

--compile: the same model under torch.compile (Inductor, mode default), compiled by region as
PyTorch's recipe for repeated blocks does: each block, and the final norm + output layer + loss,
so one compiled block serves all layers (compiles in seconds, not minutes). Inductor writes Triton
kernels for the norms, GELU, residual adds, bias gradients and the loss, fusing what eager PyTorch
launches apart (which ones: `kjoule kernels` of the run); the optimizer stays eager (fused AdamW).

--cuda-graph: the whole step (forward, loss, backward, the master copies, AdamW with
capturable=True, zero_grad) captured once into one CUDA graph after three steps run on a side
stream (they build the optimizer's state and, with --compile, compile), then each step is one graph
replay: the GPU runs the same kernels with no host launch gaps between them, as static-shape
training loops do. Combines with --compile (the compiled kernels are captured).

Each step (forward, loss, backward, optimizer, zero_grad) runs inside one NVTX range `step`, warm-up
steps included (`kjoule compare --skip W` leaves them out); steps are launched back to back with no
synchronisation until the end (with --min-seconds S, more steps once --steps are done until the
host has spent S seconds launching them; the energy per step is NVML's total-energy counter from
the start of the measured steps to the end of the last, where pynvml is importable). Prints one JSON line at the end: ms per step from CUDA events
recorded in the stream at each step's start and end (median, mean, min over the measured steps),
parameters, tokens per second and the loss.

usage: gpt_train.py [--layers 24 --hidden 1024 --heads 16 --seq 1024 --batch 4]
                    [--precision bf16|fp16] [--steps 20] [--warmup 3] [--norm layernorm|rms]
                    [--no-master] [--compile] [--cuda-graph] [--model-yml FILE]
--model-yml FILE writes the MODEL.yml of this shape for `kjoule predict --model` and exits (no
PyTorch needed).
"""
import argparse
import json
import math
import statistics
import sys
import time

from nvml_energy import handle as nvml_handle, per_call

VOCAB = 50304  # KJ_SWEEP_VOCAB: the vocabulary the sweep's embedding, output layer and loss use


def model_yml(a):
    return ("# written by examples/gpt_train.py: the shape it trains, for kjoule predict --model\n"
            f"layers: {a.layers}\nhidden: {a.hidden}\nheads: {a.heads}\nseq: {a.seq}\n"
            f"batch: {a.batch}\nprecision: {a.precision}\nmode: train\noptimizer: adam\n"
            f"norm: {'RMSlayernorm' if a.norm == 'rms' else 'layernorm'}\nattention: flash\n"
            f"master_copies: {'false' if a.no_master else 'true'}\n")


def build(a, torch):
    nn, F = torch.nn, torch.nn.functional

    def norm(d):
        return nn.RMSNorm(d) if a.norm == "rms" else nn.LayerNorm(d)

    class Block(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = norm(d), norm(d)
            self.qkv = nn.Linear(d, 3 * d)       # linear1
            self.proj = nn.Linear(d, d)          # linear2
            self.up = nn.Linear(d, 4 * d)        # linear3
            self.down = nn.Linear(4 * d, d)      # linear4

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
            q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
            return x + self.down(F.gelu(self.up(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(VOCAB, a.hidden)
            self.blocks = nn.ModuleList(Block(a.hidden, a.heads) for _ in range(a.layers))
            self.ln_f = norm(a.hidden)
            self.head = nn.Linear(a.hidden, VOCAB, bias=False)
            self.head.weight = self.wte.weight  # tied: one vocab x hidden matrix

        def forward(self, ids, targets):
            x = self.wte(ids)
            for blk in self.blocks:
                x = blk(x)
            return self.loss(x, targets)

        def loss(self, x, targets):
            logits = self.head(self.ln_f(x))
            return F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1))

    model = GPT()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.02)
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--precision", choices=["bf16", "fp16"], default="bf16")
    ap.add_argument("--steps", type=int, default=20, help="measured steps")
    ap.add_argument("--warmup", type=int, default=3, help="steps before the measured ones")
    ap.add_argument("--norm", choices=["layernorm", "rms"], default="layernorm")
    ap.add_argument("--no-master", action="store_true", help="AdamW on the half parameters")
    ap.add_argument("--compile", action="store_true",
                    help="torch.compile each block and the loss (Inductor, mode default)")
    ap.add_argument("--cuda-graph", action="store_true",
                    help="capture the whole step into one CUDA graph and replay it each step")
    ap.add_argument("--model-yml", metavar="FILE", help="write MODEL.yml for kjoule predict and exit")
    ap.add_argument("--min-seconds", type=float, default=0.0,
                    help="run measured steps until at least this long (NVML's energy counter moves "
                         "every ~100 ms: give it >= 3 s for an energy per step)")
    a = ap.parse_args()
    for k in ("layers", "hidden", "heads", "seq", "batch", "steps"):
        if getattr(a, k) < 1:
            ap.error(f"--{k} must be a positive integer, not {getattr(a, k)}")
    if a.warmup < 0:
        ap.error(f"--warmup must be 0 or more, not {a.warmup}")
    if a.hidden % a.heads:
        ap.error(f"--heads ({a.heads}) must divide --hidden ({a.hidden})")
    if a.model_yml:
        with open(a.model_yml, "w") as f:
            f.write(model_yml(a))
        return 0

    import torch
    if not torch.cuda.is_available():
        sys.exit("gpt_train.py: no CUDA device visible to PyTorch")
    dtype = torch.bfloat16 if a.precision == "bf16" else torch.float16
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = build(a, torch).to(dtype)
    if a.compile:  # by region: one compiled block for every layer, and the loss
        for blk in model.blocks:
            blk.compile()
        model.loss = torch.compile(model.loss)
    params = list(model.parameters())  # the tied matrix once
    n_params = sum(p.numel() for p in params)
    adam = dict(lr=1e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.01, fused=True,
                capturable=a.cuda_graph)
    if a.no_master:
        master = None
        opt = torch.optim.AdamW(params, **adam)
    else:
        master = [p.detach().float().requires_grad_() for p in params]
        for m in master:
            m.grad = torch.zeros_like(m)
        master_grads = [m.grad for m in master]
        opt = torch.optim.AdamW(master, **adam)
    gen = torch.Generator(device="cuda").manual_seed(1)
    ids = torch.randint(0, VOCAB, (a.batch, a.seq), device="cuda", generator=gen)
    targets = torch.randint(0, VOCAB, (a.batch, a.seq), device="cuda", generator=gen)

    def copy_all(dst, src):
        if hasattr(torch, "_foreach_copy_"):
            torch._foreach_copy_(dst, src)
        else:
            for d, s_ in zip(dst, src):
                d.copy_(s_)

    def step():
        loss = model(ids, targets)
        loss.backward()
        if master is None:
            opt.step()
        else:
            with torch.no_grad():
                copy_all(master_grads, [p.grad for p in params])
                opt.step()
                copy_all(params, master)
        model.zero_grad(set_to_none=True)
        return loss.detach()

    def captured(step):
        """(replay, first_loss): the step captured into one CUDA graph after three steps on a side
        stream (optimizer state, compilation, cuDNN plans); replay() runs it and returns the
        graph's own loss tensor, which each replay overwrites."""
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            first = step().clone()
            for _ in range(2):
                step()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_loss = step()

        def replay():
            graph.replay()
            return static_loss
        return replay, float(first)

    run_step, first_loss = (captured(step) if a.cuda_graph else (step, None))

    def energy_reader():
        """(read, why): read() gives NVML's total-energy counter of this GPU in mJ; read is None,
        and why says so, without pynvml or driver support."""
        try:
            import pynvml
            pynvml.nvmlInit()
            h = nvml_handle(pynvml, torch.cuda.current_device())
            pynvml.nvmlDeviceGetTotalEnergyConsumption(h)
            return (lambda: pynvml.nvmlDeviceGetTotalEnergyConsumption(h)), None
        except Exception as e:
            return None, f"{type(e).__name__}: {e}"
    read_mj, energy_why = energy_reader()

    starts, ends, losses = [], [], []
    torch.cuda.synchronize()
    e0 = t0 = None
    i = 0
    while True:
        if i == a.warmup:  # the measured steps begin: counter and clock from an idle queue
            torch.cuda.synchronize()
            e0, t0 = (read_mj() if read_mj else None), time.perf_counter()
        if i >= a.warmup + a.steps and time.perf_counter() - t0 >= a.min_seconds:
            break
        torch.cuda.nvtx.range_push("step")
        starts.append(torch.cuda.Event(enable_timing=True))
        ends.append(torch.cuda.Event(enable_timing=True))
        starts[-1].record()
        losses.append(run_step())
        ends[-1].record()
        torch.cuda.nvtx.range_pop()
        i += 1
    torch.cuda.synchronize()
    wall_s = time.perf_counter() - t0
    e1 = read_mj() if read_mj else None
    measured = i - a.warmup
    ms = [s_.elapsed_time(e) for s_, e in zip(starts[a.warmup:], ends[a.warmup:])]
    span_ms = starts[a.warmup].elapsed_time(ends[-1])
    # a replayed step returns the graph's one loss tensor: its first loss is the first side-stream step's
    first, last = (first_loss if first_loss is not None else float(losses[0])), float(losses[-1])
    energy, why = per_call(e0, e1, wall_s, measured, read_mj is not None)
    out = {"program": "gpt_train", "layers": a.layers, "hidden": a.hidden, "heads": a.heads,
           "seq": a.seq, "batch": a.batch, "precision": a.precision, "norm": a.norm,
           "master_weights": master is not None, "compiled": a.compile, "cuda_graph": a.cuda_graph, "vocab": VOCAB, "params": n_params,
           "warmup": a.warmup, "steps": measured,
           "ms_per_step_median": statistics.median(ms), "ms_per_step_min": min(ms),
           "ms_per_step_mean": span_ms / measured,
           "tokens_per_s": a.batch * a.seq * measured / (span_ms / 1e3),
           "energy_j_per_step_nvml": energy,
           "energy_window_s": wall_s,
           "energy_not_measured": energy_why or why,
           "loss_first": first, "loss_last": last,
           "loss_finite": math.isfinite(first) and math.isfinite(last),
           "torch": torch.__version__, "device": torch.cuda.get_device_name()}
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
