#!/usr/bin/env bash
# On the GPU machine: the two calls of bench/predict_step/programs.py's protocol, so the operator
# sum and the programs' steps come from one card (run the second while the first's machine is
# still held: the machine goes back after ~30 s idle).
#   bash scripts/gpu/step_programs.sh sweeps     # ≈ 8-9 min: run.py --no-trace (13 operators, cold-L2
#                                               # energy, 0.3 s windows) -> $OUT/notrace_sweeps.json
#   bash scripts/gpu/step_programs.sh programs   # ≈ 1-1.5 min a program, each untraced and traced
#                                               # (run.py --no-sweep) -> $OUT/<program>.json; PROGRAMS
#                                               # picks them (default: eager_1 eager_graph compile_1
#                                               # compile_graph; eager_2 ... any NAME_N repeats one;
#                                               # *_graph: the whole step in one CUDA graph;
#                                               # STEPS measured steps, 100 by default: the energy
#                                               # mean to about +-7 %, where 20 gave +-20 %)
# At most 4 files come back to $OUT per call (the device tool carries a few files only). Then, on
# the CPU: python3 bench/predict_step/programs.py --sweeps notrace_sweeps.json --traced eager_1.json
#   --traced eager_2.json --traced compile_1.json -o bench/results/predict_step_programs.json
# usage (device): source scripts/device-env.sh; bash scripts/gpu/step_programs.sh sweeps|programs [RUN.PY ARGS...]
set -u
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
what=${1:-}
shift || true
case "$what" in
sweeps)
	KJ_SWEEP_ENERGY_S=${KJ_SWEEP_ENERGY_S:-0.3} OUT=/tmp/sp_sweeps BUDGET=${BUDGET:-550} \
		bash scripts/gpu/train_step.sh --batch 8 --no-trace "$@" >/tmp/sp_sweeps.txt 2>&1
	cp /tmp/sp_sweeps/predict_step.json "$OUT/notrace_sweeps.json" 2>/dev/null
	cp /tmp/sp_sweeps/predict_step.log "$OUT/notrace_sweeps.log" 2>/dev/null
	grep -E "^exit|^skipped|^step:" /tmp/sp_sweeps.txt
	;;
programs)
	# each: the untraced program (~30-60 s with compilation), the traced one and compare (~60 s)
	for p in ${PROGRAMS:-eager_1 eager_graph compile_1 compile_graph}; do
		extra="--no-sweep"
		case $p in compile_*) extra="$extra --compile" ;; esac
		case $p in *_graph*) extra="$extra --cuda-graph" ;; esac
		OUT=/tmp/sp_$p BUDGET=${BUDGET:-180} STEPS=${STEPS:-100} bash scripts/gpu/train_step.sh --batch 8 $extra "$@" >/tmp/sp_$p.txt 2>&1
		cp /tmp/sp_$p/predict_step.json "$OUT/$p.json" 2>/dev/null
		echo "$p: $(grep -E '^step:|^untraced:' /tmp/sp_$p.txt | tr '\n' ' ')"
	done
	;;
*)
	echo "usage: bash scripts/gpu/step_programs.sh sweeps|programs [RUN.PY ARGS...]" >&2
	exit 2
	;;
esac
