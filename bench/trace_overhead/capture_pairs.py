#!/usr/bin/env python3
"""The cost of `kjoule run --capture` outside its window, on whole programs: untraced, traced with
a capture window that opens late (or never: FIRST past the program's last instance), and fully
traced, run one after another in a new order each round, as many rounds as fit in --seconds.
Each round's ratio of a traced run's wall time to the untraced run's of the same round is a
paired measurement (the host's speed phases hit a round's runs alike); the estimate is the median
over rounds, with the quartiles. The turns method (turns.py) pairs finer, inside live processes;
this one takes programs that cannot take turns (JAX, a compiled decode loop), start-up included.
Writes a JSON result (bench/results style): device, date, commands, every run's wall time."""
import argparse
import os
import datetime
import functools
import json
import random
import statistics
import subprocess
import sys
import time


def quartiles(xs):
    xs = sorted(xs)
    if len(xs) < 4:
        return [min(xs), max(xs)] if xs else [None, None]
    q = statistics.quantiles(xs, n=4)
    return [q[0], q[2]]


def summary(xs):
    """Median, quartiles and count of per-round figures (None figures when there are none)."""
    return {"median": statistics.median(xs) if xs else None, "quartiles": quartiles(xs), "rounds": len(xs)}


def ratios(a, b):
    """Per round a / b where both ran, summarised."""
    return summary([x / y for x, y in zip(a, b) if x and y])


@functools.lru_cache(maxsize=None)
def gpu_name():
    """'NAME, DRIVER' of the machine's GPUs (one line each, nvidia-smi, asked once), or None."""
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True).stdout.strip() or None
    except OSError:
        return None


def write_json(path, obj):
    """obj into path, written aside and renamed into place."""
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(path + ".tmp", path)


def alternate(names, run, seconds, max_rounds, on_round):
    """Rounds in which every contestant runs once, in a new order each round, while seconds last
    and up to max_rounds: run(name, round) gives its figure (None: failed); on_round(rounds, row)
    after each round, row mapping every name to its figure. Returns the rounds done."""
    t_end = time.perf_counter() + seconds
    rounds = 0
    while rounds < max_rounds and time.perf_counter() < t_end:
        order = list(names)
        random.shuffle(order)
        row = {k: run(k, rounds + 1) for k in order}
        rounds += 1
        on_round(rounds, row)
    return rounds


def run_once(cmd, timeout, metric=None):
    """(the run's wall time in s, or with metric the figure of that name in the last JSON line the
    program printed; its exit status)."""
    t = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE if metric else subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=timeout, text=True)
    wall = time.perf_counter() - t
    if not metric:
        return wall, p.returncode
    for line in reversed((p.stdout or "").splitlines()):
        try:
            v = json.loads(line).get(metric)
        except (ValueError, AttributeError):
            continue
        if isinstance(v, (int, float)) and v > 0:
            return float(v), p.returncode
    return None, p.returncode or 1


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kjoule", required=True)
    ap.add_argument("--capture", required=True, help="the late window, e.g. step@1000000:20")
    ap.add_argument("--name", required=True, help="the workload's name in the result")
    ap.add_argument("--seconds", type=float, default=90)
    ap.add_argument("--max-rounds", type=int, default=50)
    ap.add_argument("--timeout", type=float, default=120, help="one run's limit")
    ap.add_argument("--tmp", default="/tmp")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--metric", help="the program's own figure to compare (a key of the last JSON line it"
                    " prints, e.g. median_ms): its steady loop, start-up left out; default: wall time")
    ap.add_argument("--inside", type=int, metavar="FIRST",
                    help="also a window that opens at instance FIRST and stays open (inside the window),"
                         " CUPTI's activity records alone (KJOULE_COST_STUDY=1024) and --no-params")
    ap.add_argument("--leave-out", nargs="*", default=[], metavar="NAME",
                    help="contestants not run (plain and capture_late always are), e.g. full_trace no_params")
    ap.add_argument("cmd", nargs=argparse.REMAINDER, help="-- PROGRAM ARGS...")
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        ap.error("no program given after --")
    db = lambda tag: [a.kjoule, "run", "--force", "-o", f"{a.tmp}/capture_pairs_{tag}.kjdb"]
    contestants = {
        "plain": cmd,
        "capture_late": db("late") + ["--capture", a.capture, "--"] + cmd,
        "full_trace": db("full") + ["--"] + cmd,
    }
    if a.inside is not None:
        name = a.capture.split("@")[0]
        contestants["capture_inside"] = db("inside") + ["--capture", f"{name}@{a.inside}:100000000", "--"] + cmd
        contestants["no_params"] = db("np") + ["--no-params", "--"] + cmd
        contestants["cupti_only"] = ["env", "KJOULE_COST_STUDY=1024"] + db("act") + ["--no-params", "--"] + cmd
    for k in a.leave_out:
        if k in ("plain", "capture_late") or k not in contestants:
            ap.error(f"--leave-out {k}: not a contestant that can be left out ({', '.join(list(contestants)[2:])})")
        del contestants[k]
    walls = {k: [] for k in contestants}
    failed = {k: 0 for k in contestants}

    def write(rounds):
        """Ratios so far, and the result file written (aside, then renamed), so that a run cut
        short keeps every round that finished."""
        out = {k: ratios(walls[k], walls["plain"]) for k in contestants if k != "plain"}
        if out["capture_late"]["median"] and (out.get("full_trace") or {}).get("median"):
            out["capture_late_over_full"] = ratios(walls["capture_late"], walls["full_trace"])
        # inside the window against CUPTI's floor: kjoule's own cost where it traces
        for k in ("capture_inside", "full_trace", "no_params"):
            if k in walls and "cupti_only" in walls:
                r = ratios(walls[k], walls["cupti_only"])
                if r["rounds"]:
                    out[f"{k}_over_cupti_only"] = r
        write_json(a.output, {
            "workload": a.name, "metric": a.metric or "wall_s", "device": gpu_name(),
            "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "method": "whole runs alternating in a new order each round; ratio per round to the untraced run"
                      + (f"; each run's own {a.metric} (its steady loop), not its wall time" if a.metric else ""),
            "commands": contestants, "rounds": rounds, "failed_runs": failed, "values": walls, "ratios": out})
        return out

    def run(k, rnd):
        try:
            w, rc = run_once(contestants[k], a.timeout, a.metric)
        except subprocess.TimeoutExpired:
            w, rc = None, -1
        failed[k] += rc != 0
        print(f"  round {rnd} {k}: {w} (rc {rc})", flush=True)
        return w if rc == 0 else None

    def on_round(rounds, row):
        for k in contestants:
            walls[k].append(row[k])
        write(rounds)
        print(f"{a.name}: round {rounds} done", flush=True)

    rounds = alternate(contestants, run, a.seconds, a.max_rounds, on_round)
    out = write(rounds)
    show = lambda k: out.get(k, {}).get("median")
    print(f"{a.name}: rounds {rounds}, capture_late/plain {show('capture_late')}, full/plain {show('full_trace')}, "
          f"inside/cupti_only {show('capture_inside_over_cupti_only')}, failed {failed}")
    return 0 if rounds and all(v < rounds for v in failed.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
