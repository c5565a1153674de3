#!/usr/bin/env python3
"""The events one step of a traced program makes, by the kinds bench/event_cost prices: read off a
kjoule run database, per instance of an NVTX range (the step), the median over its instances.

  kernel         kernels launched by the host outside graphs
  graph          graph launches (cuGraphLaunch)
  graph_kernels  the kernels a graph launch runs (median over the step's graph launches)
  nvtx           NVTX ranges that start inside the step, the step's own included
  host           device-to-host copies the host issued (a host read of a device value)
  other_copies   other copies and memsets the host issued (not priced)

    python3 bench/event_cost/program_events.py RUN.kjdb --range forward --name jax_step -o EVENTS.json

The first --skip instances (2) are left out (compilation, warm-up), and at most --most (100) are
counted. Exits naming the database and
the range when the range has fewer than --skip + 3 instances; writes the JSON aside and renames it
into place."""
import argparse
import json
import os
import sqlite3
import statistics
import sys


HOST_ISSUED = "(graph_node_id IS NULL OR graph_node_id = 0) AND launch_ns BETWEEN ? AND ?"  # not a graph's node


def per_instance(db, name, skip, most):
    """Counts per kind for each top-level instance of the range, after the first skip (most of them)."""
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = c.execute("SELECT pid, start_ns, end_ns FROM nvtx_range WHERE name = ? AND depth = 0 AND"
                     " end_ns IS NOT NULL ORDER BY start_ns", (name,)).fetchall()
    out = []
    for pid, start, end in rows[skip:skip + most]:
        one = lambda sql: c.execute(sql, (pid, start, end)).fetchone()[0] or 0
        graphs = c.execute("SELECT h.correlation_id, (SELECT count(*) FROM kernel k WHERE k.pid = h.pid AND"
                           " k.correlation_id = h.correlation_id) FROM host_call h WHERE h.pid = ? AND"
                           " h.op = 'graph_launch' AND h.start_ns BETWEEN ? AND ?", (pid, start, end)).fetchall()
        out.append({
            "kernel": one("SELECT count(*) FROM kernel WHERE pid = ? AND (graph_id IS NULL OR graph_id = 0)"
                          " AND launch_ns BETWEEN ? AND ?"),
            "graph": len(graphs),
            "graph_kernels": statistics.median([n for _, n in graphs]) if graphs else 0,
            "nvtx": one("SELECT count(*) FROM nvtx_range WHERE pid = ? AND start_ns BETWEEN ? AND ?"),
            "host": one(f"SELECT count(*) FROM memcpy WHERE pid = ? AND kind = 'DtoH' AND {HOST_ISSUED}"),
            "other_copies": one(f"SELECT count(*) FROM memcpy WHERE pid = ? AND kind != 'DtoH' AND {HOST_ISSUED}")
                            + one(f"SELECT count(*) FROM memset WHERE pid = ? AND {HOST_ISSUED}"),
        })
    return out, len(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("db")
    ap.add_argument("--range", required=True, help="the NVTX range of one step")
    ap.add_argument("--name", required=True, help="the program's name in the result")
    ap.add_argument("--skip", type=int, default=2)
    ap.add_argument("--most", type=int, default=100, help="instances counted at most (after --skip)")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    try:
        inst, total = per_instance(a.db, a.range, a.skip, a.most)
    except sqlite3.Error as e:
        sys.exit(f"{a.db}: not a kjoule run database ({e})")
    if len(inst) < 3:
        sys.exit(f"{a.db}: the range {a.range!r} has {total} instances; at least {a.skip + 3} are needed")
    kinds = list(inst[0])
    res = {"name": a.name, "db": os.path.basename(a.db), "range": a.range, "instances": len(inst),
           "skipped": a.skip, "events_per_step": {k: statistics.median(i[k] for i in inst) for k in kinds},
           "spread": {k: [min(i[k] for i in inst), max(i[k] for i in inst)] for k in kinds}}
    tmp = a.output + ".tmp"
    with open(tmp, "w") as f:
        json.dump(res, f, indent=1)
    os.replace(tmp, a.output)
    print(f"{a.name}: {res['events_per_step']} over {len(inst)} instances")
    return 0


if __name__ == "__main__":
    sys.exit(main())
