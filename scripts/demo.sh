#!/usr/bin/env bash
# The main job. With a GPU: trace the BLOOM-560M example, replay its kernels, compare.
# Without one: the analysis of the real example run shipped in the repo.
set -euo pipefail
kj=${1:-build/kjoule}
run=${2:-examples/runs/bloom560m.kjdb}
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && [ -z "${KJ_DEMO_OFFLINE:-}" ]; then
	out=$(mktemp -d)/bloom560m.kjdb
	"$kj" run -o "$out" -- python3 examples/bloom560m.py --iters 20 --warmup 5
	"$kj" replay "$out" --energy
	run=$out
fi
echo "== kjoule info $run"; "$kj" info "$run"
echo; echo "== kjoule kernels $run --top 15"; "$kj" kernels "$run" --top 15
echo; echo "== kjoule compare $run"; "$kj" compare "$run"
