#!/usr/bin/env bash
# usage: run_trace_test.sh KJOULE TRACE_TARGET CHECKER — exit 77 where no GPU is present.
set -eu
kj=$1 target=$2 checker=$3
if ! nvidia-smi -L >/dev/null 2>&1; then echo "no GPU: skipped"; exit 77; fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
KJ_EXPECT=$dir/expected.json "$kj" run -o "$dir/run.kjdb" -- "$target"
python3 "$checker" "$dir/run.kjdb" "$dir/expected.json"
# exit code and crash handling: a program killed by a signal still leaves a valid database
rc=0; "$kj" run -o "$dir/killed.kjdb" -- bash -c 'kill -9 $$' || rc=$?
[ "$rc" -eq 137 ] || { echo "expected exit 137 for SIGKILL, got $rc"; exit 1; }
"$kj" info "$dir/killed.kjdb" | grep -qi 'signal' || { echo "info does not say the run was killed"; exit 1; }
rc=0; "$kj" run -o "$dir/nf.kjdb" -- /nonexistent/command 2>/dev/null || rc=$?
[ "$rc" -eq 127 ] || { echo "expected 127 for a missing command, got $rc"; exit 1; }
[ ! -e "$dir/nf.kjdb" ] || { echo "a database was left for a command that never ran"; exit 1; }
rc=0; "$kj" run -o "$dir/run.kjdb" -- true 2>/dev/null || rc=$?
[ "$rc" -ne 0 ] || { echo "existing output was overwritten without --force"; exit 1; }
ls -a "$dir" | grep -q '\.tmp$\|spool' && { echo "temporary files left behind"; ls -a "$dir"; exit 1; }
echo "gpu_trace: ok"
