#!/usr/bin/env bash
# On a GPU machine with several GPUs: the energy fidelity bench for the programs named, on each GPU
# of EF_GPUS (default "0 1") at once (each program and its replays on one GPU), so each program's
# error is measured on cards of the same kind. Results: $OUT/energy_fidelity_${EF_TAG}_gpuN.json.
#   EF_TAG=a bash scripts/gpu/energy_two_cards.sh PROGRAM ...
#   EF_GPUS="2 3" EF_TAG=b bash scripts/gpu/energy_two_cards.sh PROGRAM ...   (a second pair at once)
set -uo pipefail
cd "$(dirname "$0")/../.."
tag=${EF_TAG:-two}
gpus=${EF_GPUS:-0 1}
first=${gpus%% *}
nvidia-smi --query-gpu=index,name,serial,power.draw,temperature.gpu,clocks.sm --format=csv
pids=()
for g in $gpus; do
	extra=
	# EF_ENV1="NAME=VALUE ...": extra environment for the second GPU of the list only (a study of one setting)
	[ "$g" != "$first" ] && extra=${EF_ENV1:-}
	# its table stays here (printed below; the result file has its figures): two files a GPU come back
	CUDA_VISIBLE_DEVICES=$g EF_TAG=${tag}_gpu$g env $extra bash bench/energy_fidelity/device_run.sh "$@" \
		> "/tmp/ef_${tag}_gpu$g.txt" 2>&1 &
	pids+=($!)
done
i=0 rcs=
for g in $gpus; do
	wait "${pids[$i]}"; rcs="$rcs gpu$g=$?"; i=$((i + 1))
done
for g in $gpus; do echo "== GPU $g"; tail -n 14 "/tmp/ef_${tag}_gpu$g.txt"; done
echo "rc$rcs"
