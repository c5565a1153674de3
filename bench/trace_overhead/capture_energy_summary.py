#!/usr/bin/env python3
"""scripts/gpu/capture_energy.sh's result: OUT/capture_energy.json from each steady loop's
`kjoule compare --json` (OUT/capture_energy/NAME.compare.json) and the program's own last line
(NAME.out: its step times and NVML energy per step over all its steps), with the device, date and command.
Run as: capture_energy_summary.py OUT LOOPS ARGS, LOOPS holding one line per loop run,
NAME|PROGRAM|WINDOW|EXIT CODE|DATABASE. From each database, the instances in tenths, in order. Written aside and renamed into
place; prints a short table last."""
import datetime
import json
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_pairs import gpu_name, write_json  # noqa: E402  (one copy)

out, loops_file, args = sys.argv[1], sys.argv[2], sys.argv[3]
res = {"benchmark": "capture_energy", "device": (gpu_name() or "unknown").splitlines()[0],
       "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
       "command": f"bash scripts/gpu/capture_energy.sh {args}".strip(),
       "what": "kjoule run --capture on steady training loops: the captured iterations' energy per "
               "iteration against the whole run's (kjoule compare --json, capture)",
       "loops": {}}
KEYS = ("energy_agreement", "energy_why", "whole_run", "captured", "captured_slower_pct")


def capture_of(path):
    """compare --json's capture figures (KEYS), or {"error": why}."""
    try:
        cap = json.load(open(path)).get("capture") or {}
        return {k: cap.get(k) for k in KEYS}
    except (OSError, ValueError) as e:
        return {"error": str(e)}


def tenths(db):
    """The run's instances in ten consecutive sets: each set's instances, captured ones, mean wall
    time (ms), and over its span the mean power (W), SM clock (MHz) and temperature (C) of the
    power samples; [] when the database cannot be read."""
    try:
        c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        marks = c.execute("SELECT start_ns, end_ns, captured FROM iteration_mark WHERE end_ns >= start_ns "
                          "ORDER BY start_ns").fetchall()
        rows = []
        for k in range(10):
            part = marks[len(marks) * k // 10:len(marks) * (k + 1) // 10]
            if not part:
                continue
            p = c.execute("SELECT avg(power_mw) / 1e3, avg(sm_clock_mhz), avg(temp_c) FROM power_sample "
                          "WHERE power_mw IS NOT NULL AND t_ns BETWEEN ? AND ?", (part[0][0], part[-1][1])).fetchone()
            rows.append({"instances": len(part), "captured": sum(1 for m in part if m[2]),
                         "wall_ms_mean": sum(m[1] - m[0] for m in part) / len(part) / 1e6,
                         "power_w": p[0], "sm_clock_mhz": p[1], "temp_c": p[2]})
        return rows
    except sqlite3.Error:
        return []


for line in open(loops_file):
    name, program, window, rc, db = line.rstrip("\n").split("|")
    loop = {"program": program, "capture": window, "rc": int(rc)}
    loop.update(capture_of(os.path.join(out, "capture_energy", f"{name}.compare.json")))
    loop["tenths"] = tenths(db)
    try:  # the program's own last line: its step times (CUDA events) and NVML energy over all its steps
        said = [json.loads(x) for x in open(os.path.join(out, "capture_energy", f"{name}.out")) if x.startswith("{")][-1]
        loop["program_says"] = {k: said.get(k) for k in ("steps", "ms_per_step_median", "ms_per_step_mean",
                                                          "energy_j_per_step_nvml", "energy_not_measured")}
    except (OSError, ValueError, IndexError) as e:
        loop["program_says"] = {"error": str(e)}
    res["loops"][name] = loop
write_json(os.path.join(out, "capture_energy.json"), res)

print("\n== capture energy: captured iterations against the whole run")
print(f"{'loop':16s} {'captured J':>14s} {'whole run J':>14s} {'apart %':>8s} {'bound %':>8s} {'within':>7s} {'slower %':>9s}")
for name, l in res["loops"].items():
    g, c, w = l.get("energy_agreement") or {}, l.get("captured") or {}, l.get("whole_run") or {}
    def j(x):
        m, u = x.get("energy_j_mean"), x.get("energy_unc_j_mean")
        return f"{m:.3f}±{u:.3f}" if isinstance(m, (int, float)) and isinstance(u, (int, float)) else "-"
    def f(v):
        return f"{v:.2f}" if isinstance(v, (int, float)) else "-"
    print(f"{name:16s} {j(c):>14s} {j(w):>14s} {f(g.get('apart_pct')):>8s} {f(g.get('bound_pct')):>8s} "
          f"{str(g.get('within')):>7s} {f(l.get('captured_slower_pct')):>9s}" + (f"  {l['error']}" if l.get("error") else ""))
for name, l in res["loops"].items():
    print(f"{name} by tenths: wall ms / W / MHz / C: " + "  ".join(
        f"{t['wall_ms_mean']:.1f}/{t['power_w'] or 0:.0f}/{t['sm_clock_mhz'] or 0:.0f}/{t['temp_c'] or 0:.0f}" for t in l["tenths"]))
