#!/usr/bin/env python3
"""Why a sweep's GEMM takes longer than the same GEMM inside a training step: PyTorch's own GEMMs
(F.linear with bias, bf16, the GPT step's shapes: tokens x d -> 3d, d -> d, d -> 4d, 4d -> d) timed
three ways on one GPU, with the SM clock and power NVML reads meanwhile:

  burst      after 0.3 s idle, 8 launches, each timed with CUDA events (median of launches 2-8);
  sustained  after 0.3 s of back-to-back launches, 30 launches timed together (as a sweep's
             replays run after their warm-up);
  mixed      each GEMM followed by a memory-bound multiply over 256 MB (about the share of time a
             step spends outside GEMMs), 0.3 s of that, then 30 GEMMs timed one by one.

One JSON with the device, date, command and raw times; a table last.
usage (device): python3 bench/gemm_clocks/run.py -o OUT.json [--tokens 8192 --hidden 1024]
"""
import argparse
import datetime
import json
import statistics
import sys
import threading
import time

import torch
import torch.nn.functional as F


class Nvml:
    """SM clock (MHz) and power (W) sampled every 2 ms in a thread, where pynvml is importable."""

    def __init__(self):
        self.samples, self.on = [], True
        try:
            import pynvml
            pynvml.nvmlInit()
            self.nv, self.h = pynvml, pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        except Exception:
            self.nv = None
            return
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        while self.on:
            try:
                self.samples.append((time.monotonic(), self.nv.nvmlDeviceGetClockInfo(self.h, 1),
                                     self.nv.nvmlDeviceGetPowerUsage(self.h) / 1e3))
            except Exception:
                pass
            time.sleep(0.002)

    def window(self, t0, t1):
        s = [x for x in self.samples if t0 <= x[0] <= t1]
        if not s:
            return None, None
        return statistics.mean(x[1] for x in s), statistics.mean(x[2] for x in s)


def timed_each(fn, n):
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    for a, b in ev:
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    return [a.elapsed_time(b) * 1e3 for a, b in ev]


def spin(fn, seconds):
    t = time.monotonic()
    while time.monotonic() - t < seconds:
        for _ in range(20):
            fn()
        torch.cuda.synchronize()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    d, m = a.hidden, a.tokens
    nv = Nvml()
    big = torch.randn(64 << 20, device="cuda", dtype=torch.float32)  # 256 MB
    mem = lambda: big.mul_(1.0000001)  # noqa: E731
    res = {"benchmark": "gemm_clocks", "device": torch.cuda.get_device_name(),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "command": " ".join(sys.argv),
           "torch": torch.__version__, "shapes": []}
    for name, k, n in (("linear1 (qkv)", d, 3 * d), ("linear2 (proj)", d, d), ("linear3 (up)", d, 4 * d),
                       ("linear4 (down)", 4 * d, d)):
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02
        b = torch.randn(n, device="cuda", dtype=torch.bfloat16)
        g = lambda: F.linear(x, w, b)  # noqa: E731
        g()
        torch.cuda.synchronize()
        row = {"op": name, "m": m, "k": k, "n": n, "flop": 2 * m * k * n}
        bursts, bw = [], []
        for _ in range(5):
            time.sleep(0.3)
            t0 = time.monotonic()
            bursts += timed_each(g, 8)[1:]
            bw.append(nv.window(t0 - 0.001, time.monotonic() + 0.002))
        row["burst_us"] = bursts
        row["burst_clock_mhz"] = statistics.mean([c for c, _ in bw if c]) if any(c for c, _ in bw) else None
        spin(g, 0.3)
        s0, e0 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.monotonic()
        s0.record()
        for _ in range(30):
            g()
        e0.record()
        torch.cuda.synchronize()
        row["sustained_us_per_launch"] = s0.elapsed_time(e0) * 1e3 / 30
        row["sustained_clock_mhz"], row["sustained_power_w"] = nv.window(t0 - 0.3, time.monotonic())
        mixed = lambda: (g(), mem())  # noqa: E731
        spin(mixed, 0.3)
        t0 = time.monotonic()
        times = []
        for _ in range(30):
            times += timed_each(g, 1)
            mem()
        row["mixed_us"] = times
        row["mixed_clock_mhz"], row["mixed_power_w"] = nv.window(t0 - 0.3, time.monotonic())
        row["mem_op_us"] = statistics.median(timed_each(mem, 5))
        row["burst_median_us"] = statistics.median(bursts)
        row["mixed_median_us"] = statistics.median(times)
        res["shapes"].append(row)
    nv.on = False
    with open(a.output, "w") as f:
        json.dump(res, f, indent=1)
    print(f"{'op':16s} {'burst':>8s} {'sustained':>10s} {'mixed':>8s}   clock burst/sust/mixed MHz   power sust/mixed W")
    for r in res["shapes"]:
        c = lambda v: f"{v:.0f}" if v else "-"  # noqa: E731
        print(f"{r['op']:16s} {r['burst_median_us']:8.1f} {r['sustained_us_per_launch']:10.1f} {r['mixed_median_us']:8.1f}"
              f"   {c(r['burst_clock_mhz'])}/{c(r['sustained_clock_mhz'])}/{c(r['mixed_clock_mhz'])}   {c(r['sustained_power_w'])}/{c(r['mixed_power_w'])}")


if __name__ == "__main__":
    main()
