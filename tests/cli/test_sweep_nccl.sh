# NCCL collectives in kjoule sweep, fit and predict, on the CPU: the stand-in worker answers as
# every rank (tests/tools/sweep_worker_standin.py). Refusals before any work (more GPUs than the
# machine has, a collective without --gpus, a count off the config's gpus axis), the group of ranks
# and its environment, algbw/busbw, fit and predict of the rows, and predict --model's tp/dp terms.
set -u
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
W="$SRC/tests/tools/sweep_worker_standin.py"
export KJ_NCCL_WORKER=$W KJ_SWEEP_WORKER=$W
unset NCCL_NVLS_ENABLE TORCH_SYMM_MEM_DISABLE_MULTICAST NVSHMEM_DISABLE_NVLS
AR="$SRC/configs/sweep/collect/all_reduce.yml"

# more GPUs than the machine has: exit 2 before any worker starts, for any operator
export STANDIN_LOG=$T/requests.log
CUDA_VISIBLE_DEVICES=0,1 expect 2 "$KJ" sweep "$AR" --gpus 4 --gpu-name H -o "$T/o"
grep -q "needs GPUs 0..3, but this machine has 2" "$T/err" || fail "too many GPUs: $(cat "$T/err")"
CUDA_VISIBLE_DEVICES=0,1 expect 2 "$KJ" sweep "$SRC/configs/sweep/test/res_add.yml" --gpus 2 --device 1 -o "$T/o"
grep -q "needs GPUs 1..2, but this machine has 2" "$T/err" || fail "--device past the GPUs: $(cat "$T/err")"
[ ! -e "$T/requests.log" ] && [ ! -e "$T/o" ] || fail "a refused sweep started work"
# a collective without --gpus, with 1, or with a count off its gpus axis (2, 4, 8)
CUDA_VISIBLE_DEVICES=0,1,2,3 expect 2 "$KJ" sweep "$AR" -o "$T/o"
grep -q "all_reduce is a collective: give --gpus N" "$T/err" || fail "no --gpus: $(cat "$T/err")"
CUDA_VISIBLE_DEVICES=0,1,2,3 expect 2 "$KJ" sweep "$AR" --gpus 1 -o "$T/o"
CUDA_VISIBLE_DEVICES=0,1,2,3 expect 2 "$KJ" sweep "$AR" --gpus 3 -o "$T/o"
grep -q "not on .*gpus axis (2,4,8)" "$T/err" || fail "off the axis: $(cat "$T/err")"
[ ! -e "$T/requests.log" ] || fail "a refused collective started work"

# one group of 4 ranks, the grid's gpus = 4 points only, every rank the same requests
cat >"$T/ar.yml" <<'Y'
{"kernel_name": "all_reduce", "columns_name": ['gpus', 'bytes', 'F_dur(us)', 'B_dur(us)'],
 "first_n_column": 2, "starts": [2, 8192], "steps": [2, 4], "ends": [4, 8388608],
 "operators": ['mul', 'mul'], "run": "get_all"}
Y
export STANDIN_RANKS_LOG=$T/ranks.log
CUDA_VISIBLE_DEVICES=0,1,2,3 expect 0 "$KJ" sweep "$T/ar.yml" --gpus 4 --gpu-name H --energy -o "$T/o" 2>/dev/null
csv=$T/o/sampling_data/H_all_reduce_fp16_1_1.csv
[ "$(head -1 "$csv")" = "gpus,bytes,F_dur(us),B_dur(us),F_energy(uJ),F_energy_unc(uJ),B_energy(uJ),B_energy_unc(uJ),status,algbw(GB/s),busbw(GB/s)" ] ||
	fail "header: $(head -1 "$csv")"
[ "$(grep -c '^4,' "$csv")" = 6 ] && ! grep -q '^2,' "$csv" || fail "rows: $(cat "$csv")"
# nccl-tests' definitions: algbw = bytes / time, busbw = algbw x 2(n-1)/n for all_reduce
python3 - "$csv" <<'P' || fail "algbw/busbw"
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    alg = int(r["bytes"]) / float(r["F_dur(us)"]) / 1e3
    assert abs(float(r["algbw(GB/s)"]) / alg - 1) < 1e-4, r
    assert abs(float(r["busbw(GB/s)"]) / (alg * 2 * 3 / 4) - 1) < 1e-4, r
P
[ "$(grep -c . "$T/ranks.log")" = 4 ] || fail "ranks started: $(cat "$T/ranks.log")"
for r in 0 1 2 3; do
	grep -q "^rank=$r ranks=4 device=$r devices=0,1,2,3 id=set nvls=0 symm=1 nvshmem=1$" "$T/ranks.log" ||
		fail "rank $r's environment: $(cat "$T/ranks.log")"
done
# the warm-up and the six shapes, to every rank: 4 x 7 requests, all of gpus 4
[ "$(grep -c . "$T/requests.log")" = 28 ] && [ "$(grep -vc ' 4,' "$T/requests.log")" = 0 ] ||
	fail "requests: $(sort "$T/requests.log" | uniq -c)"
ls /tmp | grep -q "^kjoule-nccl-" && ls -d "${TMPDIR:-/tmp}"/kjoule-nccl-* | while read -r d; do
	[ "$(stat -c %Y "$d")" -lt "$(date -d '-1 min' +%s)" ] || fail "id folder left: $d"; done
# a user's own setting of the multicast variables is kept
rm -f "$T/ranks.log"
NCCL_NVLS_ENABLE=1 CUDA_VISIBLE_DEVICES=0,1,2,3 expect 0 "$KJ" sweep "$T/ar.yml" --gpus 2 --gpu-name H2 --energy -o "$T/o" 2>/dev/null
grep -q "nvls=1 symm=1" "$T/ranks.log" || fail "user's NCCL_NVLS_ENABLE: $(cat "$T/ranks.log")"

# fit and predict the collective's rows (gpus 2 and 4 in one CSV)
cat "$T/o/sampling_data/H2_all_reduce_fp16_1_1.csv" | tail -n +2 >>"$csv"
expect 0 "$KJ" fit "$T/o/sampling_data" -o "$T/models" --gpu H
grep -q "H_all_reduce_fp16_fwd_time" "$T/models/models.json" || fail "no all_reduce model"
expect 0 "$KJ" predict --gpu H --op all_reduce --precision fp16 --prop fwd --shape 4,1048576 --models "$T/models" --json
python3 - "$T/out" <<'P' || fail "predicted all_reduce: $(cat "$T/out")"
import json, sys
j = json.load(open(sys.argv[1]))
want = 3 + 4 * 1048576 / 1000.0          # the stand-in's time at this shape
assert abs(j["time_us"] / want - 1) < 0.15, j
assert j["in_grid"] is True, j
P
expect 2 "$KJ" predict --gpu H --op all_reduce --precision fp16 --prop fwd --shape 4 --models "$T/models"
# the collective's own model (the stand-in is an alpha-beta curve: 3 us + gpus x bytes / 1000):
# log-log between sizes, the latency floor below them, the last segment's bandwidth above them
# (outside the grid, said as predict says it), an unmeasured GPU count refused naming the measured
grep -q '"kind": "collective_loglog"' "$T/models/models.json" || fail "no collective model"
for s in 4,2097152 4,4096 4,33554432 2,4194304; do
	expect 0 "$KJ" predict --gpu H --op all_reduce --precision fp16 --prop fwd --shape $s --models "$T/models" --json
	cp "$T/out" "$T/p_$s.json"
done
python3 - "$T" <<'P' || fail "collective model: $(cat "$T"/p_*.json | head -c 900)"
import json, sys
p = lambda s: json.load(open(f"{sys.argv[1]}/p_{s}.json"))
ab = lambda g, b: 3 + g * b / 1000.0
j = p("4,2097152")                         # between 524288 and 8388608
assert abs(j["time_us"] / ab(4, 2097152) - 1) < 0.01 and j["in_grid"] is True, j
assert abs(j["energy_uj"] / (50 * ab(4, 2097152)) - 1) < 0.01, j
j = p("4,4096")                            # under the least size: its figure, outside the grid
assert abs(j["time_us"] - ab(4, 8192)) < 1e-3 and j["in_grid"] is False, j
j = p("4,33554432")                        # above: the last segment carried on, outside the grid
assert abs(j["time_us"] / ab(4, 33554432) - 1) < 1e-4 and j["in_grid"] is False, j
assert j["time_outside_grid"] == [{"column": "bytes", "value": 33554432, "min": 8192, "max": 8388608}], j
assert j["time_mape_pct"] is None, j       # no held-out error outside the grid
j = p("2,4194304")                         # gpus 2's own points
assert abs(j["time_us"] / ab(2, 4194304) - 1) < 0.01 and j["in_grid"] is True, j
P
expect 0 "$KJ" predict --gpu H --op all_reduce --precision fp16 --prop fwd --shape 4,33554432 --models "$T/models"
has "outside the measured grid: bytes=33554432 is 4x the largest measured 8388608"
has "error unknown outside the measured grid"
expect 1 "$KJ" predict --gpu H --op all_reduce --precision fp16 --prop fwd --shape 3,1048576 --models "$T/models"
grep -q "gpus=3 was not measured (measured: gpus=2, 4).*sweep with --gpus 3" "$T/err" || fail "gpus 3: $(cat "$T/err")"
[ ! -s "$T/out" ] || fail "a refused count printed a prediction: $(cat "$T/out")"

# predict --model: tp and dp bring their all-reduces
printf 'layers: 8\nhidden: 4096\nheads: 32\nseq: 128\nbatch: 2\ntp: 4\nmode: inference\n' >"$T/tp.yml"
expect 0 "$KJ" predict --model "$T/tp.yml" --gpu H --models "$T/models" --json
python3 - "$T/out" <<'P' || fail "tp terms: $(head -c 600 "$T/out")"
import json, sys
j = json.load(open(sys.argv[1]))
ar = [o for o in j["operators"] if o["op"] == "all_reduce"]
assert len(ar) == 1 and ar[0]["count"] == 16 and ar[0]["shape"] == "4,%d" % (2 * 128 * 4096 * 2), ar
assert ar[0]["tier"] == "communication", ar
lin = [o for o in j["operators"] if o["op"] == "linear1"][0]
assert lin["shape"].startswith("4,"), lin                # tp is the operators' mp
P
printf 'layers: 12\nhidden: 768\nheads: 12\nseq: 512\nbatch: 4\ndp: 2\nprecision: bf16\n' >"$T/dp.yml"
expect 0 "$KJ" predict --model "$T/dp.yml" --gpu H --models "$T/models" --json
python3 - "$T/out" <<'P' || fail "dp terms: $(head -c 600 "$T/out")"
import json, sys
j = json.load(open(sys.argv[1]))
ar = [(o["count"], o["shape"]) for o in j["operators"] if o["op"] == "all_reduce"]
d, L, V = 768, 12, 50304
params = L * (12 * d * d + 7 * d + 2 * d + 4 * d) + 2 * d + V * d
g = params * 2
assert ar == [(g // (25 << 20), "2,%d" % (25 << 20)), (1, "2,%d" % (g - g // (25 << 20) * (25 << 20)))], (ar, g)
P
cp "$T/out" "$T/dp.json"
# a bf16 model's all-reduces take the collective's model fitted at fp16 (its shape counts bytes)
expect 0 "$KJ" predict --gpu H --op all_reduce --precision fp16 --prop fwd --shape 2,$((25 << 20)) --models "$T/models" --json
python3 - "$T/dp.json" "$T/out" <<'P' || fail "dp all-reduce at bf16: $(head -c 600 "$T/dp.json")"
import json, sys
j, one = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
ar = [o for o in j["operators"] if o["op"] == "all_reduce"]
assert all(o["fwd_us"] is not None and o["fwd_uj"] is not None for o in ar), ar
assert abs(ar[0]["fwd_us"] - one["time_us"]) <= 1e-6 * one["time_us"], (ar[0], one)
assert "all_reduce" not in (j.get("missing_models") or ""), j.get("missing_models")
P
# strict: tp against mp, dp in inference, zero, words
printf 'layers: 2\nhidden: 64\nheads: 4\nseq: 8\nbatch: 1\nmp: 2\ntp: 4\n' >"$T/b1.yml"
expect 1 "$KJ" predict --model "$T/b1.yml" --gpu H --models "$T/models"
grep -q "key 'tp': tp 4 and mp 2 differ" "$T/err" || fail "tp vs mp: $(cat "$T/err")"
printf 'layers: 2\nhidden: 64\nheads: 4\nseq: 8\nbatch: 1\ndp: 2\nmode: inference\n' >"$T/b2.yml"
expect 1 "$KJ" predict --model "$T/b2.yml" --gpu H --models "$T/models"
grep -q "key 'dp': dp 2 with mode inference" "$T/err" || fail "dp inference: $(cat "$T/err")"
for bad in "dp: 0" "tp: two" "dp: -2" "tp: 1.5"; do
	printf 'layers: 2\nhidden: 64\nheads: 4\nseq: 8\nbatch: 1\n%s\n' "$bad" >"$T/b3.yml"
	expect 1 "$KJ" predict --model "$T/b3.yml" --gpu H --models "$T/models"
	grep -q "b3.yml:6: key '${bad%%:*}': .* is not a positive integer" "$T/err" || fail "$bad: $(cat "$T/err")"
done
printf 'layers: 2\nhidden: 64\nheads: 4\nseq: 8\nbatch: 1\ntp: 3\n' >"$T/b4.yml"
expect 1 "$KJ" predict --model "$T/b4.yml" --gpu H --models "$T/models"
grep -q "mp must divide heads" "$T/err" || fail "tp 3 of 4 heads: $(cat "$T/err")"
exit 0
