#!/usr/bin/env python3
"""Check compare's per-iteration figures of a graph-launched run against the database itself:
for each measured iteration (instances of compare's region but the first), the kernels and the
busy time (union of kernels, copies and memsets) of the work issued by the graph launches made
inside it. Exit 0 when compare's kernels per iteration equal that count and its busy time is
within 1 % of that busy time.

  graph_iteration_check.py RUN.kjdb COMPARE.json
"""
import json
import sqlite3
import sys


def union_ns(iv):
    total, cs, ce = 0, None, None
    for a, b in sorted(iv):
        if cs is None or a > ce:
            total += (ce - cs) if cs is not None else 0
            cs, ce = a, b
        else:
            ce = max(ce, b)
    return total + ((ce - cs) if cs is not None else 0)


def graph_launch_busy(db, region):
    """Per measured iteration (instances of region but the first): the busy time in us of the work
    issued by the graph launches made inside it (union of their kernels, copies and memsets) and
    their kernel count. Returns (median busy, median kernels, graph launches in the run, busy list,
    kernel list); medians are None without any."""
    n = db.execute("SELECT count(*) FROM host_call WHERE op = 'graph_launch'").fetchone()[0]
    inst = db.execute("SELECT start_ns, end_ns FROM nvtx_range WHERE name = ? AND end_ns IS NOT NULL"
                      " ORDER BY start_ns", (region,)).fetchall()[1:]
    busy, kern = [], []
    for s, e in inst:
        calls = db.execute("SELECT pid, correlation_id FROM host_call WHERE op = 'graph_launch'"
                           " AND start_ns BETWEEN ? AND ?", (s, e)).fetchall()
        iv = [x for pid, q in calls for x in db.execute("SELECT start_ns, end_ns FROM gpu_activity"
                                                         " WHERE pid = ? AND correlation_id = ?", (pid, q))]
        if not iv:
            continue
        kern.append(sum(db.execute("SELECT count(*) FROM kernel WHERE pid = ? AND correlation_id = ?",
                                   (pid, q)).fetchone()[0] for pid, q in calls))
        busy.append(union_ns(iv) / 1e3)
    sb, sk = sorted(busy), sorted(kern)
    return (sb[len(sb) // 2] if sb else None, sk[len(sk) // 2] if sk else None, n, busy, kern)


def main():
    db = sqlite3.connect(sys.argv[1])
    c = json.load(open(sys.argv[2]))
    _, _, _, busy, kern = graph_launch_busy(db, c["iterations"]["region"])
    if not busy:
        print("no graph launches inside the iterations")
        return 1
    mean_busy = sum(busy) / len(busy)
    ok = len(set(kern)) == 1 and c["kernels_per_iteration"] == kern[0] and \
        abs(c["busy_us"] - mean_busy) <= 0.01 * mean_busy
    print("   graph kernels per iteration %s, compare %s; busy %.1f us (graph launches) vs %.1f us (compare)"
          % (sorted(set(kern)), c["kernels_per_iteration"], mean_busy, c["busy_us"]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
