#!/usr/bin/env python3
"""How well can any shape-based predictor do on measured held-out GEMM shapes? Without a GPU.

Three figures from committed sweep CSVs (and, optionally, the committed scores of `kjoule fit`):
1. neighbours: each held-out shape predicted from the measured times of its nearest shapes in
   every other folder (same mp and b; a log-linear plane through the k nearest in (log l, log dim),
   weighted by closeness): what interpolating the measurements themselves scores, set by set;
2. repeats: shapes measured twice in one call (two folders of one call, e.g. the energy grid and
   the time-only dense grid), as |a/b - 1|: the measurement's own spread at one shape;
3. the model: its scored rows of each set (predict_heldout_sets.json, split per set by gemm_floor_all.sh), split by size.
Each figure is given for shapes under and over --small-us (20 us) of measured time.

usage: gemm_floor.py --op OP --set NAME=DIR [--set ...] [--pool NAME=DIR ...] [--pair DIR:DIR ...]
                     [--model-result NAME=RESULT.json ...] [--k 4,6,10] [--small-us 20] [-o RESULT.json]
  DIR: a folder with sampling_data/*.csv (e.g. bench/results/sweep_csv/h100_heldout_0.3125/linear2/inside)
  --set: a held-out set (scored, and a neighbour source for the others); --pool: neighbours only
A malformed CSV row is refused with its file and line. Prints one row per set last."""
import argparse
import csv
import datetime
import glob
import json
import math
import os
import statistics
import sys

COLS = ("mp", "b", "l", "dim")
TIMES = {"fwd": "F_dur(us)", "bwd": "B_dur(us)"}


def fail(msg):
    sys.exit("gemm_floor.py: " + msg)


def read_dir(d):
    """{(shape, prop): time_us} of every ok row of DIR/sampling_data/*.csv; refuses a bad row."""
    files = sorted(glob.glob(os.path.join(d, "sampling_data", "*.csv")))
    if not files:
        fail(f"{d}: no sampling_data/*.csv there")
    rows = {}
    for f in files:
        with open(f, newline="") as fh:
            r = csv.DictReader(fh)
            missing = [c for c in COLS + tuple(TIMES.values()) if c not in (r.fieldnames or [])]
            if missing:
                fail(f"{f}:1: no column {', '.join(missing)}")
            for row in r:
                line = r.line_num
                if row.get("status", "ok") != "ok":
                    continue
                try:
                    shape = tuple(int(row[c]) for c in COLS)
                    vals = {p: float(row[c]) for p, c in TIMES.items()}
                except (TypeError, ValueError):
                    fail(f"{f}:{line}: not a shape and two times: {','.join(str(row.get(c)) for c in COLS + tuple(TIMES.values()))}")
                if min(shape) < 1 or not all(math.isfinite(v) and v > 0 for v in vals.values()):
                    fail(f"{f}:{line}: a shape value below 1 or a time that is not a positive number")
                for p, v in vals.items():
                    rows[(shape, p)] = v
    return rows


def solve3(a, b):
    """x of the 3x3 system a x = b (Gaussian elimination with pivoting); None when singular."""
    m = [list(a[i]) + [b[i]] for i in range(3)]
    for c in range(3):
        p = max(range(c, 3), key=lambda i: abs(m[i][c]))
        if abs(m[p][c]) < 1e-12:
            return None
        m[c], m[p] = m[p], m[c]
        for i in range(3):
            if i != c:
                f = m[i][c] / m[c][c]
                m[i] = [x - f * y for x, y in zip(m[i], m[c])]
    return [m[i][3] / m[i][i] for i in range(3)]


def neighbour_predict(pool, shape, prop, k):
    """time at shape from the k nearest pooled shapes of the same mp and b; None without 3 of them."""
    mp, b, l, d = shape
    q = (math.log(l), math.log(d))
    cand = []
    for (s, p), t in pool.items():
        if p == prop and s[0] == mp and s[1] == b and s != shape:
            x = (math.log(s[2]), math.log(s[3]))
            cand.append((math.hypot(x[0] - q[0], x[1] - q[1]), x, math.log(t)))
    if len(cand) < 3:
        return None
    cand.sort(key=lambda c: c[0])
    ata = [[0.0] * 3 for _ in range(3)]
    aty = [0.0] * 3
    for dist, x, y in cand[:k]:
        w = 1.0 / (dist + 1e-3)
        row = (1.0, x[0], x[1])
        for i in range(3):
            aty[i] += w * w * row[i] * y
            for j in range(3):
                ata[i][j] += w * w * row[i] * row[j]
    c = solve3(ata, aty)
    if c is None:  # the nearest shapes lie on a line: their weighted mean instead
        ws = [1.0 / (dist + 1e-3) for dist, _, _ in cand[:k]]
        return math.exp(sum(w * y for w, (_, _, y) in zip(ws, cand[:k])) / sum(ws))
    return math.exp(c[0] + c[1] * q[0] + c[2] * q[1])


def bands(pairs, small_us):
    """MAPE (%) and count of (measured, relative error) pairs: all, under and over small_us."""
    out = {}
    for name, sel in (("all", lambda t: True), ("small", lambda t: t < small_us), ("large", lambda t: t >= small_us)):
        e = [abs(x) for t, x in pairs if sel(t)]
        out[name] = {"n": len(e), "mape_pct": round(100 * statistics.mean(e), 3) if e else None}
    return out


def named(specs, what):
    out = {}
    for s in specs:
        name, sep, v = s.partition("=")
        if not sep or not name or not v:
            fail(f"{what} {s}: expected NAME=PATH")
        if name in out:
            fail(f"{what} {s}: the name {name} is given twice")
        out[name] = v
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--op", required=True)
    ap.add_argument("--set", action="append", default=[], required=True, metavar="NAME=DIR")
    ap.add_argument("--pool", action="append", default=[], metavar="NAME=DIR")
    ap.add_argument("--pair", action="append", default=[], metavar="DIR:DIR")
    ap.add_argument("--model-result", action="append", default=[], metavar="NAME=RESULT.json")
    ap.add_argument("--k", default="4,6,10")
    ap.add_argument("--small-us", type=float, default=20.0)
    ap.add_argument("-o", "--output")
    a = ap.parse_args()
    try:
        ks = [int(x) for x in a.k.split(",")]
    except ValueError:
        ks = []
    if not ks or min(ks) < 3:
        fail(f"--k {a.k}: expected a comma list of integers of at least 3")
    sets = {n: read_dir(d) for n, d in named(a.set, "--set").items()}
    pools = {n: read_dir(d) for n, d in named(a.pool, "--pool").items()}
    clash = set(sets) & set(pools)
    if clash:
        fail(f"--pool {sorted(clash)[0]}: also a --set")
    res = {"benchmark": "predict_gemm_floor", "op": a.op,
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "command": " ".join(["bench/predict_accuracy/gemm_floor.py"] + sys.argv[1:]),
           "small_us": a.small_us, "k": ks, "sets": {}, "repeats": [], "model": {}}

    # 1. neighbours: every other set and the pool
    for name, rows in sets.items():
        pool = {}
        for other, r in list(sets.items()) + list(pools.items()):
            if other != name:
                pool.update(r)
        entry = {"n_shapes": len({s for s, _ in rows}), "neighbours": {}}
        for k in ks:
            per = {}
            for prop in TIMES:
                pairs = []
                for (s, p), t in sorted(rows.items()):
                    if p == prop:
                        y = neighbour_predict(pool, s, prop, k)
                        if y is not None:
                            pairs.append((t, y / t - 1))
                per[prop] = bands(pairs, a.small_us)
            entry["neighbours"][f"k{k}"] = per
        res["sets"][name] = entry

    # 2. repeats: two folders of one call
    for spec in a.pair:
        d1, sep, d2 = spec.partition(":")
        if not sep:
            fail(f"--pair {spec}: expected DIR:DIR")
        r1, r2 = read_dir(d1), read_dir(d2)
        common = sorted(set(r1) & set(r2))
        if not common:
            fail(f"--pair {spec}: the two folders share no shape")
        per = {}
        for prop in TIMES:
            per[prop] = bands([(r2[key], r1[key] / r2[key] - 1) for key in common if key[1] == prop], a.small_us)
        res["repeats"].append({"first": d1, "second": d2, "shapes": len({s for s, _ in common}), "by_prop": per})

    # 3. the committed model scores of each set, by size
    for name, path in named(a.model_result, "--model-result").items():
        try:
            with open(path) as fh:
                rows = json.load(fh)["ops"][a.op]["inside"]["rows"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            fail(f"--model-result {name}={path}: no ops.{a.op}.inside.rows there ({type(e).__name__})")
        per = {}
        for prop in TIMES:
            pairs = [(r["time_us"], r["time_us_pred"] / r["time_us"] - 1) for r in rows
                     if r.get("prop") == prop and r.get("time_us") and r.get("time_us_pred")]
            per[prop] = bands(pairs, a.small_us)
        res["model"][name] = {"file": path, "by_prop": per}

    if a.output:
        tmp = a.output + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(res, fh, indent=1, allow_nan=False)
        os.replace(tmp, a.output)
    f = lambda b: "-" if b["mape_pct"] is None else f"{b['mape_pct']:.1f} ({b['n']})"
    k = f"k{ks[-1]}"
    print(f"{a.op}: MAPE % (count) of held-out times from the {ks[-1]} nearest measured shapes; the model's where given")
    print(f"{'set':<14} {'fwd all':>10} {'fwd <' + str(int(a.small_us)):>10} {'fwd >=':>10} {'bwd all':>10} "
          f"{'model fwd':>10} {'model <':>10} {'model >=':>10}")
    for name, e in res["sets"].items():
        n, m = e["neighbours"][k], res["model"].get(name, {}).get("by_prop", {}).get("fwd")
        print(f"{name:<14} {f(n['fwd']['all']):>10} {f(n['fwd']['small']):>10} {f(n['fwd']['large']):>10} "
              f"{f(n['bwd']['all']):>10} {f(m['all']) if m else '-':>10} {f(m['small']) if m else '-':>10} "
              f"{f(m['large']) if m else '-':>10}")
    for r in res["repeats"]:
        b = r["by_prop"]
        print(f"repeats in one call ({r['shapes']} shapes, {r['first']} : {r['second']}): |a/b - 1| % fwd "
              f"{f(b['fwd']['small'])} under, {f(b['fwd']['large'])} over; bwd {f(b['bwd']['small'])}, {f(b['bwd']['large'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
