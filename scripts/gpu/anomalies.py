#!/usr/bin/env python3
"""Flags figures that must never appear in kjoule compare's JSON: inf, NaN, a ratio beyond 3x
between a replayed sum and the in-situ sum, an explained fraction outside [1/3, 3], kernels per
iteration that are zero while the run has kernels. Prints one line per finding and a last summary
line; exits 1 when it found any.
usage: anomalies.py NAME COMPARE.json
"""
import json
import math
import sys


def walk(x, path, out):
    if isinstance(x, dict):
        for k, v in x.items():
            walk(v, f"{path}.{k}", out)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            walk(v, f"{path}[{i}]", out)
    elif isinstance(x, float) and not math.isfinite(x):
        out.append(f"{path} = {x}")
    elif isinstance(x, str) and x.lower() in ("inf", "-inf", "nan"):
        out.append(f"{path} = '{x}'")


def main():
    name, path = sys.argv[1], sys.argv[2]
    try:
        text = open(path).read()
        d = json.loads(text, parse_constant=lambda c: float(c))
    except (OSError, ValueError) as e:
        print(f"{name}: compare JSON unreadable: {e}")
        return 1
    found = []
    walk(d, "", found)
    insitu = d.get("insitu_sum_replayed_us")
    for k in ("replay_sum_warm_us", "replay_sum_cold_us", "replay_sum_sequence_us"):
        v = d.get(k)
        if v is not None and insitu:
            if not (insitu / 3 <= v <= insitu * 3):
                found.append(f"{k} {v:.1f} against in-situ {insitu:.1f} (beyond 3x)")
    for k in ("explained_fraction", "explained_fraction_sequence"):
        v = d.get(k)
        if isinstance(v, (int, float)) and not (1 / 3 <= v <= 3):
            found.append(f"{k} = {v}")
    if d.get("kernels_per_iteration") in (0, 0.0, None):
        found.append(f"kernels_per_iteration = {d.get('kernels_per_iteration')}")
    e = d.get("energy_error_pct")
    if isinstance(e, (int, float)) and abs(e) > 200:
        found.append(f"energy_error_pct = {e}")
    for f in found:
        print(f"{name}: {f}")
    print(f"{name}: {len(found)} anomal{'y' if len(found) == 1 else 'ies'}; iterations "
          f"{d.get('iterations', {}).get('measured') if isinstance(d.get('iterations'), dict) else d.get('iterations')}, "
          f"kernels/it {d.get('kernels_per_iteration')}, graphs/it {d.get('graph_launches_per_iteration')}, "
          f"explained {d.get('explained_fraction')}, in-seq {d.get('explained_fraction_sequence')}, "
          f"energy err {d.get('energy_error_pct')} (judgeable {d.get('energy_error_judgeable')})")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
