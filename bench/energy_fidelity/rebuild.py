#!/usr/bin/env python3
"""A result of the energy fidelity bench rebuilt from one call's logs and slim run databases, for
a call whose result file did not come back from the GPU machine (the logs and databases did).

  python3 bench/energy_fidelity/rebuild.py --kjoule build/kjoule --logs LOGS --dbs SLIM \
      --environment "TEXT" -o RESULT.json

Per program (NAME_replay.log in LOGS, NAME.kjdb in SLIM): the program's command and flags as
run.py runs them, the GPU from the database's device table (the device its kernels ran on), the
date from the run's start, the replay's seconds from the last time stamp of its log, and compare's
figures recomputed here. The run's own seconds are not in the logs: run_s is null."""
import argparse
import datetime
import glob
import json
import os
import re
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as bench  # noqa: E402  (the program table, analyze() and summary())


def device_of(db):
    """'name, driver, uuid' of the GPU the run's kernels ran on (the run keeps no serial)."""
    c = sqlite3.connect(db)
    row = c.execute("SELECT d.name, d.driver_version, d.uuid FROM device d WHERE d.id ="
                    " (SELECT device_id FROM kernel GROUP BY device_id ORDER BY count(*) DESC LIMIT 1)").fetchone()
    start = c.execute("SELECT value FROM meta WHERE key = 'start_realtime'").fetchone()
    c.close()
    return ", ".join(str(x) for x in row if x is not None) if row else None, start[0] if start else None


def replay_seconds(log):
    last = None
    for line in open(log, errors="replace"):
        m = re.match(r"\[\s*([0-9.]+)\]", line)
        if m:
            last = float(m.group(1))
    return last


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kjoule", required=True)
    ap.add_argument("--logs", required=True)
    ap.add_argument("--dbs", required=True)
    ap.add_argument("--environment", help="what was special about the call (shown per program)")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    kj = os.path.abspath(a.kjoule)
    res = {"benchmark": "energy_fidelity", "programs": {}, "rebuilt": " ".join(sys.argv),
           "rebuilt_date": datetime.datetime.now(datetime.timezone.utc).isoformat()}
    for log in sorted(glob.glob(os.path.join(a.logs, "*_replay.log"))):
        name = os.path.basename(log)[: -len("_replay.log")]
        base, data = bench.base_and_data(name)
        db = os.path.join(a.dbs, name + ".kjdb")
        if base not in bench.PROGRAMS or not os.path.exists(db):
            sys.exit(f"{log}: no program {base} in run.py, or no {db}")
        program = list(bench.PROGRAMS[base])
        if data == "snapshot" and base in bench.SNAPSHOT_ENV:
            program = ["env", *bench.SNAPSHOT_ENV[base], *program]
        dev, date = device_of(db)
        p = {"kind": bench.KIND[base] + (", replayed on its saved buffers" if data == "snapshot" else ""),
             "data": data, "device": dev, "date": date, "program": " ".join(program),
             "run_flags": bench.RUN_FLAGS.get(base, []) + (["--snapshot=8192"] if data == "snapshot" else []),
             "run_rc": 0, "run_s": None, "replay_flags": bench.REPLAY_FLAGS.get(base, []),
             "replay_s": replay_seconds(log),
             "command": f"bash bench/energy_fidelity/device_run.sh (rebuilt: {a.logs})"}
        if a.environment:
            p["environment"] = a.environment
        p["compare_rc"], p["compare"], p["compare_bad_numbers"] = bench.analyze(kj, db)
        res["programs"][name] = p
        res.setdefault("device", dev)
        res.setdefault("date", date)
        res.setdefault("command", p["command"])
    bench.summary(res)
    with open(a.output + ".tmp", "w") as f:
        json.dump(res, f, indent=1)
    os.replace(a.output + ".tmp", a.output)
    bench.table(res)


if __name__ == "__main__":
    main()
