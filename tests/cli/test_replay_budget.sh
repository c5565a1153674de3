#!/usr/bin/env bash
# replay --budget bounds the whole replay, without a GPU: the shipped eager run
# (examples/runs/bloom560m.kjdb, 79 unique kernels and a kept iteration) replayed by the stand-in
# worker (tests/tools/replay_kernel_standin.py, 0.5 s a kernel; its --sequence requests go to
# replay_worker_standin.py): with a 40 s budget the kernels stop at 0.7 of it, the rest listed as
# skipped with the share kept for the iteration, whose replay then runs; with a 16 s budget (too
# little to keep 10 s for it) the kernels take the whole budget and the iteration is not
# replayed, which is said. The progress line comes with each kernel's result.
# usage: test_replay_budget.sh KJOULE SRC_DIR BUILD_DIR
set -u
kj=$1 src=$2
. "$(dirname "$0")/lib.sh"

cp "$src/examples/runs/bloom560m.kjdb" "$dir/a.kjdb"
cp "$src/examples/runs/bloom560m.kjdb" "$dir/b.kjdb"
for db in a b; do
	python3 -c "import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); d.execute('DELETE FROM replay_kernel'); d.execute('DELETE FROM replay_sequence'); d.commit()" "$dir/$db.kjdb"
done
export KJ_REPLAY_WORKER="$src/tests/tools/replay_kernel_standin.py" KJ_STANDIN_KJOULE="$kj" STANDIN_KERNEL_S=0.5

t0=$(date +%s)
"$kj" replay "$dir/a.kjdb" --budget 40 > "$dir/a.out" 2> "$dir/a.err"; rc=$?
took=$(( $(date +%s) - t0 ))
ok=$(q "$dir/a.kjdb" "SELECT count(*) FROM replay_kernel WHERE cache = 'warm' AND status = 'ok'")
skipped=$(q "$dir/a.kjdb" "SELECT count(*) FROM replay_kernel WHERE cache = 'warm' AND status = 'skipped'")
check "--budget 40: the kernels stop near 28 s (0.7 of it), the rest skipped with the 12 s kept named" \
	'[ $rc -eq 0 ] && [ "$ok" -ge 44 ] && [ "$ok" -le 60 ] && [ "$skipped" -gt 0 ] &&
	 grep -q "the --budget of 40 s was spent (12 s of it kept for the iteration" "$dir/a.err"'
# the progress line comes as each kernel's result does, not when its worker (8 kernels) is done
first=$(sed -n 's/^\[1\/[0-9]* *\([0-9]*\)s,.*/\1/p' "$dir/a.err" | head -n 1)
eighth=$(sed -n 's/^\[8\/[0-9]* *\([0-9]*\)s,.*/\1/p' "$dir/a.err" | head -n 1)
check "the progress lines of one worker's kernels come 0.5 s apart, as their results do" \
	'[ -n "$first" ] && [ -n "$eighth" ] && [ $(( eighth - first )) -ge 2 ]'
check "... then the iteration is replayed with what is left, all within the budget" \
	'[ "$(q "$dir/a.kjdb" "SELECT count(*) FROM replay_sequence WHERE median_ns > 0")" -gt 0 ] && [ $took -le 42 ]'

"$kj" replay "$dir/b.kjdb" --budget 16 > "$dir/b.out" 2> "$dir/b.err"; rc=$?
ok=$(q "$dir/b.kjdb" "SELECT count(*) FROM replay_kernel WHERE cache = 'warm' AND status = 'ok'")
check "--budget 16: no share kept, the kernels take the budget and the iteration's replay is said not to fit" \
	'[ $rc -eq 0 ] && [ "$ok" -ge 24 ] && ! grep -q "kept for the iteration" "$dir/b.err" &&
	 grep -q "the kept iteration was not replayed: .* under the 10 s a sequence replay needs" "$dir/b.err" &&
	 [ "$(q "$dir/b.kjdb" "SELECT count(*) FROM replay_sequence")" = 0 ]'

# replay --energy on a whole run is bounded by default (110 s), said on stderr, and the progress
# counts down that bound; --budget 0 lifts it, --all measures everything unbounded
cp "$src/examples/runs/bloom560m.kjdb" "$dir/c.kjdb"
STANDIN_KERNEL_S=0 "$kj" replay "$dir/c.kjdb" --energy --no-sequence > /dev/null 2> "$dir/c.err"; rc=$?
check "--energy without --budget: bounded to 110 s, said, and the replay runs within it" \
	'[ $rc -eq 0 ] && grep -q "bounded to 110 s (--budget S sets another bound, --budget 0 none)" "$dir/c.err" &&
	 grep -q "^kjoule replay: 79 unique kernels.*; all within 110 s$" "$dir/c.err"'
STANDIN_KERNEL_S=0 "$kj" replay "$dir/c.kjdb" --energy --no-sequence --budget 0 > /dev/null 2> "$dir/c0.err"; rc=$?
check "--budget 0: no bound" '[ $rc -eq 0 ] && ! grep -q "bounded to" "$dir/c0.err" && ! grep -q "all within" "$dir/c0.err"'
"$kj" replay "$dir/c.kjdb" --energy --budget -3 > /dev/null 2> "$dir/cn.err"; rc=$?
check "--budget -3 refused with a usage error" '[ $rc -eq 2 ] && grep -q "wants seconds >= 0" "$dir/cn.err"'
exit $fail
