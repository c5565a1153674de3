#!/usr/bin/env bash
# Untuned programs with loops long enough for the energy counter to judge (FP8 GEMMs, two
# streams), FlexAttention on stand-in data and with --snapshot, and why max-autotune's triton_mm
# candidates failed. Everything under $OUT/untuned_long_loops.tar.gz (a device run returns few files).
set -u
source scripts/device-env.sh
KJ=$KJ_BUILD/kjoule
W=/tmp/untuned_long_loops; rm -rf $W; mkdir -p $W
log() { echo "== $*" | tee -a $W/summary.txt; }
# compile_autotune: the failed triton_mm candidates
$KJ run --force -o $W/ca.kjdb -- python3 examples/compile_autotune.py --iters 8000 > $W/ca_run.log 2>&1
log "compile_autotune run rc $?: $(tail -1 $W/ca_run.log)"
timeout 150 $KJ replay $W/ca.kjdb --kernel triton_mm --cache warm --no-sequence --runs 10 > $W/ca_replay.log 2>&1
log "ca replay rc $?"
python3 scripts/gpu/failed_kernels.py $W/ca.kjdb > $W/ca_failed.txt 2>&1
head -60 $W/ca_failed.txt >> $W/summary.txt
# flex attention: plain (stand-in data) and with --snapshot
$KJ run --force -o $W/flex.kjdb -- python3 examples/flex_attention.py --iters 2000 > $W/flex_run.log 2>&1
log "flex run rc $?: $(tail -1 $W/flex_run.log)"
timeout 120 $KJ replay $W/flex.kjdb --energy --budget 60 > $W/flex_replay.log 2>&1; log "flex replay rc $?"
$KJ compare $W/flex.kjdb > $W/flex_compare.txt 2>&1; $KJ compare $W/flex.kjdb --json > $W/flex_compare.json 2>&1
grep -A6 "^Replay (Σ\|Not replayable\|^Energy per" $W/flex_compare.txt >> $W/summary.txt
$KJ run --force --snapshot -o $W/flexs.kjdb -- python3 examples/flex_attention.py --iters 2000 > $W/flexs_run.log 2>&1
log "flex --snapshot run rc $?: $(tail -1 $W/flexs_run.log)"
timeout 120 $KJ replay $W/flexs.kjdb --energy --budget 60 > $W/flexs_replay.log 2>&1; log "flexs replay rc $?"
$KJ compare $W/flexs.kjdb > $W/flexs_compare.txt 2>&1; $KJ compare $W/flexs.kjdb --json > $W/flexs_compare.json 2>&1
grep -A6 "^Replay (Σ\|Not replayable\|^Energy per" $W/flexs_compare.txt >> $W/summary.txt
# fp8 and two streams, loops long enough for the energy counter
for p in "fp8_mlp --iters 3000" "two_streams --iters 3000"; do
	n=${p%% *}
	$KJ run --force -o $W/$n.kjdb -- python3 examples/$n.py ${p#* } > $W/${n}_run.log 2>&1
	log "$n run rc $?: $(tail -1 $W/${n}_run.log)"
	timeout 100 $KJ replay $W/$n.kjdb --energy --budget 50 > $W/${n}_replay.log 2>&1; log "$n replay rc $?"
	$KJ compare $W/$n.kjdb > $W/${n}_compare.txt 2>&1; $KJ compare $W/$n.kjdb --json > $W/${n}_compare.json 2>&1
	grep -A12 "^Time per it" $W/${n}_compare.txt >> $W/summary.txt
	grep -A8 "^Replay (Σ\|^Energy per" $W/${n}_compare.txt >> $W/summary.txt
done
cd $W && tar czf $OUT/untuned_long_loops.tar.gz *.log *.txt *.json && cd - >/dev/null
cat $W/summary.txt | cut -c1-220
