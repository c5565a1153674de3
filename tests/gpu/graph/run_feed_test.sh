#!/usr/bin/env bash
# usage: run_feed_test.sh KJOULE FEED_TARGET — exit 77 where no GPU is present.
# A graph-launched step fed from the host (feed_target.cu): the tracer keeps the bytes of the
# small host-to-device copy and the device addresses of both copies; the kept iteration then
# replays whole on the program's token, where stand-in bytes make the step kernel trap. Traced with
# --copy-data 0 the same replay must fault: the test tells the two apart.
set -u
kj=$1 target=$2
. "$(dirname "$0")/../lib.sh"

"$kj" run --iteration-range step -o "$dir/f.kjdb" -- "$target" > "$dir/run.log" 2>&1; rc=$?
check "the program runs traced and checks its own output" '[ $rc -eq 0 ] && grep -q "steps done" "$dir/run.log"'
db=$dir/f.kjdb
check "each step's 16-byte token kept with its copy, tagged" \
	'[ "$(q $db "SELECT count(*) FROM copy_data WHERE bytes = 16 AND substr(hex(data), 13, 4) = \"ED5E\"")" = 12 ]'
check "the device-to-device copies carry both addresses" \
	'[ "$(q $db "SELECT count(*) FROM memcpy WHERE kind = \"DtoD\" AND dst_address IS NOT NULL AND src_address IS NOT NULL")" = 12 ]'
"$kj" replay "$db" --sequence --graph --runs 20 > "$dir/seq.txt" 2>&1; rc=$?
check "the kept step replays whole, eager and as a graph, on the first fill" \
	'[ $rc -eq 0 ] && [ "$(q $db "SELECT count(*) FROM replay_sequence WHERE mode IN (\"eager\", \"graph\") AND runs > 0 AND median_ns > 0 AND data = \"random\"")" = 2 ]'
check "with the program's token" 'grep -q "1 host-to-device copies with the program.s bytes" "$dir/seq.txt"'

"$kj" run --copy-data 0 --iteration-range step -o "$dir/n.kjdb" -- "$target" > "$dir/run0.log" 2>&1; rc=$?
check "traced with --copy-data 0: no bytes kept" '[ $rc -eq 0 ] && [ "$(q $dir/n.kjdb "SELECT count(*) FROM copy_data")" = 0 ]'
"$kj" replay "$dir/n.kjdb" --sequence --graph --runs 20 > "$dir/seq0.txt" 2>&1
check "... and the step replayed on stand-in bytes faults on every fill" \
	'[ "$(q $dir/n.kjdb "SELECT count(*) FROM replay_sequence WHERE mode = \"eager\" AND runs = 0 AND median_ns IS NULL")" = 1 ]'
[ $fail -eq 0 ] || { tail -20 "$dir/run.log"; tail -30 "$dir/seq.txt"; tail -20 "$dir/seq0.txt"; }
exit $fail
