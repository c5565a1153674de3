#!/usr/bin/env bash
# On the GPU machine: a whole training step predicted from its operators against the same step
# measured (bench/predict_step/run.py): examples/gpt_train.py (24 layers x 1024, 16 heads, seq 1024,
# batch 8 by default: GPU-bound) traced under kjoule run, kjoule compare per step, one small sweep per operator
# kjoule predict --model needs (--energy), kjoule fit, kjoule predict --model --json.
# Files in $OUT (at most 5): predict_step.json (the result; copy it to bench/results/), predict_step.log,
# trace.log (gpt_train.py's and kjoule run's output), compare.txt (kjoule compare of the traced
# steps), kernels.txt (the run's kernels by time). The bench's short table is printed last.
# usage (device): source scripts/device-env.sh; bash scripts/gpu/train_step.sh [RUN.PY ARGS...]
#   env: PRECISION (bf16), STEPS (20), WARMUP (3), BUDGET (500 s for the bench; the whole script
#   ends within BUDGET + 60 s), KJ_SWEEP_ENERGY_S (0.5), KJ_GIT_COMMIT (recorded in the result when
#   the tree has no .git); extra arguments go to run.py (--layers, --hidden, --heads, --seq,
#   --batch, --norm rms).
set -u
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
kj=$KJ_BUILD/kjoule
PRECISION=${PRECISION:-bf16} STEPS=${STEPS:-20} WARMUP=${WARMUP:-3} BUDGET=${BUDGET:-500}
worker=""
for w in "$KJ_BUILD/src/sweep/worker/kjoule-sweep-worker" "$KJ_BUILD/kjoule-sweep-worker"; do
	[ -x "$w" ] && worker=$w && break
done
if [ -z "$worker" ]; then
	echo "kjoule-sweep-worker is not built in $KJ_BUILD: nothing to measure"
	exit 1
fi
export KJ_SWEEP_WORKER=$worker KJ_SWEEP_ENERGY_S=${KJ_SWEEP_ENERGY_S:-0.5}
work=/tmp/kjstep
rm -rf "$work"; mkdir -p "$work"

echo "== $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1);" \
	"$(timeout 60 python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)' 2>&1 | tail -1)"
echo "== bench/predict_step: trace, compare, sweeps, fit, predict ($PRECISION, $STEPS steps after $WARMUP)"
timeout $((BUDGET + 30)) python3 bench/predict_step/run.py --kjoule "$kj" --out-dir "$work" \
	--precision "$PRECISION" --steps "$STEPS" --warmup "$WARMUP" --budget-s "$BUDGET" "$@" \
	-o "$OUT/predict_step.json" >"$OUT/predict_step.log" 2>&1
echo "exit $?"
cp "$work/trace.log" "$OUT/trace.log" 2>/dev/null
if [ -s "$work/step.kjdb" ]; then
	timeout 60 "$kj" compare "$work/step.kjdb" --skip "$WARMUP" --top 25 >"$OUT/compare.txt" 2>&1
	timeout 30 "$kj" kernels "$work/step.kjdb" --top 60 --wide >"$OUT/kernels.txt" 2>&1
	echo "== the traced step (kjoule compare; tiers and top kernels in compare.txt)"
	sed -n '/^Time per iteration/,/^  kernels /p' "$OUT/compare.txt"
fi
if grep -q "^step: predicted" "$OUT/predict_step.log"; then
	grep "^skipped" "$OUT/predict_step.log"
	echo "== predicted (sum of operators) against measured, per step"
	sed -n '/^operator /,$p' "$OUT/predict_step.log" | grep -v "^skipped"
else
	echo "== the bench did not finish: the end of predict_step.log"
	tail -20 "$OUT/predict_step.log"
fi
