#!/usr/bin/env python3
"""The launch handler on this machine's CPU: one traced iteration's launches (a run's
--params-iteration, by default the shipped BLOOM-560M run's) replayed through the injection
library's launch path (launch_path), with and without parameters, with warm caches and with a
program's reads between launches; writes one JSON result (device: this CPU).

usage: run.py --launch-path BUILD/bench/launch_path/launch_path [--run RUN.kjdb] [--rounds N]
              [--repeats N] [--other NAME=OTHER_BUILD/launch_path ...] [--instructions]
              [-o bench/results/launch_path.json]
--other: another build's harness (another launch path, built from this launch_path.c and that
tree's src/trace/inject) taking turns with this one, process by process, each mode; the result
then holds each and its ratio to this build pair by pair. May be given more than once.
--instructions: also each build's instructions a launch, counted by valgrind's callgrind (the launch
record's inclusive count, a run of 60 rounds less one of 10, over 50 rounds' launches, so the groups'
first launches are left out): a figure the machine's noise does not move."""
import argparse
import datetime
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def dump_iteration(run, out):
    """The run's kept iteration, one launch a line: function index, geometry, layout, block (hex).
    Returns the launch count and the iteration's name."""
    db = sqlite3.connect(f"file:{run}?mode=ro", uri=True)
    it = db.execute("SELECT value FROM meta WHERE key = 'params_iteration'").fetchone()
    rows = db.execute(
        "SELECT u.name_id, p.grid_x, p.grid_y, p.grid_z, p.block_x, p.block_y, p.block_z, "
        "p.shmem_dynamic, p.layout, p.params FROM launch_params p JOIN unique_kernel u ON "
        "u.id = p.unique_id WHERE p.iteration IS NOT NULL ORDER BY p.iteration, p.ordinal").fetchall()
    if not rows:
        sys.exit(f"run.py: {run}: no launch_params of a kept iteration (traced without --params-iteration)")
    index = {}
    with open(out, "w") as f:
        for name, gx, gy, gz, bx, by, bz, sh, layout, block in rows:
            fn = index.setdefault(name, len(index))
            f.write(f"{fn} {gx} {gy} {gz} {bx} {by} {bz} {sh or 0} {layout or '-'} "
                    f"{block.hex() if block else '-'}\n")
    return len(rows), it[0] if it else None


def launch_record_instructions(exe, it_file, rounds, extra, tmp):
    """Instructions kj_launch_record executed (callgrind, inclusive) in a run of ROUNDS rounds."""
    out = os.path.join(tmp, "callgrind.out")
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", exe, it_file,
                    str(rounds)] + extra, check=True, capture_output=True)
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", out], check=True,
                          capture_output=True, text=True).stdout
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+\S*:kj_launch_record\s", line)
        if m:
            return int(m.group(1).replace(",", ""))
    sys.exit(f"run.py: {exe}: no kj_launch_record in callgrind's profile")


def instructions_per_launch(exe, it_file, launches, extra, tmp):
    """kj_launch_record's instructions a launch over 50 rounds, the groups' first launches left out."""
    lo = launch_record_instructions(exe, it_file, 10, extra, tmp)
    hi = launch_record_instructions(exe, it_file, 60, extra, tmp)
    return (hi - lo) / (50 * launches)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--launch-path", required=True)
    ap.add_argument("--run", default=os.path.join(ROOT, "examples/runs/bloom560m.kjdb"))
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5, help="processes a mode, alternating")
    ap.add_argument("--cold-kib", type=int, default=256)
    ap.add_argument("--other", action="append", default=[], metavar="NAME=PATH",
                    help="another build's launch_path, taking turns with this one")
    ap.add_argument("--instructions", action="store_true",
                    help="each build's instructions a launch under callgrind (needs valgrind)")
    ap.add_argument("-o", "--out", default=os.path.join(ROOT, "bench/results/launch_path.json"))
    a = ap.parse_args()
    modes = {"defaults": [], "no_params": ["--no-params"],
             "defaults_cold": ["--cold", str(a.cold_kib)],
             "no_params_cold": ["--no-params", "--cold", str(a.cold_kib)]}
    with tempfile.TemporaryDirectory() as tmp:
        it_file = os.path.join(tmp, "iteration.txt")
        n, it = dump_iteration(a.run, it_file)
        builds = {"this": a.launch_path}
        for o in a.other:
            name, sep, path = o.partition("=")
            if not sep or not name or name == "this" or not os.access(path, os.X_OK):
                sys.exit(f"run.py: --other {o}: not NAME=PATH of an executable harness")
            builds[name] = path
        runs = {b: {m: [] for m in modes} for b in builds}
        instructions = None
        if a.instructions:
            if not shutil.which("valgrind") or not shutil.which("callgrind_annotate"):
                sys.exit("run.py: --instructions needs valgrind (apt-get install valgrind)")
            instructions = {b: {m: instructions_per_launch(exe, it_file, n, modes[m], tmp)
                                for m in ("defaults", "no_params")} for b, exe in builds.items()}
        for _ in range(a.repeats):
            for m, extra in modes.items():
                rounds = a.rounds if "cold" not in m else max(2, a.rounds // 4)
                for b, exe in builds.items():
                    out = subprocess.run([exe, it_file, str(rounds)] + extra, check=True,
                                         capture_output=True, text=True).stdout
                    runs[b][m].append(json.loads(out))
    res = {"benchmark": "launch_path: the launch handler on the CPU over a stand-in driver",
           "device": cpu_model(), "cpus": os.cpu_count(), "date": datetime.date.today().isoformat(),
           "command": " ".join(["bench/launch_path/run.py"] + sys.argv[1:]),
           "run": os.path.relpath(a.run, ROOT), "iteration": it, "launches": n,
           "what": "ns_per_launch: kj_launch_record timed around each call (two clock_gettime "
                   "included), each round's mean, median over rounds, one entry a process; "
                   "spool_bytes_per_launch: the spool file over the launches; "
                   "spool_bytes_per_launch_blocks_whole: the same spool with every block sent whole; "
                   "instructions_per_launch (with --instructions): kj_launch_record's inclusive "
                   "instructions under callgrind, 60 rounds less 10 over 50 rounds' launches",
           "builds": {b: os.path.relpath(os.path.abspath(e), ROOT) for b, e in builds.items()},
           "modes": runs["this"]}
    if instructions:
        res["instructions_per_launch"] = instructions
    res["others"] = {b: {"modes": runs[b],
                         "ratio_per_pair": {m: [o["ns_per_launch"]["median"] / t["ns_per_launch"]["median"]
                                                for t, o in zip(runs["this"][m], runs[b][m])]
                                            for m in modes}}
                     for b in builds if b != "this"}
    tmp_out = a.out + ".tmp"
    with open(tmp_out, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    os.replace(tmp_out, a.out)
    for b in builds:
        for m, rs in runs[b].items():
            med = sorted(r["ns_per_launch"]["median"] for r in rs)[len(rs) // 2]
            print(f"{b:8s} {m:16s} {med:8.1f} ns a launch  {rs[0]['spool_bytes_per_launch']:7.1f} bytes "
                  f"(blocks whole {rs[0]['spool_bytes_per_launch_blocks_whole']:.1f})")
    for b, per in (instructions or {}).items():
        print(f"{b:8s} instructions a launch: " + ", ".join(f"{m} {x:.0f}" for m, x in per.items()))
    for b, o in res["others"].items():
        for m, per in o["ratio_per_pair"].items():
            per = sorted(per)
            print(f"{b} / this, {m}: median {per[len(per) // 2]:.3f} over {len(per)} pairs "
                  f"({per[0]:.3f} to {per[-1]:.3f})")


if __name__ == "__main__":
    main()
