#!/usr/bin/env bash
# On a machine with four GPUs, at once: the energy fidelity bench for the programs named on GPUs 0
# and 1 (scripts/gpu/energy_two_cards.sh), then the GPU tests FC_TESTS (a ctest -R pattern) and,
# with the time left, the other single-GPU tests on GPU 0; the host-bound capture pairs
# (scripts/gpu/capture_hostbound.sh) on GPUs 2 and 3. Eight files come back at most: the
# energy results and archives (4), the capture pairs' two results and one archive of their logs,
# the GPU tests' log.   usage: FOUR_S=580 bash scripts/gpu/four_cards.sh PROGRAM ...
set -u
cd "$(dirname "$0")/../.."
source scripts/device-env.sh
source scripts/gpu/lib.sh
multicast_off
total=${FOUR_S:-580}
CHB_GPUS="2 3" CHB_S=${CHB_S:-$((total - 150))} OUT=/tmp/chb bash scripts/gpu/capture_hostbound.sh > /tmp/chb.txt 2>&1 &
chb=$!
EF_GPUS="0 1" EF_TAG=${EF_TAG:-four} EF_TIMEOUT=${EF_TIMEOUT:-480} bash scripts/gpu/energy_two_cards.sh "$@" > /tmp/ef.txt 2>&1
(
	cd "$KJ_BUILD" || exit 1
	export CUDA_VISIBLE_DEVICES=0
	left=$((total - 10 - SECONDS))
	[ $left -gt 20 ] && timeout $left ctest -L gpu -R "${FC_TESTS:-gpu_signal|gpu_replay}" --timeout 150 --output-on-failure
	left=$((total - 10 - SECONDS))
	[ $left -gt 30 ] && timeout $left ctest -L gpu -E "${FC_TESTS:-gpu_signal|gpu_replay}|multi" --timeout 120 --output-on-failure
) > "$OUT/gpu_tests.log" 2>&1
wait $chb
cp /tmp/chb/capture_pairs_*.json "$OUT/" 2>/dev/null
tar -C /tmp -cJf "$OUT/chb_logs.tar.xz" chb.txt chb 2>/dev/null
echo "== energy (GPUs 0, 1)"; tail -n 32 /tmp/ef.txt
echo "== capture pairs (GPUs 2, 3)"; tail -n 16 /tmp/chb.txt
echo "== GPU tests (GPU 0)"; grep -hE "Test +#|tests passed|tests failed" "$OUT/gpu_tests.log" | sed 's/  */ /g' | tail -24
