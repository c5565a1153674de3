#!/usr/bin/env python3
"""A stand-in for `kjoule-replay-worker` in its per-kernel form (--probe, then --unique ID ...), so
that `kjoule replay`'s batching and storage are tested on the CPU. It speaks the worker's line
protocol (src/replay/kj_replay.c): KJ_DEVICE for --probe (an H200, sm_90), then for each --unique
in order KJ_BEGIN, KJ_TIMING (warm, a median of 1000 + ID ns) and KJ_RESULT ok.
STANDIN_HANG_AFTER=N: after N kernels over all the workers of one replay (counted in the file
STANDIN_COUNT), hang, as a worker does on a kernel that never ends; STANDIN_LOG=FILE appends each
command line."""
import os
import sys
import time


def main():
    argv = sys.argv[1:]
    if os.environ.get("STANDIN_LOG"):
        with open(os.environ["STANDIN_LOG"], "a") as f:
            f.write(" ".join(argv) + "\n")
    if "--probe" in argv:
        print("KJ_DEVICE\tname=NVIDIA H200\tcc_major=9\tcc_minor=0\tl2=52428800", flush=True)
        return 0
    ids = [argv[i + 1] for i, a in enumerate(argv) if a == "--unique" and i + 1 < len(argv)]
    hang_after = int(os.environ.get("STANDIN_HANG_AFTER", "0"))
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
        t = 1000 + int(u)
        print(f"KJ_TIMING\tunique={u}\tcache=warm\ttimer=cupti\truns=5\tmin={t}\tmedian={t}\tmean={t}.000"
              f"\tmax={t}\tstdev=0.000", flush=True)
        print(f"KJ_RESULT\tunique={u}\tstatus=ok\terror=", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
