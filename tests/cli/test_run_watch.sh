#!/usr/bin/env bash
# kjoule run's watch for other processes, end to end without a GPU: a stand-in NVML
# (tests/tools/fake_nvml.c, loaded through KJ_NVML_LIB) lists the processes the test chooses.
# A refused list is reported once as "cannot be seen here"; a visible foreign process is recorded
# with its name and interval and named by info and compare; the run's own child is ours.
# usage: test_run_watch.sh KJOULE SRC_DIR BUILD_DIR
set -u
kj=$1 build=$3
. "$(dirname "$0")/lib.sh"
fake=$build/tests/libkj_fake_nvml.so
[ -e "$fake" ] || { echo "no stand-in NVML built: skipped"; exit 77; }
export KJ_NVML_LIB=$fake

KJ_FAKE_NVML_PROCS=deny "$kj" run -o "$dir/deny.kjdb" -- sleep 0.5 2>"$dir/deny.err"; rc=$?
check "a refused process list: the run still succeeds" '[ $rc -eq 0 ] && [ -s "$dir/deny.kjdb" ]'
check "said once on stderr: other processes cannot be seen here" '[ "$(grep -c "other processes cannot be seen here" "$dir/deny.err")" = 1 ] && grep -q "Insufficient Permissions" "$dir/deny.err"'
check "recorded as blind, with one problem row" '[ "$(q "$dir/deny.kjdb" "SELECT value FROM meta WHERE key=\"gpu_watch\"")" = blind ] && [ "$(q "$dir/deny.kjdb" "SELECT count(*) FROM problem WHERE what LIKE \"%cannot be seen here%\"")" = 1 ]'
check "info repeats it, never none" \
	'"$kj" info "$dir/deny.kjdb" > "$dir/deny.info" && grep -q "cannot be seen here" "$dir/deny.info" && ! grep -qi "no other process" "$dir/deny.info"'

sleep 30 & other=$!
KJ_FAKE_NVML_PIDS="$other,children" "$kj" run -o "$dir/shared.kjdb" -- sleep 1 2>"$dir/shared.err"; rc=$?
check "shared: the run succeeds" '[ $rc -eq 0 ]'
check "shared: the other process is an interval with its name" '[ "$(q "$dir/shared.kjdb" "SELECT pid || \" \" || name FROM foreign_activity WHERE source = \"process\"")" = "$other sleep" ]'
check "shared: it lasted about the run (0.5 .. 2 s)" '[ "$(q "$dir/shared.kjdb" "SELECT (end_ns - start_ns) BETWEEN 500000000 AND 2000000000 FROM foreign_activity")" = 1 ]'
check "shared: the run's own child is marked ours" '[ "$(q "$dir/shared.kjdb" "SELECT count(*) FROM gpu_process_sample WHERE traced = 1")" -gt 0 ] && [ "$(q "$dir/shared.kjdb" "SELECT count(DISTINCT pid) FROM gpu_process_sample WHERE traced = 0")" = 1 ]'
check "shared: listings every ~200 ms" '[ "$(q "$dir/shared.kjdb" "SELECT count(DISTINCT t_ns) FROM gpu_process_sample")" -ge 3 ]'
check "shared: info names the other process" '"$kj" info "$dir/shared.kjdb" | grep -q "gpu shared: shared GPU: other processes (pids $other)"'
kill $other 2>/dev/null

KJ_FAKE_NVML_PIDS=children "$kj" run -o "$dir/alone.kjdb" -- sleep 0.6 2>/dev/null
check "alone: no interval, info says none was listed" '[ "$(q "$dir/alone.kjdb" "SELECT count(*) FROM foreign_activity WHERE source = \"process\"")" = 0 ] && "$kj" info "$dir/alone.kjdb" | grep -q "no other process was listed"'

KJ_FAKE_NVML_PIDS=99999991 "$kj" run -o "$dir/ns.kjdb" -- sleep 0.6 2>/dev/null
check "a pid not in this namespace is another process, as NVML reports it" '[ "$(q "$dir/ns.kjdb" "SELECT pid FROM foreign_activity WHERE source = \"process\"")" = 99999991 ]'

KJ_FAKE_NVML_PIDS=children "$kj" run --no-watch -o "$dir/nowatch.kjdb" -- sleep 0.3 2>/dev/null
check "--no-watch: no watch tables, info says not watched" '[ "$(q "$dir/nowatch.kjdb" "SELECT count(*) FROM sqlite_master WHERE name = \"foreign_activity\"")" = 0 ] && "$kj" info "$dir/nowatch.kjdb" | grep -q "not watched"'
"$kj" run --watch-interval-ms 5 -o "$dir/bad.kjdb" -- true 2>"$dir/bad.err"; rc=$?
check "--watch-interval-ms below 20 refused, naming the option" '[ $rc -eq 2 ] && grep -q -- "--watch-interval-ms" "$dir/bad.err"'
exit $fail
