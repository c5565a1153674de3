#!/usr/bin/env bash
# On the GPU machine: the fast-ops kernels (mma.sync flash attention, one-pass layer/RMS norm
# backward, vector-atomic embedding backward) checked and timed. The worker's selftest, then each
# operator at the realistic shape (b=4, l=2048, dim=4096; attention with head dims 128 and 64)
# with the correctness check on, energy off: f_us, b_us and the answer's flops/bytes, with the
# fraction of the roofline from the two ceilings. For comparison: the previous attention kernels
# (KJ_SWEEP_ATTN=wmma) at head dim 128, and the other forward tiling (KJ_SWEEP_FA2_MT=2 at head dim
# 128, =1 at 64); if MT=2 wins at 128, make it the default in kj_gpu_fa2_fwd.cu (fa2_fwd).
# usage (device, repo root, after building): bash scripts/gpu/fastops.sh [WORKER]
set -u
here=$(cd "$(dirname "$0")" && pwd)
source "$here/worker_prelude.sh" fastops "FAIL|flash|norm|embedding|selftest:" "${1:-}"
reqs="flash_atten bf16 1,4,32,2048,4096
flash_atten fp16 1,4,32,2048,4096
flash_atten bf16 1,4,64,2048,4096
flash_atten fp16 1,4,64,2048,4096
flash_atten bf16 1,2,16,1000,2048
layernorm bf16 4,2048,4096
RMSlayernorm bf16 4,2048,4096
layernorm fp16 4,2048,8192
layernorm fp32 4,2048,4096
RMSlayernorm fp32 4,2048,8192
layernorm bf16 16,512,1024
embedding bf16 1,4,2048,4096"
: > "$OUT/fastops_raw.txt"
run() { # env, op prec shape
	local ans
	ans=$(echo "$2 0 1" | env $1 timeout 150 "$w" 2>>"$OUT/fastops_worker.err")
	[ -n "$ans" ] || ans="KJ_SWEEP status=error msg=\"no answer (timeout or crash)\""
	printf '%s\t%s\t%s\n' "$1" "$2" "$ans" >> "$OUT/fastops_raw.txt"
}
while read -r line; do run "KJ_NONE=1" "$line"; done <<< "$reqs"
run "KJ_SWEEP_ATTN=wmma" "flash_atten bf16 1,4,32,2048,4096"
run "KJ_SWEEP_FA2_MT=2" "flash_atten bf16 1,4,32,2048,4096"   # d=128: 2 row tiles a warp, 32-key tiles
run "KJ_SWEEP_FA2_MT=2" "flash_atten fp16 1,4,32,2048,4096"
run "KJ_SWEEP_FA2_MT=1" "flash_atten bf16 1,4,64,2048,4096"   # d=64: 1 row tile a warp
python3 "$here/roofline_table.py" "$OUT/fastops_raw.txt" "$ceil"
