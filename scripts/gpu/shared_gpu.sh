#!/usr/bin/env bash
# On the GPU machine: energy on a shared GPU and faults (issue 16). Runs the gpu_shared test
# (solo not flagged, two at once both flagged, SIGKILL of the program and of kjoule run), then
# the flagging study: SOLO solo runs and PAIRS pairs of runs at once, each run flagged or not.
# Writes $OUT/shared_gpu.json (device, date, command, raw numbers), $OUT/gpu_shared_test.log,
# $OUT/kill_program.json, $OUT/pair_info.txt; prints a short summary table last. Bounded to ~4 min.
# usage (device, from the repo root): source scripts/device-env.sh; bash scripts/gpu/shared_gpu.sh
# The cost of watching (separate, ~5 min; the turns method of bench/trace_overhead/turns.py):
#   TURNS_NAME=watch_overhead TURNS_CONFIGS="kjoule_default kjoule_default_no_watch" \
#   TURNS_SECONDS=170 bash scripts/gpu/checks.sh overhead
# watching costs nothing measurable when kjoule_default and kjoule_default_no_watch agree within
# the run-to-run spread (docs/tracing.md).
set -u
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd) # absolute: the test runs in its own folder and copies kill_program.json here
kj=$KJ_BUILD/kjoule
target=$KJ_BUILD/tests/gpu/shared/shared_target
SOLO=${SOLO:-10} PAIRS=${PAIRS:-5} SECS=${SECS:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
q() { python3 -c 'import sqlite3,sys; r=sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone(); print(r[0] if r else "")' "$@"; }

echo "== gpu_shared test"
(cd "$KJ_BUILD" && KJ_SHARED_KEEP="$OUT" timeout 180 ctest -R gpu_shared -V 2>&1 | grep -E "(ok|FAIL|killed|skipped|Passed|Failed|Error|note)" | tail -60) \
	> "$OUT/gpu_shared_test.log"
tail -25 "$OUT/gpu_shared_test.log"
test_ok=$(grep -cE "^[0-9]+: ok " "$OUT/gpu_shared_test.log")
test_fail=$(grep -cE "^[0-9]+: FAIL " "$OUT/gpu_shared_test.log")

# one run's facts as a JSON line: kind, flagged, fraction of iterations, ...; compare's exit code
# and stderr when it gives no shared_gpu (compare_shared_gpu null)
facts() { # facts DB KIND RC
	local j crc
	j=$("$kj" compare "$1" --skip 1 --json 2>"$work/cmp.err")
	crc=$?
	j=$(printf '%s' "$j" | python3 -c 'import json,sys
try: print(json.dumps(json.load(sys.stdin)["shared_gpu"]))
except Exception: print("null")')
	python3 - "$1" "$2" "$3" "$j" "$crc" "$work/cmp.err" "${1%.kjdb}.out" <<'PY'
import json, os, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
q = lambda s: db.execute(s).fetchone()[0]
meta = dict(db.execute("SELECT key, value FROM meta"))
has = q("SELECT count(*) FROM sqlite_master WHERE name = 'foreign_activity'")
print(json.dumps({
    "kind": sys.argv[2], "exit": int(sys.argv[3]),
    "watch": meta.get("gpu_watch"), "pid_match": meta.get("gpu_watch_pid_match"),
    "mig": meta.get("gpu_mig"), "mps": meta.get("gpu_mps"),
    "process_intervals": q("SELECT count(*) FROM foreign_activity WHERE source = 'process'") if has else None,
    "utilization_intervals": q("SELECT count(*) FROM foreign_activity WHERE source = 'utilization'") if has else None,
    "other_pids": [r[0] for r in db.execute("SELECT DISTINCT pid FROM foreign_activity WHERE source = 'process'")] if has else None,
    "listings": q("SELECT count(DISTINCT t_ns) FROM gpu_process_sample") if has else None,
    "kernels": q("SELECT count(*) FROM kernel"),
    "compare_shared_gpu": json.loads(sys.argv[4]),
    "compare_exit": int(sys.argv[5]),
    "compare_stderr": open(sys.argv[6]).read()[-400:] if json.loads(sys.argv[4]) is None else None,
    "iterations": q("SELECT count(*) FROM nvtx_range WHERE name = 'step'") if q(
        "SELECT count(*) FROM sqlite_master WHERE name = 'nvtx_range'") else None,
    "target": open(sys.argv[7]).read().strip() if os.path.exists(sys.argv[7]) else None,
}))
PY
}

echo "== flagging study: $SOLO solo runs, $PAIRS pairs at once, $SECS s each"
: > "$work/runs.jsonl"
deadline=$((SECONDS + 150))
for i in $(seq "$SOLO"); do
	[ $SECONDS -gt $deadline ] && break
	timeout 60 "$kj" run -o "$work/s$i.kjdb" -- "$target" "$SECS" >"$work/s$i.out" 2>"$work/s$i.err"; rc=$?
	facts "$work/s$i.kjdb" solo $rc >> "$work/runs.jsonl"
done
for i in $(seq "$PAIRS"); do
	[ $SECONDS -gt $deadline ] && break
	timeout 60 "$kj" run -o "$work/a$i.kjdb" -- "$target" "$SECS" >"$work/a$i.out" 2>"$work/a$i.err" & pa=$!
	timeout 60 "$kj" run -o "$work/b$i.kjdb" -- "$target" "$SECS" >"$work/b$i.out" 2>"$work/b$i.err" & pb=$!
	wait $pa; ra=$?; wait $pb; rb=$?
	facts "$work/a$i.kjdb" pair $ra >> "$work/runs.jsonl"
	facts "$work/b$i.kjdb" pair $rb >> "$work/runs.jsonl"
done
[ -s "$work/a1.kjdb" ] && { "$kj" info "$work/a1.kjdb"; "$kj" compare "$work/a1.kjdb" --skip 1 | sed -n '/^Energy/,/^$/p'; } > "$OUT/pair_info.txt" 2>&1
[ -s "$work/s1.kjdb" ] && { echo "--- solo"; "$kj" info "$work/s1.kjdb" | grep -i "gpu shared"; cat "$work/s1.err"; } >> "$OUT/pair_info.txt" 2>&1

python3 - "$work/runs.jsonl" "$OUT/shared_gpu.json" "$OUT/kill_program.json" "SOLO=$SOLO PAIRS=$PAIRS SECS=$SECS bash scripts/gpu/shared_gpu.sh" "$test_ok" "$test_fail" <<'PY'
import datetime, json, os, subprocess, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
try:
    dev = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
except OSError:
    dev = None
kill = json.load(open(sys.argv[3])) if os.path.exists(sys.argv[3]) else None
if kill is not None and dev:  # the gpu_shared test writes it without the device: this run's
    kill.setdefault("device", dev)
    kill.setdefault("date", datetime.datetime.now(datetime.timezone.utc).isoformat())
    json.dump(kill, open(sys.argv[3], "w"), indent=1)
solo = [r for r in runs if r["kind"] == "solo"]
pair = [r for r in runs if r["kind"] == "pair"]
# each signal, and compare's verdict (what users see): a run counts as flagged by it when
#   process:     the process listing saw another process on the GPU (foreign_activity rows)
#   utilization: the utilisation counter ran above what the run's own kernels explain
#   compare:     compare's shared_gpu says iterations ran beside other processes or with
#                unexplained utilisation
def compare_flag(r):
    s = r.get("compare_shared_gpu")
    if s is None:
        return None
    return bool((s.get("iterations_with_other_processes") or 0) > 0
                or (s.get("iterations_unexplained_utilization") or 0) > 0)
SIGNALS = {"process": lambda r: (r["process_intervals"] or 0) > 0,
           "utilization": lambda r: (r["utilization_intervals"] or 0) > 0,
           "compare": compare_flag}
def rate(rs, f):
    v = [f(r) for r in rs]
    known = [x for x in v if x is not None]
    return {"flagged": sum(known), "runs": len(known), "unknown": len(v) - len(known),
            "rate": round(sum(known) / len(known), 3) if known else None}
res = {"gpu_shared_checks_ok": int(sys.argv[5]), "gpu_shared_checks_failed": int(sys.argv[6]),
       "device": dev, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
       "command": sys.argv[4], "runs": runs, "kill_program": kill,
       # solo: a flag is a false positive; pairs: a flag is a true positive
       "false_positive": {k: rate(solo, f) for k, f in SIGNALS.items()},
       "true_positive": {k: rate(pair, f) for k, f in SIGNALS.items()},
       "solo_runs": len(solo), "pair_runs": len(pair)}
json.dump(res, open(sys.argv[2], "w"), indent=1)
print("\n== summary (%s)" % dev)
print("%-28s %s" % ("what", "result"))
print("%-28s %s" % ("watch state (first run)", runs[0]["watch"] if runs else "-"))
print("%-28s %s" % ("pid match (first run)", runs[0]["pid_match"] if runs else "-"))
for k in SIGNALS:
    fp, tp = res["false_positive"][k], res["true_positive"][k]
    print("%-28s solo %d of %d flagged (want 0), concurrent %d of %d (want all)%s" % (
        "signal " + k, fp["flagged"], fp["runs"], tp["flagged"], tp["runs"],
        ", %d without a verdict" % (fp["unknown"] + tp["unknown"]) if fp["unknown"] + tp["unknown"] else ""))
fr = [r["compare_shared_gpu"]["fraction_with_other_processes"] for r in pair if r.get("compare_shared_gpu")]
print("%-28s %s" % ("pair iteration fractions", " ".join("%.2f" % f for f in fr if f is not None) or "-"))
print("%-28s %s" % ("solo util-only intervals", " ".join(str(r["utilization_intervals"]) for r in solo) or "-"))
print("%-28s %s" % ("iterations per run", " ".join(str(r.get("iterations")) for r in runs) or "-"))
bad = [r for r in runs if r.get("compare_shared_gpu") is None]
print("%-28s %d of %d%s" % ("compare without shared_gpu", len(bad), len(runs),
                            ": exit %s, %s" % (bad[0].get("compare_exit"), (bad[0].get("compare_stderr") or "").strip()[:200])
                            if bad else ""))
if runs and runs[0].get("target"):
    print("%-28s %s" % ("target (first run)", runs[0]["target"]))
print("%-28s %s" % ("SIGKILL of program: lost ms", kill["lost_ms"] if kill and kill.get("lost_ms") is not None
                    else "- (no kill_program.json)" if not kill else "- (no kernel recorded before the kill)"))
print("%-28s %s ok, %s FAIL" % ("gpu_shared test checks", sys.argv[5], sys.argv[6]))
PY
