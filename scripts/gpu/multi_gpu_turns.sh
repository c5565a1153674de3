#!/usr/bin/env bash
# On a machine with 2 GPUs: kjoule's tracing cost per rank with many rounds. Whole torchrun jobs
# stay alive side by side, one a contestant (untraced; kjoule run defaults; --no-params; CUPTI's
# records alone), and take turns (bench/trace_overhead/turns.py with examples/llama7b_tp.py
# --serve, examples/rank_turns.py's protocol): each turn runs a block of decode steps in every
# rank, each step synchronised and timed; rank 0 answers with the slowest rank's ms a step and
# every rank's own. A job waiting for its turn waits on a gloo (CPU) channel, no kernel spinning.
# Result in $OUT/multi_gpu_turns_tp.json (and _tp_graph with --cuda-graph) and its log; the
# contestants' logs in /tmp/multi_gpu_turns_logs_P.
#   env: MGT_S (seconds of rounds a program, 150), MGT_PROGRAMS ("tp tp_graph"), MGT_BLOCK (steps a
#   turn, 16), MGT_LAYERS (8)
# usage (device): source scripts/device-env.sh; bash scripts/gpu/multi_gpu_turns.sh
set -u
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
kj=$KJ_BUILD/kjoule
s=${MGT_S:-150}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
for p in ${MGT_PROGRAMS:-tp tp_graph}; do
	extra=""
	[ "$p" = tp_graph ] && extra="--cuda-graph"
	cmd="torchrun --standalone --nproc-per-node 2 examples/llama7b_tp.py --layers ${MGT_LAYERS:-8} --decode-steps 16 --serve $extra"
	timeout $((s + 120)) python3 bench/trace_overhead/turns.py --kjoule "$kj" --worker-cmd "$cmd" --workload "$p" \
		--configs kjoule_default kjoule_no_params cupti_activity_only --block "${MGT_BLOCK:-16}" --rounds 100000 \
		--seconds "$s" --logs "/tmp/multi_gpu_turns_logs_$p" -o "$OUT/multi_gpu_turns_$p.json" >"$OUT/multi_gpu_turns_$p.log" 2>&1
	echo "== $p (rc $?)"; tail -6 "$OUT/multi_gpu_turns_$p.log"
done
