#!/usr/bin/env python3
"""A torchvision model (random weights, no downloads) with an NVTX range per forward ("forward")
and one per module call (the module's qualified name, e.g. "layer1.0.conv2"), pushed and popped
by forward hooks, for `kjoule run` and then `kjoule pipeline --from RUN --layers DEPTH`:
depth 1 = the model's children (conv1, bn1, ..., layer1..layer4, avgpool, fc), depth 2 = blocks,
depth 3 = the layers inside blocks (work outside any module, such as a residual add, becomes a
"(between A and B)" phase).

    kjoule run -o r50.kjdb -- python3 examples/torchvision_nvtx.py --batch 32
    kjoule pipeline --from r50.kjdb --layers 3

--graph: after the warm-up the forward (hooks and all) is captured once with torch.cuda.graph, so
the module ranges fire at capture, and each timed forward is a "forward" range around the graph's
replay; `pipeline --from` then groups the graph's kernels by the ranges open at capture (the same
depths as above).

It prints one JSON line at the end: the per-forward time from CUDA events around the timed
forwards (after warm-up), and, where pynvml is importable, the energy per forward from NVML's
total-energy counter over those forwards.
"""
import argparse
import json
import time

import torch
import torchvision
from nvml_energy import per_call


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--precision", default="fp16", choices=["fp16", "bf16", "fp32"])
    ap.add_argument("--no-module-ranges", action="store_true", help="the forward range only")
    ap.add_argument("--graph", action="store_true",
                    help="capture the forward once in a CUDA graph after warm-up; time its replays")
    ap.add_argument("--module-depth", type=int, default=0,
                    help="ranges only for modules this deep (1: the model's children); 0: all. Each "
                         "range costs the host two Python hooks, so fewer keep a large batch GPU-bound")
    ap.add_argument("--channels-last", action="store_true",
                    help="model and input in channels-last memory format (NHWC, as cuDNN's fp16 "
                         "convolutions and the pipeline's phases run)")
    ap.add_argument("--min-seconds", type=float, default=0.0,
                    help="repeat the timed forwards until this long (energy needs >= 3 s)")
    a = ap.parse_args()
    dt = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[a.precision]
    torch.manual_seed(0)
    model = getattr(torchvision.models, a.model)(weights=None).to("cuda", dt).eval()
    x = torch.randn(a.batch, 3, 224, 224, device="cuda", dtype=dt)
    if a.channels_last:
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)

    if not a.no_module_ranges:
        nvtx = torch.cuda.nvtx
        # hooks must return None: a value returned would replace the module's input or output
        # (range_push and range_pop return the nesting depth, an int)
        def opener(name):
            def pre(module, inputs):
                nvtx.range_push(name)
            return pre

        def close(module, inputs, output):
            nvtx.range_pop()

        for name, mod in model.named_modules():
            if not name:
                continue  # the model itself: the "forward" range below
            if a.module_depth and name.count(".") + 1 > a.module_depth:
                continue
            mod.register_forward_pre_hook(opener(name))
            mod.register_forward_hook(close)

    def forward():
        torch.cuda.nvtx.range_push("forward")
        y = model(x)
        torch.cuda.nvtx.range_pop()
        return y

    with torch.inference_mode():
        for _ in range(a.warmup):
            forward()
        torch.cuda.synchronize()
        step = forward
        if a.graph:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):  # the hooks' ranges fire now, at capture
                forward()

            def step():
                torch.cuda.nvtx.range_push("forward")
                graph.replay()
                torch.cuda.nvtx.range_pop()
        nv = None
        try:
            import pynvml
            pynvml.nvmlInit()
            from nvml_energy import handle as nvml_handle
            nv = nvml_handle(pynvml, torch.cuda.current_device())
        except Exception:
            nv = None
        e0 = pynvml.nvmlDeviceGetTotalEnergyConsumption(nv) if nv else None
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        n = 0
        start.record()
        while n < a.iters or time.perf_counter() - t0 < a.min_seconds:
            step()
            n += 1
        end.record()
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
        e1 = pynvml.nvmlDeviceGetTotalEnergyConsumption(nv) if nv else None
    energy, why = per_call(e0, e1, wall, n, nv is not None)
    out = {"model": a.model, "batch": a.batch, "precision": a.precision, "graph": a.graph,
           "channels_last": a.channels_last, "forwards": n,
           "forward_ms_events": start.elapsed_time(end) / n, "forward_ms_wall": wall * 1e3 / n,
           "energy_j_per_forward_nvml": energy, "energy_not_measured": why,
           "energy_window_s": wall, "torch": torch.__version__,
           "cudnn": torch.backends.cudnn.version(), "device": torch.cuda.get_device_name()}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
