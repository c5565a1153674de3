#!/usr/bin/env bash
# kjoule run --capture: bad values are refused before the program starts (exit 2, the option
# named, nothing run, nothing written); a capture range that never opens ends the run with a
# clear message and a database that says nothing was captured; --capture-attached is refused
# without an NVTX capture range.
set -u
kj=$1
. "$(dirname "$0")/lib.sh"

for bad in "step@1:0" "step@-1:2" "step@x:2" "@3:1" "step@2:" "step@1:2:3"; do
	"$kj" run --capture "$bad" -o "$dir/bad.kjdb" -- sh -c "touch $dir/started" 2>"$dir/err"; rc=$?
	check "--capture $bad refused with exit 2, naming the option" '[ $rc -eq 2 ] && grep -q -- "--capture" "$dir/err"'
	check "--capture $bad: the program did not start, no database" '[ ! -e "$dir/started" ] && [ ! -e "$dir/bad.kjdb" ]'
done
"$kj" run --capture step@1:2 --capture cuda-profiler-api -o "$dir/two.kjdb" -- sh -c "touch $dir/started" 2>"$dir/err"; rc=$?
check "two capture options refused with exit 2" '[ $rc -eq 2 ] && grep -q "given twice" "$dir/err" && [ ! -e "$dir/started" ]'
for without in "" "--capture cuda-profiler-api"; do
	"$kj" run $without --capture-attached -o "$dir/att.kjdb" -- sh -c "touch $dir/started" 2>"$dir/err"; rc=$?
	check "--capture-attached${without:+ with $without} refused with exit 2, naming it" '[ $rc -eq 2 ] && grep -q -- "--capture-attached goes with --capture NAME" "$dir/err" && [ ! -e "$dir/started" ] && [ ! -e "$dir/att.kjdb" ]'
done
"$kj" run --capture=step@0:0 -o "$dir/eq.kjdb" -- true 2>"$dir/err"; rc=$?
check "--capture=VALUE form checked too" '[ $rc -eq 2 ] && grep -q "COUNT" "$dir/err"'

# no CUDA here: the range never opens
KJ_INJECT_LIB=/nonexistent "$kj" run --capture step@5:3 -o "$dir/never.kjdb" -- sh -c 'exit 0' 2>"$dir/err"; rc=$?
check "a range that never opens: the program's exit code" '[ $rc -eq 0 ]'
check "a range that never opens: said on stderr" 'grep -q "window never opened" "$dir/err" && grep -q "nothing was captured" "$dir/err"'
check "the database says never_opened" '[ "$(q "$dir/never.kjdb" "SELECT value FROM meta WHERE key=\"capture_status\"")" = "never_opened" ]'
check "the database keeps the capture range" '[ "$(q "$dir/never.kjdb" "SELECT value FROM meta WHERE key=\"capture_range\"")" = "step@5:3" ]'
check "the range is every analysis' iteration range" '[ "$(q "$dir/never.kjdb" "SELECT value FROM meta WHERE key=\"iteration_range\"")" = "step" ]'
check "no CUPTI period recorded where no process ran CUPTI" '[ "$(q "$dir/never.kjdb" "SELECT value FROM meta WHERE key=\"capture_detaches\"")" = "0" ]'
check "a problem row names it" '[ "$(q "$dir/never.kjdb" "SELECT count(*) FROM problem WHERE what LIKE \"%never opened%\"")" = 1 ]'
exit $fail
