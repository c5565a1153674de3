#!/usr/bin/env python3
"""Tracing overhead on BLOOM-560M, whole processes taking turns: plain, kjoule (--no-params,
defaults, --api, ...) and torch.profiler side by side.

Every contestant is its own process (bench/trace_overhead/turn_worker.py; the traced ones under
`kjoule run`, exactly as a user would run them), all alive at once, each with the model built.
Round after round, in a new order each round, each contestant gets a turn of --block forwards
while the others wait; only one uses the GPU at a time. A round takes a second or two, so the
host's speed phases (on the shared GPU machine a plain forward drifts from 9 to 20 ms over
seconds to minutes) hit all contestants of a round alike, and the ratio of each contestant's
block median to plain's block median in the same round is a paired measurement. The estimate
is the median of those ratios over rounds. Untraced means untraced: plain is a process without
kjoule or CUPTI. Writes a JSON result file (device, date, command, raw numbers) at the end and
after every 10 rounds."""
import argparse
import datetime
import json
import math
import os
import shlex
import random
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from capture_pairs import gpu_name, write_json  # noqa: E402  (one copy)
from summarize import ALL_TARGETS  # noqa: E402
WORKER = os.path.join(HERE, "turn_worker.py")


WORKLOADS = {"bloom560m": "BLOOM-560M seq 5 batch 1 fp16 (bench/trace_overhead/turn_worker.py)",
             "gpt2m": "GPT-2-medium-shaped decoder (24 x 1024, 16 heads) eager, batch 4 x 128, fp16 "
                      "(examples/gpt_graph.py's model, bench/trace_overhead/turn_worker.py --model gpt2m)",
             "jax_step": "examples/jax_step.py's jitted transformer block (bf16, batch 8 x 512, dim 1024), host-bound: "
                         "one graph launch a step (bench/trace_overhead/turn_worker.py --model jax_step)",
             "decode": "examples/hf_decode.py's compiled decode loop (Llama-shaped, 8 x 1024, static cache, "
                       "torch.compile + CUDA graphs), one request of 32 tokens a turn's forward, host-bound "
                       "(bench/trace_overhead/turn_worker.py --model decode)"}


def contestants(kjoule, tmp, pin, worker, model="bloom560m", base_inject=None, worker_cmd=None):
    """Command line of each contestant; copy k of a traced one writes its own database.
    base_inject: another build's injection library, for the *_base contestants (A/B in one run).
    worker_cmd: another worker's command line (a list) instead of turn_worker.py's."""
    w = list(worker_cmd) if worker_cmd else (
        [sys.executable, worker, f"--model={model}"] + ([f"--pin-cpu={pin}"] if pin is not None else []))
    traced = lambda name, *opts: lambda k: [kjoule, "run", "--force", "-o", f"{tmp}/{name}{k}.kjdb", *opts, "--"] + w
    plain = lambda *opts: lambda k: w + list(opts)
    with_cost = lambda make, bits: lambda k: make(k) + [f"--kjoule-cost={bits}"]
    with_base = lambda make: lambda k: ["env", f"KJ_INJECT_LIB={base_inject}"] + make(k)
    return {
        "plain": plain(),
        "kjoule_no_params": traced("np", "--no-params"),
        "kjoule_default": traced("d"),
        # the defaults with CUPTI's buffers handed back every 500 ms instead of 200 ms
        "kjoule_default_flush500": lambda k: ["env", "KJOULE_FLUSH_MS=500"] + traced("df5")(k),
        "kjoule_api": traced("a", "--api"),
        # --capture with a window that never opens in the run: the cost outside the window (each
        # forward's range boundaries followed, no activity, no per-launch records)
        "kjoule_capture_late": traced("cl", "--capture", "forward@1000000000:20"),
        # a window open from the first forward on: the cost inside a window
        "kjoule_capture_inside": traced("ci", "--capture", "forward@0:1000000000"),
        # the same with CUPTI kept in the program outside the window (--capture-attached)
        "kjoule_capture_late_attached": traced("clt", "--capture", "forward@1000000000:20", "--capture-attached"),
        # the same without the power sampler (what reading NVML beside the program costs it)
        "kjoule_capture_late_no_power": traced("cln", "--capture", "forward@1000000000:20", "--no-power"),
        "kjoule_capture_late_no_watch": traced("clw", "--capture", "forward@1000000000:20", "--no-watch"),
        # the same with CUPTI's allocation records off outside the window too (the one activity kind
        # a window leaves on): KJOULE_CUPTI_STUDY=kernels_only keeps the kernel records alone
        "kjoule_capture_late_no_alloc": lambda k: ["env", "KJOULE_CUPTI_STUDY=kernels_only"] + traced(
            "cla", "--capture", "forward@1000000000:20")(k),
        # the same with nothing of CUPTI's on from cuInit (KJOULE_COST_STUDY=512: no callbacks, no
        # activity kind ever enabled): what CUPTI being loaded and subscribed costs by itself
        "kjoule_capture_late_cupti_idle": lambda k: ["env", "KJOULE_COST_STUDY=512"] + traced(
            "clc", "--capture", "forward@1000000000:20")(k),
        # the same without libkjoule_nccl.so in LD_PRELOAD
        "kjoule_capture_late_no_nccl": traced("clq", "--capture", "forward@1000000000:20", "--no-nccl-calls"),
        # the same with CUPTI's buffers asked for every 5 s instead of every 200 ms
        "kjoule_capture_late_flush5000": lambda k: ["env", "KJOULE_FLUSH_MS=5000"] + traced(
            "clf", "--capture", "forward@1000000000:20")(k),
        # kjoule run with an injection library that does nothing at all: the parent, its sampler
        # and the environment it sets, without CUPTI
        "kjoule_noop_inject": lambda k: ["env", f"KJ_INJECT_LIB={noop_inject(tmp)}"] + traced("nop")(k),
        "kjoule_api_all": traced("aa", "--api=all"),
        "kjoule_default_no_power": traced("dnp", "--no-power"),
        # the defaults less the watch for other processes on the GPU (issue 16)
        "kjoule_default_no_watch": traced("dnw", "--no-watch"),
        # CUPTI loaded, kjoule's threads and the parent's sampler running, nothing traced
        "kjoule_off": with_cost(traced("off"), 512),
        # CUPTI's kernel, copy, memset, allocation and NVTX activity, none of kjoule's callbacks
        "cupti_activity_only": with_cost(traced("act", "--no-params"), 1280),
        # --no-params with kjoule's callbacks enabled but returning at once: CUPTI's dispatch of
        # them without kjoule's handlers (between cupti_activity_only and kjoule_no_params)
        "kjoule_empty_handlers": with_cost(traced("eh", "--no-params"), 256 + 2048),
        "torch_profiler": plain("--torch-profiler"),
        # the same settings through another build's injection library (--base-inject)
        "kjoule_default_base": with_base(traced("db")),
        "kjoule_no_params_base": with_base(traced("npb", "--no-params")),
    }


def noop_inject(tmp):
    """An injection library whose InitializeInjection does nothing, built once in tmp: its path."""
    path = os.path.join(tmp, "libnoop_inject.so")
    if not os.path.exists(path):
        src = os.path.join(tmp, "noop_inject.c")
        with open(src, "w") as f:
            f.write("int InitializeInjection(void);\nint InitializeInjection(void) { return 1; }\n")
        subprocess.run(["cc", "-shared", "-fPIC", "-o", path, src], check=True)
    return path


def with_cupti_study(every_in, configs, tmp):
    """Contestants named BASE@ITEMS: BASE under KJOULE_CUPTI_STUDY=ITEMS ('+' for ','; the
    injection library's CUPTI settings for cost studies), each writing its databases in a folder of
    its own. every_in(folder) gives the contestants for that folder. Returns {name: command}."""
    out = {}
    for i, c in enumerate(configs):
        base, _, items = c.partition("@")
        if not items:
            continue
        folder = os.path.join(tmp, f"study{i}")
        os.makedirs(folder, exist_ok=True)
        inner = every_in(folder).get(base)
        if inner is None:
            continue
        out[c] = lambda k, inner=inner, items=items: ["env", f"KJOULE_CUPTI_STUDY={items.replace('+', ',')}"] + inner(k)
    return out


class Contestant:
    def __init__(self, name, cmd, log):
        self.name = name
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                     text=True, bufsize=1)

    def ask(self, line):
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            self.ended_early()
        return self.answer()

    def answer(self):
        line = self.proc.stdout.readline()
        if not line:
            self.ended_early()
        return json.loads(line)

    def ended_early(self):
        raise SystemExit(f"turns.py: contestant {self.name} ended early (exit {self.proc.wait()}); see its log")


def config_of(process):
    """'kjoule_default#2' -> 'kjoule_default': the copies of one contestant share its figures."""
    return process.split("#")[0]


def paired(a, b, draws=2000):
    """Median over rounds of a[r] / b[r], with a 95 % interval from resampling the rounds (fixed
    seed). Rounds share the host's phases, so their noise cancels in the pair; each process's own
    placement does not (the process lottery, about +-3 %): it stays whole in the median, outside
    the interval, and only more copies narrow it."""
    med = statistics.median
    x = [p / q for p, q in zip(a, b)]
    rng = random.Random(0)
    boot = sorted(med(rng.choices(x, k=len(x))) for _ in range(draws))
    return {"median": med(x), "ci95": [boot[int(0.025 * draws)], boot[int(0.975 * draws) - 1]], "rounds": len(x),
            "interval_covers": "round-to-round noise only, not the process lottery (more copies narrow that)"}


def summarize(blocks, drop_first):
    """Per round: each contestant's block median (the geometric mean over its copies) over plain's;
    median and quartiles over rounds. Beside it, quantiles of all a contestant's forwards over
    plain's (all met the same phases), and each copy's own ratio (the process lottery)."""
    med = statistics.median
    gmean = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs))
    configs = {}
    for proc in blocks:
        configs.setdefault(config_of(proc), []).append(proc)
    rounds = len(blocks["plain"])
    per_round = lambda procs, r: gmean([med(blocks[p][r][drop_first:]) for p in procs])
    base = [per_round(configs["plain"], r) for r in range(rounds)]
    ratios = {c: [per_round(procs, r) / base[r] for r in range(rounds)] for c, procs in configs.items()}
    s = {}
    for c, procs in configs.items():
        xs = sorted(ratios[c])
        q = lambda f: xs[min(len(xs) - 1, int(f * len(xs)))]
        s[c] = {"ratio_to_plain": med(xs), "ratio_q25": q(0.25), "ratio_q75": q(0.75),
                "block_median_ms": med([per_round(procs, r) for r in range(rounds)])}
        if len(procs) > 1:
            s[c]["ratio_per_copy"] = {p: med([med(blocks[p][r][drop_first:]) / base[r] for r in range(rounds)])
                                      for p in procs}
    pooled = {c: sorted(x for p in procs for b in blocks[p] for x in b[drop_first:]) for c, procs in configs.items()}
    for c in configs:
        for qname, f in (("p10", 0.10), ("p25", 0.25), ("p50", 0.50)):
            at = lambda xs: xs[int(f * (len(xs) - 1))]
            s[c][f"pooled_{qname}_ratio"] = at(pooled[c]) / at(pooled["plain"])
    for c in configs:  # A/B of two builds: each round's ratio of the two (plain cancels)
        a = c.removesuffix("_base")
        if a != c and a in configs:
            s[f"{a}_over_base"] = paired(ratios[a], ratios[c])
    for c in configs:  # a CUPTI study variant over the same contestant with CUPTI's defaults
        a = c.partition("@")[0]
        if a != c and a in configs:
            s[f"{c}_over_base"] = paired(ratios[c], ratios[a])
    for key in ("ratio_to_plain", "pooled_p10_ratio", "pooled_p25_ratio", "pooled_p50_ratio"):
        if "torch_profiler" in s and "kjoule_default" in s and s["torch_profiler"][key] > 1:
            s.setdefault("kjoule_default_extra_over_torch_profiler_extra", {})[key] = (
                (s["kjoule_default"][key] - 1) / (s["torch_profiler"][key] - 1))
    return s, ratios


def write(a, blocks, rss, order):
    summary, ratios = summarize(blocks, a.drop_first) if blocks["plain"] else ({}, {})
    if rss.get("plain"):
        by_config = {}
        for proc, mb in rss.items():
            by_config.setdefault(config_of(proc), []).append(mb)
        summary["rss_over_plain_mb"] = {c: statistics.median(v) - statistics.median(by_config["plain"])
                                        for c, v in by_config.items()}
    result = {"benchmark": "trace_overhead (turns)", "device": gpu_name() or "unknown (no nvidia-smi)",
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
              "command": " ".join(sys.argv), "workload": a.workload or WORKLOADS[a.model],
              "worker_cmd": a.worker_cmd,
              "rounds_done": len(blocks["plain"]), "block": a.block, "warmup_turns": a.warmup_turns,
              "drop_first": a.drop_first, "pin_cpu": a.pin_cpu, "copies": a.copies,
              "estimator": "per round, each contestant's block median forward over plain's block median"
                           " of the same round; median (and quartiles) over rounds",
              "targets": ALL_TARGETS,
              "summary": summary, "ratio_per_round": ratios, "order_per_round": order,
              "peak_rss_mb": rss, "forward_ms_per_round": blocks}
    write_json(a.output, result)
    return summary


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kjoule", required=True, help="the kjoule binary")
    ap.add_argument("--configs", nargs="+",
                    default=["kjoule_no_params", "kjoule_default", "kjoule_api", "torch_profiler"],
                    help="contestants besides plain: kjoule_no_params kjoule_default kjoule_api kjoule_api_all"
                         " kjoule_default_no_power kjoule_default_no_watch kjoule_default_flush500 kjoule_off"
                         " cupti_activity_only kjoule_empty_handlers torch_profiler"
                         " kjoule_default_base kjoule_no_params_base (with --base-inject); NAME@ITEMS runs NAME"
                         " with KJOULE_CUPTI_STUDY=ITEMS ('+' between items, e.g. cupti_activity_only@pinned+devbuf=32)")
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--block", type=int, default=20, help="timed forwards per turn")
    ap.add_argument("--warmup-turns", type=int, default=3, help="untimed rounds first")
    ap.add_argument("--drop-first", type=int, default=1,
                    help="forwards left out at the start of each turn (the GPU switching between processes)")
    ap.add_argument("--pin-cpu", type=int,
                    help="every contestant's launching thread on this one CPU (only one runs at a time), so"
                         " all meet the same core; their other threads stay free")
    ap.add_argument("--copies", type=int, default=1,
                    help="processes per contestant, plain included: each process has its own speed (memory"
                         " placement; ~2 %% here), which copies average out")
    ap.add_argument("--seconds", type=float, default=0, help="stop after this long, whatever --rounds says")
    ap.add_argument("--worker", default=WORKER,
                    help="the contestants' script (default: turn_worker.py; tests give a stand-in)")
    ap.add_argument("--logs", help="folder for the contestants' stderr (default: a temporary one)")
    ap.add_argument("--model", choices=sorted(WORKLOADS), default="bloom560m",
                    help="the workload every contestant runs (turn_worker.py --model)")
    ap.add_argument("--worker-cmd", help="another worker speaking turn_worker.py's protocol (one command line, "
                    "e.g. bench/event_cost's `event_cost --serve KIND EVENTS`); --model and --pin-cpu then do not apply")
    ap.add_argument("--workload", help="with --worker-cmd: the workload's name in the result (for event_cost: "
                    "event_KIND, which bench/event_cost/costs.py reads)")
    ap.add_argument("--keep-dbs", action="store_true",
                    help="keep the traced contestants' run databases (in a temporary folder, named on stderr)")
    ap.add_argument("--base-inject", help="another build's libkjoule_inject.so for the *_base contestants")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="kj-turns-")
    print(f"turns.py: the run databases go to {tmp}" + ("" if a.keep_dbs else " (removed at the end)"), file=sys.stderr)
    logs = a.logs or tmp
    os.makedirs(logs, exist_ok=True)
    if bool(a.worker_cmd) != bool(a.workload):
        ap.error("--worker-cmd and --workload go together")
    worker_cmd = shlex.split(a.worker_cmd) if a.worker_cmd else None
    every_in = lambda folder: contestants(a.kjoule, folder, a.pin_cpu, a.worker, a.model, a.base_inject, worker_cmd)
    every = every_in(tmp)
    every.update(with_cupti_study(every_in, a.configs, tmp))
    unknown = [c for c in a.configs if c not in every or c == "plain" or (c.endswith("_base") and not a.base_inject)]
    if unknown:
        ap.error(f"unknown contestants: {' '.join(unknown)}")
    names = [c + (f"#{k + 1}" if k else "") for k in range(a.copies) for c in ["plain"] + a.configs]
    racers = {}
    try:
        for n in names:
            racers[n] = Contestant(n, every[config_of(n)](n.partition("#")[2]), open(os.path.join(logs, f"{n}.log"), "w"))
        for n in names:
            hello = racers[n].answer()
            print(f"{n:26s} ready (pid {hello.get('pid')})", file=sys.stderr, flush=True)
        blocks = {n: [] for n in names}
        order = []
        t_start = time.monotonic()
        for r in range(a.warmup_turns + a.rounds):
            turn = list(names)
            random.Random(r).shuffle(turn)
            got = {n: racers[n].ask(f"go {a.block}")["ms"] for n in turn}
            if r < a.warmup_turns:
                continue
            order.append(turn)
            for n in names:
                blocks[n].append(got[n])
            done = r + 1 - a.warmup_turns
            if done % 10 == 0:
                s = write(a, blocks, {}, order)
                print(f"round {done}: " + "  ".join(f"{n} {s[n]['ratio_to_plain']:.3f}/{s[n]['pooled_p10_ratio']:.3f}"
                                                    for n in ["plain"] + a.configs),
                      file=sys.stderr, flush=True)
            if a.seconds and time.monotonic() - t_start > a.seconds:
                break
        rss = {n: racers[n].ask("quit")["vmhwm_mb"] for n in names}
    finally:
        for c in racers.values():
            try:
                c.proc.stdin.close()
            except OSError:
                pass
        for c in racers.values():
            try:
                c.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                c.proc.kill()
        if not a.keep_dbs:  # the traced contestants' databases: gigabytes over a long call
            for folder, _, files in os.walk(tmp):
                for f in files:
                    if f.endswith(".kjdb"):
                        os.remove(os.path.join(folder, f))
    s = write(a, blocks, rss, order)
    print(f"{'contestant':26s} {'ratio':>6s} {'q25':>6s} {'q75':>6s} {'pool10':>6s} {'pool25':>6s} {'pool50':>6s}"
          f" {'block ms':>9s} {'+RSS MB':>8s}")
    for n in ["plain"] + a.configs:
        print(f"{n:26s} {s[n]['ratio_to_plain']:6.3f} {s[n]['ratio_q25']:6.3f} {s[n]['ratio_q75']:6.3f}"
              f" {s[n]['pooled_p10_ratio']:6.3f} {s[n]['pooled_p25_ratio']:6.3f} {s[n]['pooled_p50_ratio']:6.3f}"
              f" {s[n]['block_median_ms']:9.2f} {s['rss_over_plain_mb'][n]:8.0f}")
    for k, v in s.items():
        if k.endswith("_over_base"):
            print(f"{k}: {v['median']:.4f} (95 % over rounds {v['ci95'][0]:.4f}-{v['ci95'][1]:.4f}; "
                  "the process lottery is not in it)")
    for k, v in s.get("kjoule_default_extra_over_torch_profiler_extra", {}).items():
        print(f"kjoule defaults' extra time over torch.profiler's ({k}): {v:.3f}")


if __name__ == "__main__":
    main()
