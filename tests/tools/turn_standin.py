#!/usr/bin/env python3
"""Stand-in for bench/trace_overhead/turn_worker.py in tests (no GPU, no torch): speaks the same
protocol and reports forwards whose true cost is known, on a host as hostile as the GPU machine.

A forward 'takes' 10 ms x setting x host phase x this process's lottery:
  setting      1.00 plain, 1.10 under kjoule run (CUDA_INJECTION64_PATH set; 1.20 where that library's
               name holds "slow", as a build to compare with; 5 % less under kjoule run with
               KJOULE_CUPTI_STUDY set, as a cheaper CUPTI setting), 1.50 --torch-profiler
  host phase   1x or 2x, switching every 150 ms of wall time, the same for every process
  lottery      a fixed factor per process, within +-1.5 % (memory placement)
Each forward sleeps 1 ms, so rounds and phases interleave in real time."""
import json
import os
import random
import sys
import time

out = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
inject = os.environ.get("CUDA_INJECTION64_PATH", "")
setting = 1.5 if "--torch-profiler" in sys.argv else ((1.2 if "slow" in inject else 1.1) if inject else 1.0)
if inject and os.environ.get("KJOULE_CUPTI_STUDY"):
    setting *= 0.95
lottery = random.Random(os.getpid()).uniform(0.985, 1.015)
noise = random.Random(os.getpid() + 1)


def phase():
    return 2.0 if int(time.monotonic() / 0.15) % 2 else 1.0


out.write(json.dumps({"ready": True, "pid": os.getpid()}) + "\n")
out.flush()
for line in sys.stdin:
    word = line.split()
    if not word:
        continue
    if word[0] == "quit":
        break
    ms = []
    for _ in range(int(word[1])):
        time.sleep(0.001)
        ms.append(10.0 * setting * phase() * lottery * noise.uniform(0.99, 1.01))
    out.write(json.dumps({"ms": ms}) + "\n")
    out.flush()
out.write(json.dumps({"vmhwm_mb": 100.0}) + "\n")
out.flush()
