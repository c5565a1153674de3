#!/usr/bin/env python3
"""Tracing settings against each other on BLOOM-560M forwards, inside ONE traced process: which
--api record domain costs what (bench/results/api_toggle_domains.json).

Run it under kjoule (`kjoule run -- python3 bench/api_cost/api_toggle.py`): it reaches the
injection library through ctypes and switches the tracing between blocks of forwards
(kjoule_cost_study_set_api: off, --no-params, defaults, --api by domain, --api=all), in shuffled
order, round after round. Prints one JSON line: median forward ms per setting and per round, and
the ratio of each to kjoule's defaults. The cost of tracing against an untraced process is
bench/trace_overhead/turns.py's: this one's "off" is not a plain process, and its ratios to "off"
came out lower than the turns' ratios to plain (docs/tracing.md).
"""
import argparse
import ctypes
import json
import os
import random
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import torch  # noqa: E402
from bloom560m import build_bloom560m, timed_forward  # noqa: E402

# KJ_API_* bits (src/trace/inject/inject.h)
SETTINGS = {"defaults": 0, "driver": 1, "runtime": 2, "api": 3, "api_no_records": 7,
            "api_no_runtime_launch": 19, "api_all": 11,
            # KJ_COST_* bits: "off" = no callbacks and no activity, the program as if untraced
            # (CUPTI stays loaded); "no_params" = --no-params
            "off": 512, "no_params": 256,
            # KJ_COST_ACTIVITY_ONLY: CUPTI's activity records, none of kjoule's callbacks
            "activity_only": 1024 | 256}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--block", type=int, default=15, help="timed forwards per block")
    ap.add_argument("--seq-len", type=int, default=5)
    ap.add_argument("--torch-profiler", action="store_true",
                    help="untraced process: blocks with torch.profiler (CPU+CUDA) against blocks without")
    ap.add_argument("--settings", default="off,no_params,defaults,api,api_all",
                    help=f"comma-separated, of {','.join(SETTINGS)}")
    a = ap.parse_args()
    path = os.environ.get("CUDA_INJECTION64_PATH")
    if a.torch_profiler:
        if path:
            sys.exit("api_toggle.py --torch-profiler: run it without kjoule (one CUPTI client at a time)")
    elif not path:
        sys.exit("api_toggle.py: run it under `kjoule run --` (CUDA_INJECTION64_PATH is not set)")
    model, ids = build_bloom560m(a.seq_len)
    if a.torch_profiler:
        from torch.profiler import ProfilerActivity, profile
        names = ["off", "torch_profiler"]
        prof = []

        def switch(name):  # a profiler around the block, or none; the last one ends first
            while prof:
                prof.pop().__exit__(None, None, None)
            if name != "off":
                prof.append(profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]))
                prof[-1].__enter__()
    else:
        setter = ctypes.CDLL(path).kjoule_cost_study_set_api  # dlopen returns the driver's copy
        names = a.settings.split(",")

        def switch(name):
            if setter(SETTINGS[name]) < 0:
                sys.exit("api_toggle.py: kjoule's CUPTI subscriber is not active")
    rest = "off" if a.torch_profiler else "defaults"  # the setting between rounds and after

    def forward_ms():
        return timed_forward(model, ids)[0]

    rounds = []
    with torch.inference_mode():
        for _ in range(10):
            forward_ms()
        for r in range(a.rounds):
            order = names[:]
            random.Random(r).shuffle(order)
            got = {}
            for name in order:
                switch(name)
                for _ in range(3):
                    forward_ms()
                got[name] = statistics.median(forward_ms() for _ in range(a.block))
            switch(rest)  # a profiler ends with its block
            rounds.append(got)
    med = {n: statistics.median(r[n] for r in rounds) for n in names}
    ratio = {n: statistics.median(r[n] / r["defaults"] for r in rounds) for n in names} \
        if "defaults" in names else {}
    # the host has fast and slow phases lasting seconds: each setting's fastest block is its
    # cost on the quiet host, the median of per-round ratios its cost as met
    fastest = {n: min(r[n] for r in rounds) for n in names}
    fastest_ratio = {n: fastest[n] / fastest["defaults"] for n in names} if "defaults" in names else {}
    to_off = {n: statistics.median(r[n] / r["off"] for r in rounds) for n in names} if "off" in names else {}
    fastest_to_off = {n: fastest[n] / fastest["off"] for n in names} if "off" in names else {}
    print(json.dumps({"mode": "torch.profiler, untraced process" if a.torch_profiler else "kjoule",
                      "seq_len": a.seq_len, "rounds": a.rounds, "block": a.block,
                      "fastest_block_ms": fastest, "fastest_block_ratio_to_defaults": fastest_ratio,
                      "median_ratio_to_off": to_off, "fastest_block_ratio_to_off": fastest_to_off,
                      "median_forward_ms": med, "median_ratio_to_defaults": ratio,
                      "per_round_ms": rounds}))
    for n in names:  # the same, for reading
        print(f"{n:14s} fastest block {fastest[n]:7.2f} ms" +
              (f" x{fastest_to_off[n]:.3f} of off   median of per-round ratios to off x{to_off[n]:.3f}"
               if to_off else ""), file=sys.stderr)


if __name__ == "__main__":
    main()
