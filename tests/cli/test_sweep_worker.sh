#!/usr/bin/env bash
# kjoule-sweep-worker without a GPU: --list names every operator of the operator table
# (src/sweep/kj_sweep_ops.c) with the same columns, the collectives through kjoule-nccl-worker's
# --list (left out of the comparison where NCCL was not found and that worker not built); usage errors exit 2; --selftest exits 77 (skip)
# and serving exits 1 with a message when no GPU is present. Skipped where the worker is not built
# (no CUDA toolkit). usage: test_sweep_worker.sh KJOULE SRC_DIR BUILD_DIR
set -u
src=$2
w=$3/kjoule-sweep-worker
[ -x "$w" ] || { echo "kjoule-sweep-worker not built: skipped"; exit 77; }
. "$src/tests/cli/lib.sh"

expect 0 "$w" --list
cp "$T/out" "$T/list"
nw=$3/kjoule-nccl-worker
collectives=absent
if [ -x "$nw" ]; then
	"$nw" --list >> "$T/list" 2>/dev/null || fail "kjoule-nccl-worker --list failed"
	collectives=present
fi
python3 - "$src/src/sweep/kj_sweep_ops.c" "$T/list" "$collectives" > "$T/diff" <<'PY'
import re, sys
table = {}
text = open(sys.argv[1]).read()
for m in re.finditer(r'\{"(\w+)",\s*(?:C\d\(([^)]*)\)|\{([^}]*)\})', text):
    cols = [c.strip().strip('"') for c in (m.group(2) or m.group(3)).split(",")]
    table[m.group(1)] = ",".join(c for c in cols if c and c != "NULL")
worker = dict(line.split() for line in open(sys.argv[2]) if line.strip())
if sys.argv[3] == "absent":  # no NCCL worker here: its operators (shape gpus,bytes) are not compared
    table = {k: v for k, v in table.items() if v != "gpus,bytes"}
for op in sorted(set(table) | set(worker)):
    if table.get(op) != worker.get(op):
        print("%s: table %s, worker %s" % (op, table.get(op), worker.get(op)))
print("compared %d" % len(table))
PY
grep -q "^compared [23][0-9]$" "$T/diff" || fail "operator table not parsed: $(cat "$T/diff")"
[ "$(grep -vc '^compared' "$T/diff")" = 0 ] || fail "worker and table differ: $(grep -v '^compared' "$T/diff")"
expect 2 "$w" --bogus
grep -q "usage" "$T/err" || fail "no usage text on a bad option"
expect 0 "$w" --help
has "--selftest"
if ! nvidia-smi -L >/dev/null 2>&1; then
	expect 77 "$w" --selftest
	echo "linear1 fp16 1,2,64,256 0 0" > "$T/in"
	"$w" < "$T/in" > "$T/out" 2> "$T/err"
	[ $? = 1 ] || fail "serving without a GPU should exit 1"
	grep -q "no CUDA device" "$T/err" || fail "no message without a GPU: $(cat "$T/err")"
fi
finish
