# bench/event_cost/costs.py on stand-in capture_pairs results whose true costs are known: each
# traced setting's us_per_event is the untraced run's of the same round plus a fixed cost, while the
# rounds' base drifts by far more than that cost (only pairing within a round recovers it); one run
# fails (None). The per-kind costs, kjoule's share beyond CUPTI's, and a program's breakdown (a
# graph launch of many kernels priced between the one-kernel and 64-kernel graphs; measured from
# whole runs or from turns) come out as planted; a file of another workload or metric is refused, naming it, nothing written.
set -u
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
C="$SRC/bench/event_cost/costs.py"
python3 - "$T" <<'P' || fail "cannot write the stand-ins"
import json, random, sys
t = sys.argv[1]
random.seed(7)
true = {"kernel": {"full_trace": 0.9, "no_params": 0.6, "cupti_only": 0.5, "capture_inside": 0.95, "capture_late": 0.05},
        "nvtx": {"full_trace": 0.3, "no_params": 0.3, "cupti_only": 0.2, "capture_inside": 0.3, "capture_late": 0.1},
        "graph": {"full_trace": 2.0, "no_params": 1.5, "cupti_only": 1.2, "capture_inside": 2.1, "capture_late": 0.2},
        "host": {"full_trace": 1.0, "no_params": 0.8, "cupti_only": 0.7, "capture_inside": 1.0, "capture_late": 0.1},
        "graph64": {"full_trace": 65.0, "no_params": 60.0, "cupti_only": 40.0, "capture_inside": 66.0, "capture_late": 0.5}}
for k, c in true.items():
    base = [3.0 + 4.0 * random.random() for _ in range(9)]  # drifts by 4 us, costs are under 2.1
    v = {"plain": base}
    for s, x in c.items():
        v[s] = [b + x for b in base]
    v["full_trace"][4] = None
    json.dump({"workload": "event_" + k, "metric": "us_per_event", "device": "stand-in", "values": v},
              open(f"{t}/{k}.json", "w"))
# a program of 10 steps: 13 kernels, 18 NVTX ranges, 1 graph launch of one kernel a step; its full
# trace costs 13*0.9 + 18*0.3 + 2.0 = 19.1 us a step more (metric in ms)
base = [1.0 + 0.5 * random.random() for _ in range(7)]
json.dump({"workload": "jax_step", "metric": "median_ms",
           "values": {"plain": base, "full_trace": [b + 0.0191 for b in base], "cupti_only": base,
                      "capture_late": base}}, open(f"{t}/prog.json", "w"))
ev = lambda k, n, g, gk, h: {"name": "p", "events_per_step": {"kernel": k, "nvtx": n, "graph": g, "graph_kernels": gk,
                                                              "host": h, "other_copies": 0}}
json.dump(ev(13, 18, 1, 1, 0), open(f"{t}/prog_events.json", "w"))
# a decode-like program: 2 graph launches of 33 kernels and 1 host read a step, measured taking
# turns (a plain step of 2 ms; defaults 1.05x, CUPTI alone 1.04x every round), inside a bigger file
json.dump(ev(0, 0, 2, 33, 1), open(f"{t}/dec_events.json", "w"))
json.dump({"other": 1, "turns_dec": {"summary": {"plain": {"block_median_ms": 2.0}}, "rounds": 5,
           "ratio_per_round": {"plain": [1.0] * 5, "kjoule_default": [1.05] * 5, "cupti_activity_only": [1.04] * 5}}},
          open(f"{t}/overhead.json", "w"))
json.dump({"workload": "jax_step", "metric": "median_ms", "values": {"plain": [1.0]}}, open(f"{t}/other.json", "w"))
P
expect 0 python3 "$C" "$T/kernel.json" "$T/nvtx.json" "$T/graph.json" "$T/host.json" "$T/graph64.json" \
	--program "jax:@$T/prog_events.json:$T/prog.json" --program "dec:@$T/dec_events.json:$T/overhead.json#turns_dec" -o "$T/r.json"
tail -1 "$T/out" | grep -q "^dec: predicted" || fail "table last: $(tail -2 "$T/out")"
python3 - "$T/r.json" <<'P' || fail "costs not as planted: $(head -c 600 "$T/r.json")"
import json, sys
r = json.load(open(sys.argv[1]))
c = r["costs_us_per_event"]
near = lambda a, b: a is not None and abs(a - b) < 1e-9
assert near(c["kernel"]["full_trace"]["median"], 0.9) and c["kernel"]["full_trace"]["rounds"] == 8, c["kernel"]
assert near(c["graph"]["capture_late"]["median"], 0.2) and near(c["host"]["no_params"]["median"], 0.8)
assert near(c["kernel"]["kjoule_beyond_cupti"]["median"], 0.4) and near(c["nvtx"]["kjoule_beyond_cupti"]["median"], 0.1)
p = r["programs"][0]
assert near(p["sum_us"]["full_trace"], 13 * 0.9 + 18 * 0.3 + 2.0), p
assert near(p["by_kind_us"]["nvtx"]["full_trace"], 18 * 0.3) and near(p["sum_us"]["capture_late"], 13 * 0.05 + 18 * 0.1 + 0.2)
assert abs(p["measured_us"]["full_trace"] - 19.1) < 1e-6, p["measured_us"]
# a graph launch of 33 kernels: the 1-kernel graph's cost and 32/63 of the way to the 64-kernel one's
d = r["programs"][1]
g33 = lambda one, many: one + 32 * (many - one) / 63
assert near(d["sum_us"]["full_trace"], 2 * g33(2.0, 65.0) + 1.0), d
assert near(d["by_kind_us"]["graph"]["cupti_only"], 2 * g33(1.2, 40.0)), d
assert abs(d["measured_us"]["full_trace"] - 100.0) < 1e-6 and abs(d["measured_us"]["cupti_only"] - 80.0) < 1e-6, d
assert d["measured"]["method"] == "turns" and d["measured"]["from"] == "overhead.json#turns_dec", d
assert r["device"] == "stand-in" and r["date"] and r["command"]
assert set(r["raw"]) == {"kernel", "nvtx", "graph", "host", "graph64"}
P
# a turns.py result of `event_cost --serve graph64 400` (live processes taking turns): each block's
# ms is 400 events at the round's base plus the setting's cost; the first forward of each turn is
# the GPU switching between processes (far slower) and left out (drop_first 1)
python3 - "$T" <<'P' || fail "cannot write the turns stand-in"
import json, random, sys
t = sys.argv[1]
random.seed(3)
cost = {"kjoule_default": 1.5, "cupti_activity_only": 1.0, "kjoule_capture_late": 0.25, "kjoule_capture_inside": 1.6}
blocks = {n: [] for n in ["plain", *cost]}
for r in range(12):
    base = 2.0 + 3.0 * random.random()
    for n in blocks:
        us = base + cost.get(n, 0.0)
        blocks[n].append([us * 400 / 1000 * 50, us * 400 / 1000])  # two forwards a turn
json.dump({"benchmark": "trace_overhead (turns)", "workload": "event_graph64: event_cost --serve graph64 400",
           "worker_cmd": "/x/event_cost --serve graph64 400", "device": "stand-in", "rounds_done": 12,
           "drop_first": 1, "forward_ms_per_round": blocks}, open(f"{t}/turns_graph64.json", "w"))
json.dump({"benchmark": "trace_overhead (turns)", "workload": "event_graph64", "worker_cmd": "python3 w.py",
           "forward_ms_per_round": blocks}, open(f"{t}/turns_bad.json", "w"))
P
expect 0 python3 "$C" "$T/turns_graph64.json" "$T/kernel.json" -o "$T/rt.json"
python3 - "$T/rt.json" <<'P' || fail "turns costs not as planted: $(head -c 600 "$T/rt.json")"
import json, sys
r = json.load(open(sys.argv[1]))
c = r["costs_us_per_event"]["graph64"]
near = lambda a, b: a is not None and abs(a - b) < 1e-9
assert near(c["full_trace"]["median"], 1.5) and near(c["capture_late"]["median"], 0.25), c
assert near(c["capture_inside"]["median"], 1.6) and near(c["kjoule_beyond_cupti"]["median"], 0.5), c
assert c["full_trace"]["rounds"] == 12 and "no_params" not in c, c
assert r["raw"]["graph64"]["method"] == "turns" and r["raw"]["graph64"]["events_per_block"] == 400
P
expect 1 python3 "$C" "$T/turns_bad.json" -o "$T/bad.json"
grep -q "turns_bad.json: a turns result whose worker_cmd is not" "$T/err" || fail "a turns result of another worker not refused: $(cat "$T/err")"
# refusals: another workload, a second file of one kind, a bad program count; nothing written
expect 1 python3 "$C" "$T/other.json" -o "$T/bad.json"
grep -q "other.json: workload 'jax_step' is not event_KIND" "$T/err" || fail "refusal does not name the file: $(cat "$T/err")"
[ ! -e "$T/bad.json" ] || fail "a refused run wrote its output"
expect 1 python3 "$C" "$T/kernel.json" "$T/kernel.json" -o "$T/bad.json"
grep -q "a second result for kind 'kernel'" "$T/err" || fail "duplicate kind not refused: $(cat "$T/err")"
expect 1 python3 "$C" "$T/kernel.json" --program "x:kernel=13" -o "$T/bad.json"
grep -q "expected NAME:@EVENTS.json" "$T/err" || fail "counts typed in not refused: $(cat "$T/err")"
expect 1 python3 "$C" "$T/kernel.json" --program "x:@$T/prog.json" -o "$T/bad.json"
grep -q "prog.json: no events per step" "$T/err" || fail "a file of no events not refused: $(cat "$T/err")"
expect 1 python3 "$C" "$T/kernel.json" --program "x:@$T/prog_events.json:$T/overhead.json#nope" -o "$T/bad.json"
grep -q "overhead.json#nope: not readable" "$T/err" || fail "a missing measured key not refused: $(cat "$T/err")"
[ ! -e "$T/bad.json" ] || fail "a refused run wrote its output"
finish
