#!/usr/bin/env bash
# kjoule-sweep-worker's line protocol on a GPU: one answer per request line, in order; bad lines and
# unknown operators answered with a message, out of memory answered oom, and the worker still
# serving correct answers afterwards. usage: run_sweep_protocol_test.sh WORKER
set -u
w=$1
nvidia-smi -L > /dev/null 2>&1 || { echo "no GPU: skipped"; exit 77; }
"$w" --list | grep -q '^linear1 mp,b,l,dim$' || { echo "FAIL: --list lacks linear1"; exit 1; }
in=$(mktemp)
out=$(mktemp)
trap 'rm -f "$in" "$out"' EXIT
cat > "$in" <<'REQ'
linear1 fp16 1,2,128,256 0 1
linear1 fp16 1,2,128 0 0
no_such_op fp16 1,2 0 0
linear1 fp8 1,2,128,256 0 0
linear1 fp16 1,2,x,256 0 0
linear3 bf16 1,64,65536,65536 0 0
layernorm bf16 2,128,1024 0 1
linear1 fp16 1,2,128,256 1 0
REQ
timeout 200 "$w" < "$in" > "$out"
rc=$?
cat "$out"
fail=0
expect() { # line-number regex
	line=$(sed -n "$1p" "$out")
	if ! grep -Eq -- "$2" <<< "$line"; then
		echo "FAIL: answer $1 '$line' does not match '$2'"
		fail=1
	fi
}
[ "$rc" = 0 ] || { echo "FAIL: worker exit $rc"; fail=1; }
[ "$(wc -l < "$out")" = 8 ] || { echo "FAIL: $(wc -l < "$out") answers for 8 requests"; fail=1; }
num='[0-9][0-9.e+-]*'
expect 1 "^KJ_SWEEP status=ok f_us=$num b_us=$num f_uj=- .* err_f=$num err_b=$num "
expect 2 '^KJ_SWEEP status=error .*msg="linear1 takes 4 shape values \(mp,b,l,dim\), got 3"'
expect 3 '^KJ_SWEEP status=unsupported .*msg=".*no_such_op.*not implemented'
expect 4 '^KJ_SWEEP status=error .*msg=".*precision'
expect 5 '^KJ_SWEEP status=error .*msg=".*value 3'
expect 6 '^KJ_SWEEP status=oom .*msg="linear3 bf16 1,64,65536,65536: cudaMalloc'
expect 7 "^KJ_SWEEP status=ok f_us=$num b_us=$num .*err_f=$num err_b=$num "
# energy asked: measured (f_uj a number) where NVML works, else '-' with the worker still answering
expect 8 "^KJ_SWEEP status=ok f_us=$num b_us=$num f_uj=(-|$num) "
# the CUDA-core attention path (what fp32 and other head sizes take) checked in fp16 too
ans=$(echo "flash_atten fp16 1,2,4,160,256 0 1" | KJ_SWEEP_ATTN=cuda-cores timeout 100 "$w")
echo "$ans"
grep -Eq "^KJ_SWEEP status=ok .*err_f=$num err_b=$num .*cuda cores" <<< "$ans" || { echo "FAIL: cuda-core attention"; fail=1; }
# fp16/bf16 attention: cuDNN's fused attention by default (or, in a worker built without cuDNN, the
# reason in msg and kjoule's kernels), checked against the reference; KJ_SWEEP_ATTN=flash2 skips it
ans=$(echo "flash_atten bf16 1,2,4,200,256 0 1" | timeout 100 "$w")
echo "$ans"
if grep -q "built without cuDNN" <<< "$ans"; then
	grep -Eq "^KJ_SWEEP status=ok .*f_algo=kjoule-flash2 b_algo=kjoule-flash2" <<< "$ans" ||
		{ echo "FAIL: attention without cuDNN"; fail=1; }
else
	grep -Eq "^KJ_SWEEP status=ok .*err_f=$num err_b=$num .*f_algo=cudnn-sdpa\.e[0-9]+ b_algo=cudnn-sdpa\.e[0-9]+ .*attention=fwd:cudnn-sdpa" <<< "$ans" ||
		{ echo "FAIL: cuDNN attention by default"; fail=1; }
fi
ans=$(echo "flash_atten bf16 1,2,4,200,256 0 1" | KJ_SWEEP_ATTN=flash2 timeout 100 "$w")
echo "$ans"
grep -Eq "^KJ_SWEEP status=ok .*err_f=$num err_b=$num .*f_algo=kjoule-flash2 b_algo=kjoule-flash2 .*attention=fwd:kjoule-flash2" <<< "$ans" ||
	{ echo "FAIL: KJ_SWEEP_ATTN=flash2"; fail=1; }
# KJ_SWEEP_TIMING=mixed: a GEMM timed between memsets answers a time of its own, near the default
# one (at most 20 % over: the mix's clock is at least the GEMM-only load's; at least half of it)
base=$(echo "linear1 bf16 1,8,1024,1024 0 0" | timeout 100 "$w")
mixed=$(echo "linear1 bf16 1,8,1024,1024 0 0" | KJ_SWEEP_TIMING=mixed timeout 100 "$w")
echo "$base"; echo "$mixed"
fus() { sed -n 's/.* f_us=\([0-9.e+-]*\) .*/\1/p' <<< "$1"; }
python3 -c "import sys; b, m = float(sys.argv[1]), float(sys.argv[2]); sys.exit(not (0.5 * b <= m <= 1.2 * b))" \
	"$(fus "$base")" "$(fus "$mixed")" || { echo "FAIL: KJ_SWEEP_TIMING=mixed ($(fus "$mixed") us against $(fus "$base"))"; fail=1; }
# energy with cold L2: a layernorm over 16 MB (it fits in L2 warm) answers its warm and cold energies, the cold one
# above the warm (its reads come from HBM), and f_uj their mean; KJ_SWEEP_ENERGY_CACHE=warm: the
# warm one alone. Where NVML cannot measure, the energies are '-' on both.
both=$(echo "layernorm bf16 8,1024,1024 1 0" | KJ_SWEEP_ENERGY_S=0.5 timeout 100 "$w")
warm=$(echo "layernorm bf16 8,1024,1024 1 0" | KJ_SWEEP_ENERGY_S=0.5 KJ_SWEEP_ENERGY_CACHE=warm timeout 100 "$w")
echo "$both"; echo "$warm"
key() { sed -n "s/.* $1=\([0-9.e+-]*\) .*/\1/p" <<< "$2"; }
if grep -q " f_uj=- " <<< "$both"; then
	echo "energy not measured here: cold-L2 check skipped"
else
	python3 -c "import sys; m, w, c = map(float, sys.argv[1:4]); sys.exit(not (w < c and abs(m - (w + c) / 2) <= 1e-3 * m))" \
		"$(key f_uj "$both")" "$(key f_uj_warm "$both")" "$(key f_uj_cold "$both")" ||
		{ echo "FAIL: cold-L2 energy (f_uj, warm, cold)"; fail=1; }
	grep -Eq " f_uj=$num .* f_uj_warm=$num f_uj_cold=- " <<< "$warm" || { echo "FAIL: KJ_SWEEP_ENERGY_CACHE=warm"; fail=1; }
fi
exit $fail
