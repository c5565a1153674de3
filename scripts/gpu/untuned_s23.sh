#!/usr/bin/env bash
# Session 23: programs nobody tuned kjoule for, each through the whole spine (run, info, kernels,
# replay --energy with a budget, compare, timeline, api, report), with compare's JSON scanned for
# figures that must never appear (scripts/gpu/anomalies.py). Programs: PROGS (names below).
# Everything under $OUT/s23_<tag>.tar.gz; one summary line per step printed last.
# usage (device): source scripts/device-env.sh; PROGS="jax_train compile_train" bash scripts/gpu/untuned_s23.sh
set -u
KJ=$KJ_BUILD/kjoule
TAG=${TAG:-a}
W=/tmp/s23_$TAG; rm -rf $W; mkdir -p $W
BUDGET=${BUDGET:-45}
log() { echo "== $*" | tee -a $W/summary.txt; }
declare -A CMD=(
	[jax_train]="python3 examples/jax_train.py --steps 300"
	[compile_train]="python3 examples/compile_train.py --steps 150"
	[compile_train_ro]="python3 examples/compile_train.py --mode reduce-overhead --steps 150"
	[graph_branches]="python3 examples/graph_branches.py --iters 1500"
	[gpt_graph]="python3 examples/gpt_graph.py --iters 1500"
	[cond_graph]="python3 examples/torch_cond_graph.py"
	[hf_decode]="python3 examples/hf_decode.py"
)
for p in ${PROGS:-jax_train compile_train graph_branches}; do
	t0=$(date +%s)
	timeout 200 $KJ run --force -o $W/$p.kjdb -- ${CMD[$p]} > $W/${p}_run.log 2>&1
	log "$p run rc $? ($(( $(date +%s) - t0 )) s): $(tail -1 $W/${p}_run.log | cut -c1-200)"
	[ -s $W/$p.kjdb ] || continue
	$KJ info $W/$p.kjdb > $W/${p}_info.txt 2>&1; log "$p info rc $?"
	$KJ kernels $W/$p.kjdb --top 25 > $W/${p}_kernels.txt 2>&1; log "$p kernels rc $?"
	t0=$(date +%s)
	timeout $((BUDGET + 60)) $KJ replay $W/$p.kjdb --energy --budget $BUDGET > $W/${p}_replay.log 2>&1
	log "$p replay rc $? ($(( $(date +%s) - t0 )) s): $(grep -i 'replayed\|skipped\|failed' $W/${p}_replay.log | tail -3 | tr '\n' '|' | cut -c1-300)"
	$KJ compare $W/$p.kjdb > $W/${p}_compare.txt 2>&1; log "$p compare rc $?"
	$KJ compare $W/$p.kjdb --json > $W/${p}_compare.json 2>$W/${p}_compare_json.err
	python3 scripts/gpu/anomalies.py $p $W/${p}_compare.json | tee -a $W/summary.txt
	$KJ timeline $W/$p.kjdb --format chrome -o $W/${p}_trace.json > $W/${p}_timeline.log 2>&1; log "$p timeline rc $?"
	$KJ timeline $W/$p.kjdb --format ascii > $W/${p}_ascii.txt 2>&1; log "$p timeline ascii rc $?"
	$KJ api $W/$p.kjdb > $W/${p}_api.txt 2>&1; log "$p api rc $?"
	$KJ report $W/$p.kjdb -o $W/${p}_report.html > $W/${p}_report.log 2>&1; log "$p report rc $?"
	python3 -c "import json,sys; json.load(open(sys.argv[1]))" $W/${p}_trace.json 2>&1 | tail -1 | sed "s/^/$p chrome trace: /" | tee -a $W/summary.txt
	rm -f $W/${p}_trace.json
done
cd $W && tar czf $OUT/s23_$TAG.tar.gz --exclude='*.kjdb' . && cd - >/dev/null
cat $W/summary.txt | cut -c1-300
