#!/usr/bin/env python3
"""The launch handler on this machine's CPU: one traced iteration's launches (a run's
--params-iteration, by default the shipped BLOOM-560M run's) replayed through the injection
library's launch path (launch_path), with and without parameters, with warm caches and with a
program's reads between launches; writes one JSON result (device: this CPU).

usage: run.py --launch-path BUILD/bench/launch_path/launch_path [--run RUN.kjdb] [--rounds N]
              [--repeats N] [--other NAME=OTHER_BUILD/launch_path ...]
              [-o bench/results/launch_path.json]
--other: another build's harness (another launch path, built from this launch_path.c and that
tree's src/trace/inject) taking turns with this one, process by process, each mode; the result
then holds each and its ratio to this build pair by pair. May be given more than once."""
import argparse
import datetime
import json
import os
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
                   "spool_bytes_per_launch_blocks_whole: the same spool with every block sent whole",
           "builds": {b: os.path.relpath(os.path.abspath(e), ROOT) for b, e in builds.items()},
           "modes": runs["this"]}
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
    for b, o in res["others"].items():
        for m, per in o["ratio_per_pair"].items():
            per = sorted(per)
            print(f"{b} / this, {m}: median {per[len(per) // 2]:.3f} over {len(per)} pairs "
                  f"({per[0]:.3f} to {per[-1]:.3f})")


if __name__ == "__main__":
    main()
