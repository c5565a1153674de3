#!/usr/bin/env bash
# bench/trace_overhead/turns.py and summarize.py on a stand-in worker whose true costs are known
# (tests/tools/turn_standin.py: kjoule 1.10x, torch.profiler 1.50x) on a host that doubles every
# forward's time in 150 ms phases and gives each process its own +-1.5 %: the paired per-round
# estimate must recover the true ratios; the result files must hold what the docs say.
# usage: test_turns.sh KJOULE_BIN SRC_DIR BUILD_DIR
set -u
K=$1; SRC=$2
source "$SRC/tests/cli/lib.sh"
# the stand-in reads its cost from the injection library kjoule run loads: a build without CUDA has
# none (kjoule run then loads nothing), so there is nothing to measure
if [ -z "${KJ_INJECT_LIB:-}" ] && [ ! -e "$(dirname "$K")/src/trace/inject/libkjoule_inject.so" ] &&
	[ ! -e "$(dirname "$K")/libkjoule_inject.so" ]; then
	echo "skipped: no injection library beside $K (a build without CUDA)"
	exit 77
fi
python3 "$SRC/bench/trace_overhead/turns.py" --kjoule "$K" --worker "$SRC/tests/tools/turn_standin.py" \
	--configs kjoule_default torch_profiler --copies 2 --rounds 40 --block 4 --warmup-turns 1 \
	--logs "$T/logs" -o "$T/turns.json" >"$T/out" 2>"$T/err" || fail "turns.py failed: $(tail -5 "$T/err")"
has "kjoule_default"
python3 - "$T/turns.json" <<'PY' || fail "turns.py result"
import json, sys
d = json.load(open(sys.argv[1]))
s = d["summary"]
assert d["rounds_done"] == 40 and d["copies"] == 2, (d["rounds_done"], d["copies"])
assert sorted(d["forward_ms_per_round"]) == sorted(["plain", "plain#2", "kjoule_default", "kjoule_default#2",
                                                    "torch_profiler", "torch_profiler#2"])
assert all(len(v) == 40 and all(len(b) == 4 for b in v) for v in d["forward_ms_per_round"].values())
assert 1.07 <= s["kjoule_default"]["ratio_to_plain"] <= 1.13, s["kjoule_default"]
assert 1.45 <= s["torch_profiler"]["ratio_to_plain"] <= 1.55, s["torch_profiler"]
share = s["kjoule_default_extra_over_torch_profiler_extra"]["ratio_to_plain"]
assert 0.14 <= share <= 0.26, share
assert set(s["kjoule_default"]["ratio_per_copy"]) == {"kjoule_default", "kjoule_default#2"}
assert s["rss_over_plain_mb"] == {"plain": 0.0, "kjoule_default": 0.0, "torch_profiler": 0.0}
PY
# the same forwards, unpaired (each contestant's own median over the whole run), are not this
# good: the check above is not one any estimate would pass
python3 - "$T/turns.json" <<'PY' || fail "phases too gentle for the test to mean anything"
import json, statistics, sys
d = json.load(open(sys.argv[1]))["forward_ms_per_round"]
every = lambda n: [x for b in d[n] for x in b[1:]]
rounds = lambda n: [statistics.median(b[1:]) for b in d[n]]
spread = max(rounds("plain")) / min(rounds("plain"))
assert spread > 1.6, spread
PY
python3 "$SRC/bench/trace_overhead/summarize.py" "$T/turns.json" -o "$T/summary.json" >"$T/out" 2>"$T/err" \
	|| fail "summarize.py failed: $(tail -3 "$T/err")"
python3 - "$T/summary.json" <<'PY' || fail "summarize.py result"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["verdict"]["kjoule_default"]["met_by_median"] is True, d["verdict"]
assert d["verdict"]["kjoule_default_extra_over_torch_profiler_extra"]["met_by_median"] is True
assert len(d["runs"]) == 1 and d["runs"]["turns.json"]["copies"] == 2
PY
# another worker's command line (as event_cost --serve): its workload name and command kept, the
# window contestants run under kjoule run as the others
python3 "$SRC/bench/trace_overhead/turns.py" --kjoule "$K" --worker-cmd "python3 $SRC/tests/tools/turn_standin.py --x" \
	--workload "event_kernel: stand-in" --configs kjoule_capture_inside kjoule_capture_late --rounds 20 --block 4 \
	--warmup-turns 1 --logs "$T/logs3" -o "$T/wc.json" >"$T/out" 2>"$T/err" || fail "turns.py --worker-cmd failed: $(tail -5 "$T/err")"
python3 - "$T/wc.json" <<'PY' || fail "turns.py --worker-cmd result: $(head -c 400 "$T/wc.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["workload"] == "event_kernel: stand-in" and d["worker_cmd"].endswith("turn_standin.py --x"), d["workload"]
for c in ("kjoule_capture_inside", "kjoule_capture_late"):
    assert 1.07 <= d["summary"][c]["ratio_to_plain"] <= 1.13, d["summary"][c]
PY
# the traced contestants' databases are removed at the end, kept with --keep-dbs
d=$(sed -n 's/^turns.py: the run databases go to \([^ ]*\).*/\1/p' "$T/err")
[ -n "$d" ] && [ -d "$d" ] || fail "turns.py did not name its databases' folder: $(head -3 "$T/err")"
[ -z "$(find "$d" -name '*.kjdb')" ] || fail "databases left behind in $d: $(find "$d" -name '*.kjdb')"
python3 "$SRC/bench/trace_overhead/turns.py" --kjoule "$K" --worker-cmd "python3 $SRC/tests/tools/turn_standin.py" \
	--workload w --configs kjoule_default --rounds 2 --block 2 --warmup-turns 0 --keep-dbs --logs "$T/logs4" \
	-o "$T/keep.json" >"$T/out" 2>"$T/err" || fail "turns.py --keep-dbs failed: $(tail -3 "$T/err")"
d=$(sed -n 's/^turns.py: the run databases go to \([^ ]*\).*/\1/p' "$T/err")
[ -n "$(find "$d" -name '*.kjdb' 2>/dev/null)" ] || fail "--keep-dbs: no database kept in '$d'"
rm -rf "$d"
python3 "$SRC/bench/trace_overhead/turns.py" --kjoule "$K" --worker-cmd "python3 x.py" --configs kjoule_default \
	-o "$T/half.json" >"$T/out" 2>&1
[ $? -ne 0 ] && grep -q "worker-cmd and --workload go together" "$T/out" || fail "--worker-cmd without --workload taken"
# a worker that dies: a clear message naming it, not a hang
printf 'import sys\nprint("{\\"ready\\": true}", flush=True)\nsys.exit(3)\n' > "$T/dies.py"
python3 "$SRC/bench/trace_overhead/turns.py" --kjoule "$K" --worker "$T/dies.py" --configs kjoule_default \
	--rounds 2 --block 2 --logs "$T/logs2" -o "$T/dead.json" >"$T/out" 2>&1
[ $? -ne 0 ] || fail "turns.py with a dying worker exited 0"
grep -q "contestant .* ended early" "$T/out" || fail "no message naming the dead contestant: $(tail -3 "$T/out")"
# the second workload: every contestant is started with --model gpt2m, and the result says which
python3 "$SRC/bench/trace_overhead/turns.py" --kjoule "$K" --worker "$SRC/tests/tools/turn_standin.py" \
	--model gpt2m --configs kjoule_no_params --rounds 3 --block 2 --warmup-turns 0 \
	--logs "$T/logs2" -o "$T/turns2.json" >"$T/out2" 2>"$T/err2" || fail "turns.py --model gpt2m failed: $(tail -5 "$T/err2")"
python3 - "$T/turns2.json" <<'PY' || fail "turns.py --model gpt2m result"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["workload"].startswith("GPT-2-medium"), d["workload"]
assert "--model gpt2m" in d["command"], d["command"]
PY
# the *_base contestants need another build's injection library: refused without one
python3 "$SRC/bench/trace_overhead/turns.py" --kjoule "$K" --worker "$SRC/tests/tools/turn_standin.py" \
	--configs kjoule_default_base --rounds 2 --block 2 -o "$T/base.json" >"$T/out3" 2>&1
[ $? -ne 0 ] || fail "turns.py ran kjoule_default_base without --base-inject"
grep -q "unknown contestants: kjoule_default_base" "$T/out3" || fail "no message naming the refused contestant: $(tail -2 "$T/out3")"
# two builds in one run (--base-inject): the stand-in costs 1.10 under kjoule's library and 1.20
# under one named slow_*; each round's pair of them must give 1.10 / 1.20 with an interval from
# the rounds that holds it and excludes 1
: > "$T/slow_inject.so"
python3 "$SRC/bench/trace_overhead/turns.py" --kjoule "$K" --worker "$SRC/tests/tools/turn_standin.py" \
	--configs kjoule_default kjoule_default_base --base-inject "$T/slow_inject.so" --rounds 30 --block 4 \
	--warmup-turns 1 --logs "$T/logs5" -o "$T/ab.json" >"$T/out5" 2>"$T/err5" || fail "turns.py --base-inject failed: $(tail -5 "$T/err5")"
# the line names the pair and its median (the figure itself is checked in the result below)
grep -Eq "^kjoule_default_over_base: 0\.[0-9]+ \(95 % over rounds" "$T/out5" || fail "no A/B line printed: $(tail -3 "$T/out5")"
python3 - "$T/ab.json" <<'PY' || fail "turns.py --base-inject result"
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
p = s["kjoule_default_over_base"]
assert abs(p["median"] / (1.10 / 1.20) - 1) < 0.035, p
assert p["ci95"][0] <= p["median"] <= p["ci95"][1] < 1, p
assert p["rounds"] == 30 and "lottery" in p["interval_covers"], p
assert abs(s["kjoule_default_base"]["ratio_to_plain"] / 1.20 - 1) < 0.035, s["kjoule_default_base"]
PY
# a CUPTI study variant (NAME@ITEMS): NAME run under KJOULE_CUPTI_STUDY=ITEMS ('+' for ','), its
# databases apart from NAME's, and paired with NAME round by round (the stand-in: 5 % cheaper)
python3 "$SRC/bench/trace_overhead/turns.py" --kjoule "$K" --worker "$SRC/tests/tools/turn_standin.py" \
	--configs kjoule_default kjoule_default@pinned+devbuf=32 --rounds 30 --block 4 --warmup-turns 1 \
	--logs "$T/logs8" -o "$T/study.json" >"$T/out8" 2>"$T/err8" || fail "turns.py with a study variant failed: $(tail -5 "$T/err8")"
python3 - "$T/study.json" <<'PY' || fail "turns.py study variant result"
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
p = s["kjoule_default@pinned+devbuf=32_over_base"]
assert abs(p["median"] / 0.95 - 1) < 0.035 and p["ci95"][1] < 1, p
assert abs(s["kjoule_default@pinned+devbuf=32"]["ratio_to_plain"] / (1.10 * 0.95) - 1) < 0.035, s
PY
grep -q "kjoule_default@pinned+devbuf=32_over_base: 0.9" "$T/out8" || fail "no study pair printed: $(tail -3 "$T/out8")"
python3 "$SRC/bench/trace_overhead/turns.py" --kjoule "$K" --worker "$SRC/tests/tools/turn_standin.py" \
	--configs nobody@pinned --rounds 2 --block 2 -o "$T/study2.json" >"$T/out9" 2>&1
[ $? -ne 0 ] && grep -q "unknown contestants: nobody@pinned" "$T/out9" || fail "a study of an unknown contestant ran: $(tail -2 "$T/out9")"
# pair.py: the same A/B from a result file; an unknown contestant is named
python3 "$SRC/bench/trace_overhead/pair.py" "$T/ab.json" kjoule_default kjoule_default_base >"$T/out6" 2>&1 \
	|| fail "pair.py failed: $(cat "$T/out6")"
# the same median as turns.py's own line, to its four digits
m=$(python3 -c 'import json,sys; print("%.4f" % json.load(open(sys.argv[1]))["summary"]["kjoule_default_over_base"]["median"])' "$T/ab.json")
grep -q "^kjoule_default / kjoule_default_base: $m " "$T/out6" || fail "pair.py printed: $(cat "$T/out6") (want $m)"
python3 "$SRC/bench/trace_overhead/pair.py" "$T/ab.json" kjoule_default nobody >"$T/out7" 2>&1
[ $? -ne 0 ] && grep -q "no contestant nobody" "$T/out7" || fail "pair.py took an unknown contestant: $(cat "$T/out7")"
# cost_self_json.py: run lines into JSON, each input with its machine; a line it cannot read is
# named by file and line
cat > "$T/cs.txt" <<'TXT'
bloom560m plain: forward_ms_median 11.224 n 400 |
bloom560m defaults: forward_ms_median 12.645 n 400 |  probe 10 x 21.5 ns; diff 10 x 429.0 ns;
gpt2m defaults: forward_ms_median 5.809 n 400 |  probe 10 x 39.0 ns; launch_exit 10 x 39.2 ns; thread-local block static;
TXT
python3 "$SRC/bench/trace_overhead/cost_self_json.py" --device H200 --device-of b=H100 --date 2026-11-27 \
	--command "cost_self.sh" a="$T/cs.txt" b="$T/cs.txt" -o "$T/cs.json" || fail "cost_self_json.py failed"
python3 - "$T/cs.json" <<'PY' || fail "cost_self_json.py result"
import json, sys
d = json.load(open(sys.argv[1]))
a, b = d["calls"]["a"], d["calls"]["b"]
assert (a["device"], b["device"]) == ("H200", "H100"), (a["device"], b["device"])
assert [r["setting"] for r in a["runs"]] == ["plain", "defaults", "defaults"]
assert "thread_local_block" not in a["runs"][1] and a["runs"][2]["thread_local_block"] == "static"
assert a["runs"][2]["parts"]["launch_exit"] == {"calls": 10, "mean_ns": 39.2}
assert a["runs"][0]["parts"] == {} and a["runs"][1]["parts"]["diff"] == {"calls": 10, "mean_ns": 429.0}
assert a["runs"][1]["forward_ms_median"] == 12.645 and a["runs"][1]["forwards"] == 400
PY
printf 'bloom560m defaults: forward_ms_median 1 n 2 | diff ten x 3 ns;\n' > "$T/bad.txt"
python3 "$SRC/bench/trace_overhead/cost_self_json.py" --device H200 --date d --command c x="$T/bad.txt" \
	-o "$T/bad.json" >"$T/out4" 2>&1
[ $? -ne 0 ] || fail "cost_self_json.py took a bad line"
grep -q "bad.txt:1: not 'part calls x ns'" "$T/out4" || fail "bad line not named: $(cat "$T/out4")"
[ ! -e "$T/bad.json" ] || fail "cost_self_json.py wrote a result from a bad input"
finish
