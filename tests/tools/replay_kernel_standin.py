#!/usr/bin/env python3
"""A stand-in for `kjoule-replay-worker` in its per-kernel form (--probe, then --unique ID ...), so
that `kjoule replay`'s batching and storage are tested on the CPU. It speaks the worker's line
protocol (src/replay/kj_replay.c): KJ_DEVICE for --probe (an H200, sm_90), then for each --unique
in order KJ_BEGIN, KJ_TIMING (warm, a median of 1000 + ID ns) and KJ_RESULT ok.
STANDIN_HANG_AFTER=N: after N kernels over all the workers of one replay (counted in the file
STANDIN_COUNT), hang, as a worker does on a kernel that never ends; STANDIN_LOG=FILE appends each
command line; STANDIN_FAULT="ID:FILL,FILL;ID:..." makes unique kernel ID fault
(CUDA_ERROR_ILLEGAL_ADDRESS) on those data fills (random, smallint, zero: the worker's --fill);
STANDIN_KERNEL_S=S spends S seconds on each kernel (for --budget). With --energy it answers
KJ_ENERGY (0.4 mJ per 1000 + ID ns, 400 W) and, unless --no-cold-energy or --cache warm, also
KJ_ENERGY_COLD at 1.5 times that (the flush 16 mJ); STANDIN_REASONS=MASK adds the clock state
of its energy window (SM clock 1755 MHz mean, 1600-1980, NVML clocks-event reasons MASK), as the
worker has since it records it (without it the line is an older worker's); STANDIN_B2B=1 adds
KJ_ENERGY_B2B (the back-to-back window beside a paced one: 1.3 times the warm median at 1459 MHz).
A --sequence request
goes to the sequence stand-in, tests/tools/replay_worker_standin.py."""
import os
import sys
import time


def clocks():
    """The clock fields of an energy line under STANDIN_REASONS, else none (an older worker)."""
    r = os.environ.get("STANDIN_REASONS")
    return f"\tsm_mean=1755.0\tsm_min=1600\tsm_max=1980\treasons={int(r, 0)}" if r else ""


def main():
    argv = sys.argv[1:]
    if os.environ.get("STANDIN_LOG"):
        with open(os.environ["STANDIN_LOG"], "a") as f:
            f.write(" ".join(argv) + "\n")
    if "--sequence" in argv:
        seq = os.path.join(os.path.dirname(os.path.abspath(__file__)), "replay_worker_standin.py")
        os.execv(sys.executable, [sys.executable, seq] + argv)
    if "--probe" in argv:
        print("KJ_DEVICE\tname=NVIDIA H200\tcc_major=9\tcc_minor=0\tl2=52428800", flush=True)
        return 0
    ids = [argv[i + 1] for i, a in enumerate(argv) if a == "--unique" and i + 1 < len(argv)]
    hang_after = int(os.environ.get("STANDIN_HANG_AFTER", "0"))
    fill = argv[argv.index("--fill") + 1] if "--fill" in argv else "random"
    faults = {}
    for part in filter(None, os.environ.get("STANDIN_FAULT", "").split(";")):
        uid, fills = part.split(":")
        faults[uid] = fills.split(",")
    count_file = os.environ.get("STANDIN_COUNT")
    for u in ids:
        n = 0
        if count_file:
            n = int(open(count_file).read() or 0) if os.path.exists(count_file) else 0
            with open(count_file, "w") as f:
                f.write(str(n + 1))
        print(f"KJ_BEGIN\tunique={u}", flush=True)
        if hang_after and n >= hang_after:
            time.sleep(3600)
        time.sleep(float(os.environ.get("STANDIN_KERNEL_S", "0")))
        if fill in faults.get(u, []):
            print(f"KJ_RESULT\tunique={u}\tstatus=failed\terror=first launch (kernel ran and failed):"
                  f" CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered) [{fill}]", flush=True)
            continue
        t = 1000 + int(u)
        print(f"KJ_TIMING\tunique={u}\tcache=warm\ttimer=cupti\truns=5\tmin={t}\tmedian={t}\tmean={t}.000"
              f"\tmax={t}\tstdev=0.000", flush=True)
        if "--energy" in argv:
            mj = 0.4 * t / 1000
            print(f"KJ_ENERGY\tunique={u}\tunroll=100\tlaunches=50000\tseconds=1.0\tmj={mj:.9g}\tunc={mj / 100:.9g}"
                  f"\tpower_mw=400000.000\tidle_mw=-1.000\tdyn=nan\tmethod=counter-edges{clocks()}"
                  + (f"\tdata={os.environ['STANDIN_DATA']}" if os.environ.get("STANDIN_DATA") else ""), flush=True)
            if os.environ.get("STANDIN_B2B") == "1":
                print(f"KJ_ENERGY_B2B\tunique={u}\tns={1.3 * t:.3f}\tmj={0.9 * mj:.9g}\tsm_mean=1459.0", flush=True)
            cache = argv[argv.index("--cache") + 1] if "--cache" in argv else "both"
            if "--no-cold-energy" not in argv and cache != "warm":
                print(f"KJ_ENERGY_COLD\tunique={u}\tlaunches=20000\tseconds=2.0\tmj={1.5 * mj:.9g}"
                      f"\tunc={mj / 50:.9g}\tns={1.2 * t:.3f}\tflush_mj=16\tflush_unc=0.1", flush=True)
        print(f"KJ_RESULT\tunique={u}\tstatus=ok\terror=", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
