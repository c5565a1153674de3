"""repeat_cv(runs): the per-phase energy spread over separate runs of a pipeline (the 'repeat'
part of pipeline_layers.sh). runs: one list of phase rows (dicts of a NAME.phases.csv: name,
energy_j, latency_ms as text) per run, the first run's order. A phase's energy CV is the sample
standard deviation (n - 1: the runs are a sample of what the method gives) over the mean, for the
phases measured in at least two runs; a row without a figure (failed, not measured) is left out.
Returns {name: {"energy_cv", "latency_ms" (mean), "n"}}.

    python3 scripts/gpu/repeat_cv.py RESULT.json [--write]
recomputes a result's repeat.cv from its raw runs (--write: in place) and prints it."""
import json
import math
import statistics
import sys


def _num(x):
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def repeat_cv(runs):
    out = {}
    if not runs:
        return out
    for k, row in enumerate(runs[0]):
        es = [_num(r[k].get("energy_j")) for r in runs if k < len(r)]
        es = [e for e in es if e]
        ls = [_num(r[k].get("latency_ms")) for r in runs if k < len(r)]
        ls = [v for v in ls if v]
        if len(es) >= 2:
            out[row["name"]] = {"energy_cv": statistics.stdev(es) / statistics.mean(es),
                                "latency_ms": statistics.mean(ls) if ls else None, "n": len(es)}
    return out


def main(argv):
    if len(argv) < 2 or argv[1].startswith("-"):
        print(__doc__.strip().splitlines()[-2].strip(), file=sys.stderr)
        return 2
    d = json.load(open(argv[1]))
    rep = d.get("repeat")
    if not rep or not rep.get("runs"):
        print("%s: no repeat.runs" % argv[1], file=sys.stderr)
        return 1
    rep["cv"] = repeat_cv(rep["runs"])
    for name, c in rep["cv"].items():
        print("%-32s %.3f%% energy CV over %d runs, %.4f ms" % (name, 100 * c["energy_cv"], c["n"], c["latency_ms"]))
    if "--write" in argv[2:]:
        with open(argv[1], "w") as f:
            json.dump(d, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
