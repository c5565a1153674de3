#!/usr/bin/env python3
"""kjoule's cost per traced event, by kind, from bench/trace_overhead/capture_pairs.py results of
bench/event_cost's loops (one result a kind: kernel, nvtx, graph, graph64, host; metric
us_per_event), or from bench/trace_overhead/turns.py results of `event_cost --serve KIND EVENTS`
(workload event_KIND; many rounds in live processes, where whole runs give few):

  per kind and setting, the median over rounds of (the traced run's us_per_event - the untraced
  run's of the same round), with quartiles: full_trace (defaults), no_params, cupti_only (CUPTI's
  activity records alone), capture_inside (inside a capture window), capture_late (outside one);
  and kjoule's own share beyond CUPTI's: full_trace - cupti_only, per round.

With --program NAME:kernel=K,nvtx=N,graph=G,host=H[:PAIRS.json] (events per step of a program),
the breakdown of its tracing cost per step: count x cost per kind, summed; and where PAIRS.json
(capture_pairs.py on the program itself, metric its step time in ms) is given, the sum against the
measured cost per step (full_trace - plain, median over rounds).

    python3 bench/event_cost/costs.py kernel.json nvtx.json graph.json host.json \\
        --program jax_step:kernel=13,nvtx=18,graph=1,host=0:capture_pairs_jax.json -o RESULT.json

Writes one JSON (bench/results style: device, date, command, the raw per-kind files) aside and
renames it into place; prints a short table last. A file that is no capture_pairs result of an
event_cost loop is refused, naming it; nothing is written then."""
import argparse
import datetime
import json
import os
import shlex
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "trace_overhead"))
from capture_pairs import summary, write_json  # noqa: E402  (one copy)

KINDS = ("kernel", "nvtx", "graph", "graph64", "host")
# turns.py's contestants -> the settings here
TURN_SETTINGS = {"plain": "plain", "kjoule_default": "full_trace", "kjoule_no_params": "no_params",
                 "cupti_activity_only": "cupti_only", "kjoule_capture_inside": "capture_inside",
                 "kjoule_capture_late": "capture_late"}
SETTINGS = ("full_trace", "no_params", "cupti_only", "capture_inside", "capture_late")


def paired(a, b):
    """Per round a - b where both ran; the median, quartiles and count (None figures when none)."""
    return summary([x - y for x, y in zip(a, b) if x is not None and y is not None])


def from_turns(path, r):
    """A turns.py result of `event_cost --serve KIND EVENTS` as capture_pairs' shape: per setting, the
    per-round median block (its first drop_first forwards left out) in us per event."""
    try:
        cmd = shlex.split(r.get("worker_cmd") or "")
        i = cmd.index("--serve")
        events = int(cmd[i + 2])
    except (ValueError, IndexError):
        sys.exit(f"{path}: a turns result whose worker_cmd is not `event_cost --serve KIND EVENTS`")
    drop = int(r.get("drop_first") or 0)
    blocks = r.get("forward_ms_per_round") or {}
    vals = {}
    for name, setting in TURN_SETTINGS.items():
        if name in blocks:
            vals[setting] = [statistics.median(b[drop:]) * 1000.0 / events if len(b) > drop else None
                             for b in blocks[name]]
    return {"workload": r.get("workload", "").split(":")[0].strip(), "metric": "us_per_event", "values": vals,
            "device": r.get("device"), "rounds": r.get("rounds_done"), "events_per_block": events,
            "method": "turns", "worker_cmd": r.get("worker_cmd"), "command": r.get("command")}


def load(path):
    """(kind, result) of one capture_pairs result of an event_cost loop, or of a turns.py result of
    `event_cost --serve` (workload event_KIND); exits naming the file."""
    try:
        r = json.load(open(path))
    except (OSError, ValueError) as e:
        sys.exit(f"{path}: not readable as JSON: {e}")
    if isinstance(r, dict) and r.get("benchmark") == "trace_overhead (turns)":
        r = from_turns(path, r)
    vals = r.get("values") if isinstance(r, dict) else None
    name = r.get("workload", "") if isinstance(r, dict) else ""
    kind = name[len("event_"):] if name.startswith("event_") else None
    if kind not in KINDS:
        sys.exit(f"{path}: workload {name!r} is not event_KIND (KIND one of {', '.join(KINDS)})")
    if r.get("metric") != "us_per_event":
        sys.exit(f"{path}: metric {r.get('metric')!r}, not us_per_event")
    if not isinstance(vals, dict) or "plain" not in vals:
        sys.exit(f"{path}: no 'values' with the untraced runs ('plain')")
    return kind, r


def costs_of(r):
    v = r["values"]
    out = {s: paired(v[s], v["plain"]) for s in SETTINGS if s in v}
    if "full_trace" in v and "cupti_only" in v:
        out["kjoule_beyond_cupti"] = paired(v["full_trace"], v["cupti_only"])
    plain = [x for x in v["plain"] if x is not None]
    out["plain_us_per_event"] = statistics.median(plain) if plain else None
    return out


def program(spec, costs):
    """NAME:kind=count,...[:PAIRS.json] -> its breakdown per step (us)."""
    parts = spec.split(":")
    if len(parts) not in (2, 3):
        sys.exit(f"--program {spec!r}: expected NAME:kind=count,...[:PAIRS.json]")
    counts = {}
    for item in parts[1].split(","):
        k, _, n = item.partition("=")
        try:
            counts[k] = float(n)
        except ValueError:
            sys.exit(f"--program {spec!r}: count of {k!r} is no number: {n!r}")
        if k not in KINDS or counts[k] < 0:
            sys.exit(f"--program {spec!r}: {k!r} is not one of {', '.join(KINDS)} with a count >= 0")
    res = {"name": parts[0], "events_per_step": counts, "by_kind_us": {}, "sum_us": {}}
    for s in ("full_trace", "cupti_only", "capture_late"):
        total, known = 0.0, True
        for k, n in counts.items():
            c = ((costs.get(k) or {}).get(s) or {}).get("median")
            res["by_kind_us"].setdefault(k, {})[s] = n * c if c is not None else None
            if c is None and n > 0:
                known = False
            elif c is not None:
                total += n * c
        res["sum_us"][s] = total if known else None
    if len(parts) == 3:
        try:
            p = json.load(open(parts[2]))
            v = p["values"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            sys.exit(f"--program {spec!r}: {parts[2]}: no capture_pairs result: {e}")
        scale = 1000.0 if p.get("metric", "").endswith("_ms") else 1e6 if p.get("metric") in (None, "wall_s") else 1.0
        for s in ("full_trace", "cupti_only", "capture_late"):
            if s in v:
                d = paired(v[s], v["plain"])
                res.setdefault("measured_us", {})[s] = d["median"] * scale if d["median"] is not None else None
        res["measured_from"] = os.path.basename(parts[2])
        res["metric"] = p.get("metric")
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", help="capture_pairs.py results of event_cost loops, one a kind")
    ap.add_argument("--program", action="append", default=[], help="NAME:kernel=K,nvtx=N,graph=G,host=H[:PAIRS.json]")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    runs = {}
    for path in a.results:
        kind, r = load(path)
        if kind in runs:
            sys.exit(f"{path}: a second result for kind {kind!r}")
        runs[kind] = r
    costs = {k: costs_of(r) for k, r in runs.items()}
    progs = [program(s, costs) for s in a.program]
    first = next(iter(runs.values()))
    res = {"benchmark": "trace_event_costs", "device": first.get("device"),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "command": " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:]),
           "method": "per kind, an event_cost loop untraced and traced: whole runs alternating in a new order each "
                     "round (capture_pairs.py), or live processes taking turns (turns.py with event_cost --serve; "
                     "raw.KIND.method 'turns'); cost per event = median over rounds of the paired difference of "
                     "the loops' us_per_event",
           "costs_us_per_event": costs, "programs": progs, "raw": runs}
    write_json(a.output, res)
    fmt = lambda x: f"{x:8.3f}" if isinstance(x, (int, float)) else "       -"
    print(f"{'kind':8s} {'plain':>8s} " + " ".join(f"{s:>14s}" for s in SETTINGS + ('kjoule_beyond_cupti',)))
    for k, c in costs.items():
        print(f"{k:8s} {fmt(c['plain_us_per_event'])} " +
              " ".join(f"{fmt((c.get(s) or {}).get('median')):>14s}" for s in SETTINGS + ('kjoule_beyond_cupti',)))
    for p in progs:
        print(f"{p['name']}: predicted us/step {p['sum_us']}; measured {p.get('measured_us')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
