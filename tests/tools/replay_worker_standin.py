#!/usr/bin/env python3
"""A stand-in for `kjoule-replay-worker --sequence` that speaks its line protocol (KJ_SEQ, KJ_NODE;
src/replay/kj_replay.c, src/replay/kj_replay_topo_store.c) without a GPU, so `kjoule replay
--sequence --graph`'s storage, report and `kjoule compare` are tested on the CPU.

Its times are the run's own, never measurements: every mode's median is the iteration's traced GPU
busy time times a known factor (eager STANDIN_EAGER (2), graph 1, topology STANDIN_TOPO (1)), and
each kernel node of the topology (`kjoule replay --dry-run --json`, through $KJ_STANDIN_KJOULE)
gets its traced duration. Environment: STANDIN_LOG=FILE appends the command line;
STANDIN_FAULT_ON_RANDOM=1 fails every mode with a device assert on `--fill random`, as PyTorch's
index kernels do on random indices, so the host's fallback to small integers is exercised;
STANDIN_MJ=X reports X mJ per replay for every mode (a stand-in figure, never a measurement),
with STANDIN_REASONS=MASK the clock state of its window too (SM clock 1755 MHz mean, 1600-1980, NVML
clocks-event reasons MASK; without it the line is an older worker's);
STANDIN_FAULT_ALWAYS=1 fails
eager and graph on every fill and gives no topology result, as the worker does when the
iteration faults before the topology graph is built; STANDIN_ASSERTS=N writes N device-side assertion lines (as a kernel on random indices prints them);
STANDIN_TOPO_CRASH=1 gives the eager and graph results, then dies of SIGSEGV before the topology's
(as the worker did in the driver's cuGraphLaunch on one rebuilt decode loop); STANDIN_SEQ_KERNELS=1
ends with each kernel's in-sequence time (KJ_TIMING cache=sequence, its traced median), as the
worker's last pass does; STANDIN_SLEEP=S waits S seconds before any result, as a long replay does
(for --budget); and one warning of its own to stderr. Its per-kernel form is
tests/tools/replay_kernel_standin.py."""
import json
import os
import signal
import subprocess
import sys
import time


def arg(argv, name, default=None):
    return argv[argv.index(name) + 1] if name in argv else default


def main():
    argv = sys.argv[1:]
    if os.environ.get("STANDIN_LOG"):
        with open(os.environ["STANDIN_LOG"], "a") as f:
            f.write(" ".join(argv) + "\n")
    for t in range(int(os.environ.get("STANDIN_ASSERTS", "0"))):
        print(f"/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:111: operator(): block: [0,0,0], thread: [{t},0,0]"
              " Assertion `-sizes[i] <= index && index < sizes[i] && \"index out of bounds\"` failed.", file=sys.stderr)
    if os.environ.get("STANDIN_ASSERTS"):
        print("kjoule-replay-worker: warning: a stand-in warning", file=sys.stderr)
    db, it = arg(argv, "--db"), arg(argv, "--sequence")
    if not db or it is None:
        print("usage: replay_worker_standin.py --db RUN --sequence I [--graph [--topology]]", file=sys.stderr)
        return 2
    plan = json.loads(subprocess.run([os.environ["KJ_STANDIN_KJOULE"], "replay", db, "--sequence", "--graph",
                                      "--iteration", it, "--dry-run", "--json"], check=True,
                                     capture_output=True, text=True).stdout)
    busy, kernels, ops = plan["traced_busy_ns"], plan["kernels"], plan["ops"]
    runs = int(arg(argv, "--runs", "100"))
    topo = plan.get("topology") or {}
    if "--topology" in argv:
        for n in topo.get("nodes", []):
            if n["build"] == "kernel" and n["traced_ns"] is not None:
                t = n["traced_ns"]
                print(f"KJ_NODE\tnode={n['index']}\tunique={n['unique_id']}\truns={min(runs, 20)}\tmin={t}"
                      f"\tmedian={t}\tmax={t}\tmean={t}")
    modes = [("eager", float(os.environ.get("STANDIN_EAGER", "2")))]
    if "--graph" in argv:
        modes.append(("graph", 1.0))
    if "--topology" in argv:
        modes.append(("topology", float(os.environ.get("STANDIN_TOPO", "1"))))
    if os.environ.get("STANDIN_FAULT_ALWAYS"):  # as the worker does: no topology once the iteration failed
        for mode, _ in modes:
            if mode != "topology":
                print(f"KJ_SEQ\titeration={it}\tmode={mode}\tstatus=failed\truns=0\tlaunches={kernels}\tops={ops}"
                      f"\tmin=0\tmedian=0\tmax=0\tenergy=0\tmj=0\tunc=0\terror=first iteration: CUDA_ERROR_ASSERT")
        return 0
    if os.environ.get("STANDIN_FAULT_ON_RANDOM") and arg(argv, "--fill", "random") == "random":
        for mode, _ in modes:
            print(f"KJ_SEQ\titeration={it}\tmode={mode}\tstatus=failed\truns=0\tlaunches={kernels}\tops={ops}"
                  f"\tmin=0\tmedian=0\tmax=0\tenergy=0\tmj=0\tunc=0\terror=first iteration: CUDA_ERROR_ASSERT")
        return 0
    time.sleep(float(os.environ.get("STANDIN_SLEEP", "0")))
    mj = os.environ.get("STANDIN_MJ")
    # STANDIN_PACE: the period a paced energy replay ran at (graph modes; never with --no-pace)
    pace = os.environ.get("STANDIN_PACE") if "--no-pace" not in argv else None
    for mode, f in modes:
        if mode == "topology" and os.environ.get("STANDIN_TOPO_CRASH"):
            sys.stdout.flush()
            os.kill(os.getpid(), signal.SIGSEGV)
        t = int(busy * f)
        energy = f"energy=1\tmj={mj}\tunc=0" if mj else "energy=0\tmj=0\tunc=0"
        paced = f"\tpace={pace}" if pace and mj and mode != "eager" else ""
        reasons = os.environ.get("STANDIN_REASONS")
        if mj and reasons:
            paced += f"\tsm_mean=1755.0\tsm_min=1600\tsm_max=1980\treasons={int(reasons, 0)}"
        print(f"KJ_SEQ\titeration={it}\tmode={mode}\tstatus=ok\truns={runs}\tlaunches={kernels}\tops={ops}"
              f"\tmin={t}\tmedian={t}\tmax={t}\t{energy}{paced}\terror=")
    if os.environ.get("STANDIN_SEQ_KERNELS"):
        seen = set()
        for n in topo.get("nodes", []):
            u, t = n.get("unique_id"), n.get("traced_ns")
            if n["build"] == "kernel" and u is not None and t is not None and u not in seen:
                seen.add(u)
                print(f"KJ_TIMING\tunique={u}\tcache=sequence\ttimer=cupti\truns={min(runs, 20)}\tmin={t}"
                      f"\tmedian={t}\tmean={t}.000\tmax={t}\tstdev=0.000")
    return 0


if __name__ == "__main__":
    sys.exit(main())
