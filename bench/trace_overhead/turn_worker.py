#!/usr/bin/env python3
"""One contestant of bench/trace_overhead/turns.py: builds its model (--model bloom560m: BLOOM-560M,
random fp16 weights, seq 5, as examples/bloom560m.py; --model gpt2m: examples/gpt_graph.py's
GPT-2-medium-shaped decoder, eager, fp16, batch 4 x 128; --model jax_step: examples/jax_step.py's
jitted transformer block, a host-bound step of one graph launch; torch makes no CUDA context then;
--model decode: examples/hf_decode.py's compiled decode loop, one generate() request of 32 tokens
a forward, its compilation done by three requests before the worker is ready), one NVTX range
"forward" per forward, then waits on stdin for turns.

Protocol, one line each way:
  coordinator -> worker   "go N"   run N forwards, each synchronised and timed
  worker -> coordinator   {"ms": [...]}
  coordinator -> worker   "quit"   worker leaves, answering {"vmhwm_mb": peak RSS}
The worker says {"ready": true} once the model is built. While another contestant has its turn,
this one does nothing on the GPU; so all contestants see the same host, block by block.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import torch  # noqa: E402
from bloom560m import build_bloom560m, timed_forward  # noqa: E402
from rank_turns import kjoule_cost_study, peak_rss_mb, protocol_stdout, say  # noqa: E402  (one copy)


def build_jax_step():
    """examples/jax_step.py's step, compiled: (forward returning a JAX array, None)."""
    from jax_step import block, init  # first: it keeps XLA from taking the GPU's memory up front
    import jax
    p = init(jax.random.PRNGKey(0), 1024, 4096)
    x = jax.random.normal(jax.random.PRNGKey(1), (8, 512, 1024), jax.numpy.bfloat16)
    step = jax.jit(lambda p, x: block(p, x, 16))
    step(p, x).block_until_ready()  # compile (XLA autotunes here)
    return (lambda input_ids=None: step(p, x)), None


def timed_jax(forward):
    """One JAX step inside the NVTX range "forward", waited for: wall ms (its launch and its run)."""
    t0 = time.perf_counter()
    torch.cuda.nvtx.range_push("forward")
    y = forward()
    torch.cuda.nvtx.range_pop()
    y.block_until_ready()
    return (time.perf_counter() - t0) * 1e3


def build_decode():
    """examples/hf_decode.py's static-cache decode loop, compiled: (forward = one request, ids)."""
    from hf_decode import build_decoder
    model, ids, mask, gen = build_decoder()
    forward = lambda input_ids: model.generate(input_ids=input_ids, attention_mask=mask, **gen)
    with torch.inference_mode():
        for _ in range(3):  # torch.compile and CUDA graph capture happen here, not in a turn
            forward(ids)
    return forward, ids


def build(model_name, seq_len):
    """(forward taking input_ids=..., ids) of the chosen workload, on the GPU, in eval mode."""
    if model_name == "jax_step":
        return build_jax_step()
    if model_name == "decode":
        return build_decode()
    if model_name == "gpt2m":
        from gpt_graph import GPT
        torch.manual_seed(0)
        with torch.device("cuda"):
            model = GPT().to(torch.float16).eval()
        ids = torch.randint(0, 50257, (4, 128), device="cuda")
        return (lambda input_ids: model(input_ids)), ids
    return build_bloom560m(seq_len)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", choices=["bloom560m", "gpt2m", "jax_step", "decode"], default="bloom560m")
    ap.add_argument("--seq-len", type=int, default=5, help="BLOOM-560M's sequence length")
    ap.add_argument("--torch-profiler", action="store_true",
                    help="torch.profiler (CPU+CUDA) on from the first turn to the end, as a user would profile a run")
    ap.add_argument("--kjoule-cost", type=int,
                    help="under kjoule run, once the model is built: kjoule_cost_study_set_api(BITS) "
                         "(src/trace/inject/inject.h): 512 tracing off (CUPTI loaded, kjoule's threads and "
                         "the parent's sampler running), 1024 CUPTI's activity records without kjoule's callbacks")
    ap.add_argument("--pin-cpu", type=int,
                    help="once the model is built, keep this (the launching) thread on this CPU; threads "
                         "started earlier (CUDA's, CUPTI's, kjoule's, torch's) stay free")
    a = ap.parse_args()
    # the protocol runs on a duplicate of stdout taken before anything else can write to it
    out = protocol_stdout()
    model, ids = build(a.model, a.seq_len)
    if a.kjoule_cost is not None:
        kjoule_cost_study(a.kjoule_cost)
    if a.model != "jax_step":  # torch makes no CUDA context beside JAX's
        torch.cuda.synchronize()
    if a.pin_cpu is not None:
        os.sched_setaffinity(0, {a.pin_cpu})  # 0: the calling thread only
    say({"ready": True, "pid": os.getpid()}, out)
    prof = None
    with torch.inference_mode():
        for line in sys.stdin:
            word = line.split()
            if not word:
                continue
            if word[0] == "quit":
                break
            if a.torch_profiler and prof is None:
                from torch.profiler import ProfilerActivity, profile
                prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
                prof.__enter__()
            timed = (lambda: timed_jax(model)) if a.model == "jax_step" else (lambda: timed_forward(model, ids)[0])
            say({"ms": [timed() for _ in range(int(word[1]))]}, out)
    say({"vmhwm_mb": peak_rss_mb()}, out)
    if prof is not None:  # digesting the events is not tracing cost, and takes minutes here
        out.close()
        sys.stderr.flush()
        os._exit(0)


if __name__ == "__main__":
    main()
