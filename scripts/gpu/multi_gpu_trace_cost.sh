#!/usr/bin/env bash
# On a machine with 2 GPUs: kjoule's tracing cost per rank (bench/multi_gpu/trace_cost.py) on the
# tensor-parallel LLaMA decode (examples/llama7b_tp.py, 8 layers, 16 decode steps x 4 rounds; its
# ms a decode step) and the DDP GPT-2 step (examples/ddp_train.py; its ms a step), whole torchrun
# jobs untraced and under kjoule run (defaults, --no-params, CUPTI alone) alternating. Files in $OUT:
# trace_cost_tp.json, trace_cost_ddp.json and their logs.
#   env: MGC_S (seconds of rounds a program, 200), MGC_PROGRAMS ("tp ddp")
# usage (device): source scripts/device-env.sh; bash scripts/gpu/multi_gpu_trace_cost.sh
set -u
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
kj=$KJ_BUILD/kjoule
s=${MGC_S:-200}
tmp=$(mktemp -d)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
tr=(torchrun --standalone --nproc-per-node 2)
for p in ${MGC_PROGRAMS:-tp ddp}; do
	case $p in
	tp) metric=decode_ms_per_step args=(examples/llama7b_tp.py --layers 8 --prompt 128 --decode-steps 16 --repeat 4 --timing) ;;
	ddp) metric=step_ms args=(examples/ddp_train.py --steps 10 --warmup 3 --batch 16 --timing) ;;
	*) echo "unknown program $p"; continue ;;
	esac
	timeout $((s + 240)) python3 bench/multi_gpu/trace_cost.py --kjoule "$kj" --name "$p" --metric "$metric" --seconds "$s" \
		--timeout 200 --tmp "$tmp" -o "$OUT/trace_cost_$p.json" -- "${tr[@]}" "${args[@]}" >"$OUT/trace_cost_$p.log" 2>&1
	echo "== $p (rc $?)"; tail -4 "$OUT/trace_cost_$p.log"
done
