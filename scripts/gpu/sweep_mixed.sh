#!/usr/bin/env bash
# On the GPU machine: the sweep's linear1-4 at the GPT step's shape (mp 1, b 8, l 1024, dim 1024,
# bf16) timed the default way and with KJ_SWEEP_TIMING=mixed (each call followed by a memset about
# as long), ROUNDS times each, alternating; prints one line per op and timing, and writes the CSVs
# under $OUT/sweep_mixed.tar.gz. Compare with bench/results/gemm_clocks.json (PyTorch's own GEMMs).
# usage (device): source scripts/device-env.sh; bash scripts/gpu/sweep_mixed.sh
set -u
KJ=$KJ_BUILD/kjoule
export KJ_SWEEP_WORKER=$KJ_BUILD/src/sweep/worker/kjoule-sweep-worker
[ -x "$KJ_SWEEP_WORKER" ] || export KJ_SWEEP_WORKER=$KJ_BUILD/kjoule-sweep-worker
W=/tmp/sweep_mixed; rm -rf $W; mkdir -p $W
for op in linear1 linear2 linear3 linear4; do
	cat > $W/$op.yml <<-YML
	{"kernel_name": "$op", "columns_name": ['mp', 'b', 'l', 'dim', 'F_dur(us)', 'B_dur(us)'],
	 "first_n_column": 4, "starts": [1, 8, 1024, 1024], "steps": [1, 1, 1, 1], "ends": [1, 8, 1024, 1024],
	 "operators": ['add', 'add', 'add', 'add'], "warmup_shapes": [1, 8, 1024, 1024], "wait": 2, "warmup": 3,
	 "active": 30, "shapes": [1, 8, 1024, 1024], "run": "get_all"}
	YML
done
for r in ${ROUNDS_LIST:-1 2 3}; do
	for t in default mixed; do
		for op in linear1 linear2 linear3 linear4; do
			if [ $t = mixed ]; then export KJ_SWEEP_TIMING=mixed; else unset KJ_SWEEP_TIMING; fi
			timeout 120 $KJ sweep $W/$op.yml --precision bf16 --out $W/${t}_$r > $W/${t}_${r}_$op.log 2>&1 || echo "$op $t round $r: rc $?"
		done
	done
done
unset KJ_SWEEP_TIMING
for t in default mixed; do
	for op in linear1 linear2 linear3 linear4; do
		line="$t $op"
		for r in ${ROUNDS_LIST:-1 2 3}; do
			f=$(ls $W/${t}_$r/sampling_data/*_${op}_bf16_*.csv 2>/dev/null | head -1)
			line="$line | $( [ -n "$f" ] && python3 -c "import csv,sys; r=list(csv.DictReader(open(sys.argv[1])))[-1]; print(r['F_dur(us)'], r['B_dur(us)'])" "$f" || echo none)"
		done
		echo "$line"
	done
done | tee $W/summary.txt
cd $W && tar czf $OUT/sweep_mixed.tar.gz . && cd - >/dev/null
