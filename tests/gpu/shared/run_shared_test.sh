#!/usr/bin/env bash
# GPU: energy on a shared GPU and faults kept under test (docs/energy.md, docs/tracing.md).
#  1. a solo traced run: no other process flagged
#  2. two traced runs at once on one GPU: both flagged (foreign_activity, compare's shared_gpu)
#  3. the traced program killed with SIGKILL mid-run: the run is kept, ABNORMAL END, exit 137,
#     its kernels there, at most 1 s of activity lost before the kill
#  4. kjoule run itself killed with SIGKILL: the program runs on; kjoule ingest rebuilds every
#     kernel it launched from the trace files
# usage: run_shared_test.sh KJOULE SHARED_TARGET — exit 77 where no GPU is present.
# Writes nothing outside a temporary directory, unless KJ_SHARED_KEEP names a folder for the runs.
set -u
kj=$1 target=$2
. "$(dirname "$0")/../lib.sh"
# cmpval RUN KEY: shared_gpu.KEY of `kjoule compare RUN --skip 1 --json`; when compare fails or
# prints no JSON, "error" and a note with its exit code and stderr (the check then fails).
cmpval() {
	local out err rc
	out=$("$kj" compare "$1" --skip 1 --json 2>"$dir/cmp.err"); rc=$?
	if v=$(printf '%s' "$out" | python3 -c 'import json,sys; v=json.load(sys.stdin)["shared_gpu"][sys.argv[1]]; print("null" if v is None else v)' "$2" 2>/dev/null) && [ $rc -eq 0 ]; then
		echo "$v"
		return
	fi
	err=$(tr '\n' ' ' <"$dir/cmp.err" | cut -c1-400)
	echo "note compare $(basename "$1") --skip 1 --json: exit $rc, ${#out} bytes of JSON, stderr: $err" >&2
	echo error
}
# note FILE: the stand-in's own line (context time, steps, kernels) from its stdout
note() { sed -n 's/^shared_target: /note target: /p' "$1" >&2; }
wait_file() { for _ in $(seq 600); do [ -s "$1" ] && return 0; sleep 0.05; done; return 1; }
# other processes on the GPU the run used (the watch lists every GPU; another test may be using
# another GPU of the machine meanwhile)
procs_flagged() { q "$1" "SELECT count(*) FROM foreign_activity WHERE source = 'process' AND device_id IN (SELECT DISTINCT device_id FROM kernel)"; }

# 1. solo
"$kj" run -o "$dir/solo.kjdb" -- "$target" 3 >"$dir/solo.out" 2>"$dir/solo.err"
note "$dir/solo.out"
check "solo run: the watch listed processes" '[ "$(q "$dir/solo.kjdb" "SELECT value FROM meta WHERE key=\"gpu_watch\"")" = processes ]'
check "solo run: our process was seen as ours" '[ "$(q "$dir/solo.kjdb" "SELECT count(*) FROM gpu_process_sample WHERE traced = 1")" -gt 0 ]'
check "solo run: not flagged" '[ "$(procs_flagged "$dir/solo.kjdb")" = 0 ]'
check "solo run: compare counts no iteration with another process" '[ "$(cmpval "$dir/solo.kjdb" iterations_with_other_processes)" = 0 ]'

# 2. two at once
"$kj" run -o "$dir/a.kjdb" -- "$target" 4 >"$dir/a.out" 2>"$dir/a.err" &
pa=$!
"$kj" run -o "$dir/b.kjdb" -- "$target" 4 >"$dir/b.out" 2>"$dir/b.err" &
pb=$!
wait $pa; wait $pb
for r in a b; do
	note "$dir/$r.out"
	check "concurrent run $r: flagged" '[ "$(procs_flagged "$dir/$r.kjdb")" -gt 0 ]'
	check "concurrent run $r: compare counts iterations with another process" \
		'[ "$(cmpval "$dir/$r.kjdb" iterations_with_other_processes)" -gt 0 ]'
	check "concurrent run $r: info names the other process" '"$kj" info "$dir/$r.kjdb" | grep -q "shared GPU: other processes"'
done

# 3. SIGKILL of the program
"$kj" run -o "$dir/k.kjdb" -- "$target" 30 "$dir/k.pid" >/dev/null 2>"$dir/k.err" &
pk=$!
wait_file "$dir/k.pid"
sleep 3
kill_ns=$(python3 -c 'import os,sys,time; t=time.monotonic_ns(); os.kill(int(sys.argv[1]), 9); print(t)' "$(cat "$dir/k.pid")")
wait $pk; rc=$?
check "program killed: exit 137 passed through" '[ $rc -eq 137 ]'
check "program killed: the run is kept" '[ -s "$dir/k.kjdb" ]'
check "program killed: info says ABNORMAL END" '"$kj" info "$dir/k.kjdb" | grep -q "ABNORMAL END"'
nk=$(q "$dir/k.kjdb" "SELECT count(*) FROM kernel")
last=$(q "$dir/k.kjdb" "SELECT max(end_ns) FROM kernel")
# no kernel at all: max() is NULL (printed None); lost_ms stays null rather than stopping the script
case "$last" in '' | *[!0-9]*) last=null lost_ms=null ;; *) lost_ms=$(( (kill_ns - last) / 1000000 )) ;; esac
echo "program killed: ${nk:-0} kernels, last kernel ended $lost_ms ms before the kill"
check "program killed: kernels are there" '[ "${nk:-0}" -gt 100 ]'
check "program killed: at most 1 s of activity lost ($lost_ms ms)" '[ "$lost_ms" != null ] && [ $lost_ms -le 1000 ]'
echo "{\"kernels\": ${nk:-0}, \"kill_ns\": $kill_ns, \"last_kernel_end_ns\": $last, \"lost_ms\": $lost_ms}" >"$dir/kill_program.json"
if [ -n "${KJ_SHARED_KEEP:-}" ]; then
	mkdir -p "$KJ_SHARED_KEEP" && cp "$dir/kill_program.json" "$KJ_SHARED_KEEP/" 2>/dev/null
fi

# 4. SIGKILL of kjoule run
"$kj" run -o "$dir/kk.kjdb" -- "$target" 4 "$dir/kk.pid" >/dev/null 2>"$dir/kk.err" &
pkk=$!
wait_file "$dir/kk.pid"
sleep 1
kill -9 $pkk
wait $pkk 2>/dev/null
tp=$(cat "$dir/kk.pid")
check "kjoule run killed: the program runs on" 'kill -0 $tp 2>/dev/null'
for _ in $(seq 200); do kill -0 $tp 2>/dev/null || break; sleep 0.05; done
sleep 0.5
spool=$(ls -d "$dir"/.kk.kjdb.spool.* 2>/dev/null | head -1)
check "kjoule run killed: the trace files stay" '[ -n "$spool" ] && ls "$spool"/*.spool >/dev/null 2>&1'
"$kj" ingest "$spool" -o "$dir/kk_ingested.kjdb" 2>"$dir/ingest.err"; rc=$?
launched=$(cat "$dir/kk.pid.count" 2>/dev/null || echo -1)
got=$(q "$dir/kk_ingested.kjdb" "SELECT count(*) FROM kernel")
echo "kjoule run killed: the program launched $launched kernels; kjoule ingest recovered $got"
check "kjoule ingest recovers every kernel the program launched" '[ $rc -eq 0 ] && [ "$got" = "$launched" ]'

exit $fail
