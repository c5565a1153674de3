#!/usr/bin/env bash
# GPU: a rank that dies (docs/multi-gpu.md). examples/tp_mlp.py on 2 ranks under
# `kjoule run -- torchrun`, rank 1 SIGKILLing itself after 10 of 40 steps; torchrun then stops
# rank 0 (SIGTERM). Checks:
#  1. kjoule run ends (non-zero is fine) and keeps the run; both ranks' kernels are in it
#  2. compare exits 0; its JSON marks rank 1 died with the SIGKILL text, and rank 0 died with the
#     signal it got ("ended by SIGTERM from pid N (torchrun)" when torchrun stopped it)
#  3. compare's text names rank 1 and how it ended
# usage: run_tp_die_test.sh KJOULE SRC_DIR — exit 77 without 2 GPUs or PyTorch.
# KJ_TP_KEEP=DIR keeps the run and compare's outputs there.
set -u
kj=$1 src=$2
. "$(dirname "$0")/../lib.sh"
need_two_gpus_torch
keep=${KJ_TP_KEEP:-$dir}
run=$keep/tp_die.kjdb
kill_text='ended without closing its trace: SIGKILL (kill -9, the OOM killer) or an exit kjoule could not see'
tp_run "$kj" "$src" "$run" "$keep/run_die.log" --steps 40 --die-rank 1 --die-after 10
rc=$?
check "kjoule run ends by itself (got $rc; $keep/run_die.log)" '[ $rc != 124 ] && [ $rc != 137 ]'
check "the run is kept" '[ -s "$run" ]'
check "both ranks' kernels are in it" '[ "$(q "$run" "SELECT count(DISTINCT pid) FROM kernel")" = 2 ]'
check "rank 1 killed itself (its message in the log)" 'grep -q "rank 1 kills itself" "$keep/run_die.log"'
tp_compare "$kj" "$run" "$keep/compare_die"
py() { compare_py "$keep/compare_die.json" "$1"; }
check "job section with two ranks" '[ "$(py "print(len(r))")" = 2 ]'
check "rank 1 died by SIGKILL" '[ "$(py "print(r[1][\"died\"] is True and r[1][\"died_why\"])")" = "$kill_text" ]'
why0=$(py 'print(r[0]["died_why"] if r[0]["died"] else "(closed its trace)")')
echo "     rank 0: $why0"
check "rank 0 ended by a signal it recorded (SIGTERM from torchrun expected)" \
	'case "$why0" in "ended by "*) true;; *) false;; esac'
check "two dead ranks counted" '[ "$(py "print(job[\"ranks_died\"])")" = 2 ]'
check "text names rank 1 and how it ended" 'grep -q "rank 1 (GPU [0-9]*) (pid [0-9]*) died: $kill_text" "$keep/compare_die.txt"'
check "compare --json has no inf or NaN" \
	"python3 -c 'import json, sys; json.load(open(sys.argv[1]), parse_constant=lambda c: sys.exit(1))' '$keep/compare_die.json'"
timeout 60 "$kj" info "$run" >"$keep/info_die.txt" 2>&1
check "info names the dead ranks" 'grep -q "rank 1 (GPU [0-9]*, pid [0-9]*) died: $kill_text" "$keep/info_die.txt"'
sed -n '/^Ranks:/,$p' "$keep/compare_die.txt"
q "$run" "SELECT group_concat(pid || ': ' || what, char(10)) FROM problem WHERE what LIKE 'ended %'"
exit 0
