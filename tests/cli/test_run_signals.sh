#!/usr/bin/env bash
# kjoule run and signals, with a stand-in program (a shell script; no GPU needed): SIGTERM and a
# SIGINT sent to kjoule run reach the program and the database is still written; a second SIGINT
# stops waiting, keeps the trace files and names the kjoule ingest command; kjoule run killed
# outright leaves the program running and its trace directory in place.
# usage: test_run_signals.sh KJOULE SRC_DIR BUILD_DIR
set -u
kj=$1
. "$(dirname "$0")/lib.sh"

# the stand-in: writes its pid to $1 when ready, records the signal it trapped in $1.sig
cat >"$dir/prog.sh" <<'SH'
#!/usr/bin/env bash
trap 'echo TERM >"$1.sig"; exit 7' TERM
trap 'echo INT >"$1.sig"; exit 9' INT
[ "${2:-}" = ignore-int ] && trap 'echo INT >>"$1.sig"' INT
echo $$ >"$1.tmp" && mv "$1.tmp" "$1"
for _ in $(seq 400); do sleep 0.05; done # ends by itself after ~20 s, whatever happens
exit 3
SH
chmod +x "$dir/prog.sh"

wait_file() { for _ in $(seq 200); do [ -s "$1" ] && return 0; sleep 0.05; done; return 1; }

"$kj" run -o "$dir/term.kjdb" -- "$dir/prog.sh" "$dir/p1" 2>"$dir/err1" & kpid=$!
wait_file "$dir/p1"
kill -TERM $kpid
wait $kpid; rc=$?
check "SIGTERM reaches the program" '[ "$(cat "$dir/p1.sig" 2>/dev/null)" = TERM ]'
check "the program's exit code passes through (7)" '[ $rc -eq 7 ]'
check "the database is written after SIGTERM" '[ -s "$dir/term.kjdb" ] && [ "$(q "$dir/term.kjdb" "SELECT value FROM meta WHERE key=\"interrupts\"")" = 1 ]'

"$kj" run -o "$dir/int.kjdb" -- "$dir/prog.sh" "$dir/p2" 2>"$dir/err2" & kpid=$!
wait_file "$dir/p2"
kill -INT $kpid
wait $kpid; rc=$?
check "a SIGINT sent to kjoule run reaches the program" '[ "$(cat "$dir/p2.sig" 2>/dev/null)" = INT ]'
check "exit code after SIGINT (9)" '[ $rc -eq 9 ]'
check "the database is written after SIGINT" '[ -s "$dir/int.kjdb" ] && "$kj" info "$dir/int.kjdb" >/dev/null'

"$kj" run -o "$dir/twice.kjdb" -- "$dir/prog.sh" "$dir/p3" ignore-int 2>"$dir/err3" & kpid=$!
wait_file "$dir/p3"
kill -INT $kpid
sleep 0.3
kill -INT $kpid
wait $kpid; rc=$?
ppid3=$(cat "$dir/p3")
spool=$(ls -d "$dir"/.twice.kjdb.spool.* 2>/dev/null | head -1)
check "a second SIGINT stops waiting: exit 130" '[ $rc -eq 130 ]'
check "no database after the second SIGINT" '[ ! -e "$dir/twice.kjdb" ]'
check "the trace directory is kept" '[ -n "$spool" ] && [ -d "$spool" ]'
check "the message names kjoule ingest with that directory" 'grep -q "kjoule ingest $spool -o $dir/twice.kjdb" "$dir/err3"'
check "the program still runs after kjoule stopped waiting" 'kill -0 $ppid3'
kill -TERM $ppid3 2>/dev/null
sleep 0.2
"$kj" ingest "$spool" -o "$dir/later.kjdb" 2>"$dir/err4"; rc=$?
check "kjoule ingest builds the run later" '[ $rc -eq 0 ] && [ -s "$dir/later.kjdb" ]'

"$kj" run -o "$dir/k9.kjdb" -- "$dir/prog.sh" "$dir/p4" 2>/dev/null & kpid=$!
wait_file "$dir/p4"
kill -KILL $kpid
{ wait $kpid; } 2>/dev/null
ppid4=$(cat "$dir/p4")
check "kjoule run killed outright: the program runs on" 'kill -0 $ppid4'
check "kjoule run killed outright: the trace directory stays" 'ls -d "$dir"/.k9.kjdb.spool.* >/dev/null 2>&1'
kill -TERM $ppid4 2>/dev/null
sleep 0.2
exit $fail
