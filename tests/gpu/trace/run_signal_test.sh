#!/usr/bin/env bash
# usage: run_signal_test.sh KJOULE CUDA_HEAT — exit 77 where no GPU is present.
# A traced CUDA program (examples/cuda_heat) ended by a signal while it runs (docs/multi-gpu.md):
#  1. SIGTERM from this script: kjoule run exits 143 and keeps the run; the process did not close
#     its trace, and its problem row says "ended by SIGTERM from pid <this shell> (bash)"
#  2. SIGKILL: exit 137; the row says SIGKILL or an exit kjoule could not see
#  3. SIGSEGV sent by this script: the row names SIGSEGV and this shell
set -u
kj=$1 heat=$2
source "$(dirname "$0")/../lib.sh"
# run NAME SIGNAL: start the traced program, wait until it is traced and computing, send SIGNAL
run() {
	local name=$1 sig=$2 db=$dir/$1.kjdb kp child spool=
	timeout 120 "$kj" run -o "$db" -- "$heat" --n 2048 --steps 100000000 --warmup 2 --check-every 1000 \
		>"$dir/$name.out" 2>&1 &
	kp=$!
	for _ in $(seq 1 120); do
		spool=$(ls "$dir"/.$name.kjdb.spool.*/p*.spool 2>/dev/null | head -1)
		[ -n "$spool" ] && [ "$(stat -c %s "$spool")" -gt 65536 ] && break
		sleep 0.5
	done
	child=$(pgrep -P "$kp" | head -1) # timeout's child: kjoule run
	child=$(pgrep -P "$child" | head -1) # kjoule run's child: cuda_heat
	check "$name: the program is traced ($spool, pid ${child:-none})" '[ -n "$spool" ] && [ -n "$child" ]'
	[ -n "$child" ] && kill "-$sig" "$child"
	wait "$kp"
	rc=$?
}
q_end() { q "$1" "SELECT group_concat(what, ' | ') FROM problem WHERE what LIKE 'ended %'"; }

run term TERM
check "term: kjoule run exits 143 (got $rc)" '[ $rc = 143 ]'
check "term: the run is kept" '[ -s "$dir/term.kjdb" ]'
check "term: kernels recorded" '[ "$(q "$dir/term.kjdb" "SELECT count(*) FROM kernel")" -gt 0 ]'
check "term: the trace was not closed" '[ "$(q "$dir/term.kjdb" "SELECT ended_cleanly FROM process")" = 0 ]'
t=$(q_end "$dir/term.kjdb")
echo "     term: $t"
check "term: ended by SIGTERM from this shell (pid $$)" '[ "$t" = "ended by SIGTERM from pid $$ (bash)" ]'

run kill KILL
check "kill: kjoule run exits 137 (got $rc)" '[ $rc = 137 ]'
t=$(q_end "$dir/kill.kjdb")
echo "     kill: $t"
check "kill: SIGKILL or an exit kjoule could not see" \
	'[ "$t" = "ended without closing its trace: SIGKILL (kill -9, the OOM killer) or an exit kjoule could not see" ]'

run segv SEGV
check "segv: kjoule run exits 139 (got $rc)" '[ $rc = 139 ]'
t=$(q_end "$dir/segv.kjdb")
echo "     segv: $t"
check "segv: ended by SIGSEGV from this shell" '[ "$t" = "ended by SIGSEGV from pid $$ (bash)" ]'
exit $fail
