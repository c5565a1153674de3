#!/usr/bin/env python3
"""kjoule's cost per traced event, by kind, from bench/trace_overhead/capture_pairs.py results of
bench/event_cost's loops (one result a kind: kernel, nvtx, graph, graph64, host, kernel_cold,
kernel_block; metric us_per_event), or from bench/trace_overhead/turns.py results of
`event_cost --serve KIND EVENTS` (workload event_KIND; many rounds in live processes, where whole
runs give few):

  per kind and setting, the median over rounds of (the traced run's us_per_event - the untraced
  run's of the same round), with quartiles: full_trace (defaults), no_params, cupti_only (CUPTI's
  activity records alone), capture_inside (inside a capture window), capture_late (outside one);
  and kjoule's own share beyond CUPTI's: full_trace - cupti_only, per round.

With --program NAME:@EVENTS.json[:MEASURED] (the events per step of a program as traced,
bench/event_cost/program_events.py's result), the breakdown of its tracing cost per step: count x
cost per kind, summed, a graph launch of k kernels priced between the launch of one kernel's graph
and of 64 kernels' (graph64), linearly in k; and where MEASURED is given, the sum against the
measured cost per step under each setting. MEASURED is capture_pairs.py on the program itself
(metric its step time in ms: the median over rounds of traced - plain), or turns.py's result on it,
whole or as the object KEY of a JSON file (FILE#KEY, e.g. capture_overhead.json#turns_jax_step:
(the median over rounds of the ratio to plain - 1) x plain's median step).

    python3 bench/event_cost/costs.py kernel.json nvtx.json graph.json graph64.json host.json \\
        --program jax_step:@jax_events.json:capture_overhead.json#turns_jax_step -o RESULT.json

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

KINDS = ("kernel", "nvtx", "graph", "graph64", "host", "kernel_cold", "kernel_block")
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


PRICED = ("kernel", "nvtx", "graph", "host")


def graph_cost(costs, s, kernels):
    """One graph launch of `kernels` kernels under setting s: the 1-kernel graph's cost, plus the
    64-kernel graph's share per further kernel; None when unmeasured."""
    one = ((costs.get("graph") or {}).get(s) or {}).get("median")
    many = ((costs.get("graph64") or {}).get(s) or {}).get("median")
    if one is None or (kernels > 1 and many is None):
        return None
    return one + (kernels - 1) * (many - one) / 63.0 if kernels > 1 else one


def measured(path, spec):
    """Per setting, the measured cost per step (us) of a capture_pairs result, or of a turns result
    (FILE or FILE#KEY), and where it came from."""
    file, _, key = path.partition("#")
    try:
        p = json.load(open(file))
        if key:
            p = p[key]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"--program {spec!r}: {path}: not readable: {e}")
    out = {}
    if "ratio_per_round" in p and "summary" in p:  # turns
        try:
            plain_ms = p["summary"]["plain"]["block_median_ms"]
        except (KeyError, TypeError):
            sys.exit(f"--program {spec!r}: {path}: a turns result without plain's block_median_ms")
        for c, s in TURN_SETTINGS.items():
            per = [x for x in (p["ratio_per_round"].get(c) or []) if x is not None]
            if c != "plain" and per:
                out[s] = (statistics.median(per) - 1.0) * plain_ms * 1000.0
        return out, {"from": os.path.basename(file) + (f"#{key}" if key else ""), "method": "turns",
                     "rounds": p.get("rounds", p.get("rounds_done")), "plain_step_us": plain_ms * 1000.0}
    v = p.get("values")
    if not isinstance(v, dict) or "plain" not in v:
        sys.exit(f"--program {spec!r}: {path}: neither a turns nor a capture_pairs result")
    scale = 1000.0 if p.get("metric", "").endswith("_ms") else 1e6 if p.get("metric") in (None, "wall_s") else 1.0
    for s in SETTINGS:
        if s in v:
            d = paired(v[s], v["plain"])
            out[s] = d["median"] * scale if d["median"] is not None else None
    return out, {"from": os.path.basename(file), "method": "whole runs", "metric": p.get("metric"),
                 "rounds": p.get("rounds")}


def program(spec, costs):
    """NAME:@EVENTS.json[:MEASURED] -> its breakdown per step (us)."""
    parts = spec.split(":")
    if len(parts) not in (2, 3) or not parts[1].startswith("@"):
        sys.exit(f"--program {spec!r}: expected NAME:@EVENTS.json[:MEASURED]")
    try:
        ev = json.load(open(parts[1][1:]))
        counts = {k: float(ev["events_per_step"][k]) for k in PRICED + ("graph_kernels",)}
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"--program {spec!r}: {parts[1][1:]}: no events per step (program_events.py): {e}")
    res = {"name": parts[0], "events_per_step": ev["events_per_step"], "events_from": os.path.basename(parts[1][1:]),
           "by_kind_us": {}, "sum_us": {}}
    for s in SETTINGS:
        total, known = 0.0, True
        for k in PRICED:
            n = counts[k]
            c = (graph_cost(costs, s, counts["graph_kernels"]) if k == "graph"
                 else ((costs.get(k) or {}).get(s) or {}).get("median"))
            res["by_kind_us"].setdefault(k, {})[s] = n * c if c is not None else None
            if c is None and n > 0:
                known = False
            elif c is not None:
                total += n * c
        res["sum_us"][s] = total if known else None
    if len(parts) == 3:
        res["measured_us"], res["measured"] = measured(parts[2], spec)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", help="capture_pairs.py results of event_cost loops, one a kind")
    ap.add_argument("--program", action="append", default=[], help="NAME:@EVENTS.json[:MEASURED]")
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
