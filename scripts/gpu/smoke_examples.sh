#!/usr/bin/env bash
# On the GPU machine: each training example run briefly under `kjoule run --iteration-range step`
# and compared (the examples' smoke test after a change to them): gpt_train.py eager, --compile,
# --cuda-graph and both at a small shape, cnn_train.py, compile_train.py. Logs in $OUT/smoke_<name>.txt; one
# line per example last (exit codes of the run and of compare, and compare's iterations line).
# usage (device): source scripts/device-env.sh; [SMOKE="gpt_graph ..."] bash scripts/gpu/smoke_examples.sh
set -u
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
kj=$KJ_BUILD/kjoule
small="--layers 2 --hidden 256 --heads 4 --seq 128 --batch 2 --steps 4 --warmup 2"
declare -A cmd=(
	[gpt_eager]="examples/gpt_train.py $small"
	[gpt_compile]="examples/gpt_train.py $small --compile"
	[gpt_graph]="examples/gpt_train.py $small --cuda-graph"
	[gpt_compile_graph]="examples/gpt_train.py $small --compile --cuda-graph"
	[cnn_train]="examples/cnn_train.py --batch 8 --steps 6 --warmup 2"
	[compile_train]="examples/compile_train.py --layers 2 --batch 2 --seq-len 128 --steps 4 --warmup 2"
)
summary=""
for name in ${SMOKE:-gpt_eager gpt_compile gpt_graph gpt_compile_graph cnn_train compile_train}; do
	log=$OUT/smoke_$name.txt db=/tmp/smoke_$name.kjdb
	{
		echo "\$ kjoule run --iteration-range step -- python3 ${cmd[$name]}"
		timeout 240 "$kj" run --iteration-range step --force -o "$db" -- python3 ${cmd[$name]} 2>&1 | tail -15
		echo "run exit ${PIPESTATUS[0]}"
		timeout 60 "$kj" compare "$db" --skip 2 --top 10 2>&1
		echo "compare exit $?"
		timeout 30 "$kj" kernels "$db" --top 12 2>&1
	} >"$log" 2>&1
	rc_run=$(grep -m1 "^run exit" "$log" | cut -d' ' -f3)
	rc_cmp=$(grep -m1 "^compare exit" "$log" | cut -d' ' -f3)
	its=$(grep -m1 "^iterations:" "$log")
	summary+=$(printf '%-18s run %s compare %s  %s' "$name" "$rc_run" "$rc_cmp" "$its")$'\n'
done
echo "== examples under kjoule run"
printf '%s' "$summary"
