#!/usr/bin/env bash
# On a GPU machine with two GPUs: the energy fidelity bench for the programs named, on GPU 0 and
# GPU 1 at once (each program and its replays on one GPU), so each program's error is measured on
# two cards of the same kind. Results: $OUT/energy_fidelity_${EF_TAG}_gpu0.json and _gpu1.json.
#   EF_TAG=a bash scripts/gpu/energy_two_cards.sh PROGRAM ...
set -uo pipefail
cd "$(dirname "$0")/../.."
tag=${EF_TAG:-two}
nvidia-smi --query-gpu=index,name,serial,power.draw,temperature.gpu,clocks.sm --format=csv
CUDA_VISIBLE_DEVICES=0 EF_TAG=${tag}_gpu0 bash bench/energy_fidelity/device_run.sh "$@" > "${OUT:-/tmp}/ef_${tag}_gpu0.txt" 2>&1 &
p0=$!
# EF_ENV1="NAME=VALUE ...": extra environment for GPU 1's side only (a study of one setting)
CUDA_VISIBLE_DEVICES=1 EF_TAG=${tag}_gpu1 env ${EF_ENV1:-} bash bench/energy_fidelity/device_run.sh "$@" > "${OUT:-/tmp}/ef_${tag}_gpu1.txt" 2>&1 &
p1=$!
wait $p0; r0=$?
wait $p1; r1=$?
for g in 0 1; do echo "== GPU $g"; tail -n 14 "${OUT:-/tmp}/ef_${tag}_gpu$g.txt"; done
echo "rc gpu0=$r0 gpu1=$r1"
