#!/usr/bin/env python3
"""Grouped cross-validation of `kjoule fit` over measured held-out sets, without a GPU.

Each held-out set is one group: for every group, fit on the training sets plus every other group
and score that group (`run.py --from-csv`), so a change to the features is judged on shapes of
every alignment the sets sample, each scored by models that never saw it. This is how features
versions 6 to 8 were chosen (docs/sweep.md); the result keeps each group's scored rows. A set used here is no longer unseen for the change
it helped choose, so a fresh set measured afterwards gives the figure to report.

usage: grouped_cv.py --kjoule KJOULE --op OP --train DIR [--train DIR ...] --set NAME=DIR
                     [--set NAME=DIR ...] [--work DIR] [-o RESULT.json]
  --train DIR: a folder with sampling_data/ (e.g. bench/results/sweep_csv/h100_combined/linear2/train)
  --set NAME=DIR: a held-out set's folder with sampling_data/ (e.g. .../h100_heldout_0.875/linear2/inside)
Prints one row per group (time and energy MAPE, forward and backward) and their mean, last."""
import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def has_csv(d):
    sd = os.path.join(d, "sampling_data")
    return os.path.isdir(sd) and any(f.endswith(".csv") for f in os.listdir(sd))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kjoule", required=True)
    ap.add_argument("--op", required=True)
    ap.add_argument("--train", action="append", default=[], required=True)
    ap.add_argument("--set", action="append", default=[], required=True, metavar="NAME=DIR")
    ap.add_argument("--work", default="/tmp/kj_grouped_cv")
    ap.add_argument("-o", "--output", default=None)
    a = ap.parse_args()
    sets = {}
    for s in a.set:
        name, sep, d = s.partition("=")
        if not sep or not name or not has_csv(d):
            sys.exit(f"grouped_cv.py: --set {s}: expected NAME=DIR with DIR/sampling_data/*.csv")
        sets[name] = d
    if len(sets) < 2:
        sys.exit("grouped_cv.py: give at least two --set groups")
    for d in a.train:
        if not has_csv(d):
            sys.exit(f"grouped_cv.py: --train {d}: no sampling_data/*.csv there")
    keys = ["fwd_time_mape_pct", "bwd_time_mape_pct", "fwd_energy_mape_pct", "bwd_energy_mape_pct"]
    out = {"op": a.op, "train": a.train, "sets": sets, "groups": {}}
    for held in sets:
        root = os.path.join(a.work, held)
        opdir = os.path.join(root, a.op)
        shutil.rmtree(root, ignore_errors=True)
        for i, d in enumerate(a.train):
            shutil.copytree(d, os.path.join(opdir, f"train{i + 1}"), ignore=shutil.ignore_patterns("sampling_log"))
        for name, d in sets.items():
            dst = "inside" if name == held else f"set_{name}"
            shutil.copytree(d, os.path.join(opdir, dst), ignore=shutil.ignore_patterns("sampling_log"))
        res = os.path.join(a.work, f"{held}.json")
        r = subprocess.run([sys.executable, os.path.join(HERE, "run.py"), "--kjoule", a.kjoule, "--ops", a.op,
                            "--from-csv", root, "--out-dir", os.path.join(a.work, f"{held}_out"), "-o", res],
                           capture_output=True, text=True)
        if r.returncode or not os.path.exists(res):
            sys.exit(f"grouped_cv.py: group {held}: run.py failed: {r.stderr[-1500:]}")
        e = json.load(open(res))["ops"].get(a.op)
        if not e:
            sys.exit(f"grouped_cv.py: group {held}: no result for {a.op}")
        out["groups"][held] = {k: e["inside"]["summary"].get(k) for k in keys}
        # the scored rows (measured, predicted, the error predict quoted) and the models' features version
        out["groups"][held].update({"n_shapes": len({r["shape"] for r in e["inside"]["rows"]}),
                                    "rows": e["inside"]["rows"]})
        out["features_version"] = e.get("features_version")
    mean = {}
    for k in keys:
        v = [g[k] for g in out["groups"].values() if g[k] is not None]
        mean[k] = sum(v) / len(v) if v else None
    out["mean"] = mean
    if a.output:
        with open(a.output + ".tmp", "w") as f:
            json.dump(out, f, indent=1)
        os.replace(a.output + ".tmp", a.output)
    f = lambda x: "-" if x is None else f"{x:.1f}"
    print(f"{'held out':<12} {'fwd t%':>7} {'bwd t%':>7} {'fwd E%':>7} {'bwd E%':>7}")
    for name, g in list(out["groups"].items()) + [("mean", mean)]:
        print(f"{name:<12} " + " ".join(f"{f(g[k]):>7}" for k in keys))
    return 0


if __name__ == "__main__":
    sys.exit(main())
