#!/usr/bin/env bash
# replay --budget bounds the whole replay, without a GPU: a synthetic graph run (tests/tools/mkspool.py,
# its 31 functions given a stand-in module) replayed by the stand-in worker
# (tests/tools/replay_worker_standin.py: 1.2 s a kernel): with a 40 s budget the kernels stop at
# 0.7 of it, the rest listed as skipped with the share kept for the iteration, whose replay then
# runs; with a 16 s budget (too little to keep 10 s for it) the kernels take the whole budget and
# the iteration is not replayed, which is said.
# usage: test_replay_budget.sh KJOULE SRC_DIR BUILD_DIR
set -u
kj=$1 src=$2
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || exit 77

python3 "$src/tests/tools/mkspool.py" "$dir/s" --graph --functions 30 --iters 6 --full-graph >/dev/null 2>&1
"$kj" ingest "$dir/s" -o "$dir/a.kjdb" 2>/dev/null; rc=$?
python3 - "$dir/a.kjdb" <<'PY' || rc=1
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("INSERT INTO module(hash, format, bytes, codec, data) VALUES ('standin', 'cubin', 4, 'none', x'00000000')")
db.execute("INSERT INTO module_function(hash, mangled) SELECT 'standin', mangled FROM kernel_name")
db.commit()
PY
check "a synthetic graph run with a module per function" '[ $rc -eq 0 ] && [ "$(q "$dir/a.kjdb" "SELECT count(*) FROM sequence_op")" -gt 0 ]'
cp "$dir/a.kjdb" "$dir/b.kjdb"
export KJ_REPLAY_WORKER="$src/tests/tools/replay_worker_standin.py" KJ_STANDIN_KJOULE="$kj" STANDIN_KERNEL_S=1.2

t0=$(date +%s)
"$kj" replay "$dir/a.kjdb" --budget 40 > "$dir/a.out" 2> "$dir/a.err"; rc=$?
took=$(( $(date +%s) - t0 ))
ok=$(q "$dir/a.kjdb" "SELECT count(*) FROM replay_kernel WHERE cache = 'warm' AND status = 'ok'")
skipped=$(q "$dir/a.kjdb" "SELECT count(*) FROM replay_kernel WHERE cache = 'warm' AND status = 'skipped'")
check "--budget 40: the kernels stop near 28 s (0.7 of it), the rest skipped with the 12 s kept named" \
	'[ $rc -eq 0 ] && [ "$ok" -ge 18 ] && [ "$ok" -le 26 ] && [ "$skipped" -gt 0 ] &&
	 grep -q "the --budget of 40 s was spent (12 s of it kept for the iteration" "$dir/a.err"'
check "... then the iteration is replayed with what is left, all within the budget" \
	'[ "$(q "$dir/a.kjdb" "SELECT count(*) FROM replay_sequence WHERE median_ns > 0")" -gt 0 ] && [ $took -le 42 ]'

"$kj" replay "$dir/b.kjdb" --budget 16 > "$dir/b.out" 2> "$dir/b.err"; rc=$?
ok=$(q "$dir/b.kjdb" "SELECT count(*) FROM replay_kernel WHERE cache = 'warm' AND status = 'ok'")
check "--budget 16: no share kept, the kernels take the budget and the iteration's replay is said not to fit" \
	'[ $rc -eq 0 ] && [ "$ok" -ge 10 ] && ! grep -q "kept for the iteration" "$dir/b.err" &&
	 grep -q "the kept iteration was not replayed: .* under the 10 s a sequence replay needs" "$dir/b.err" &&
	 [ "$(q "$dir/b.kjdb" "SELECT count(*) FROM replay_sequence")" = 0 ]'
exit $fail
