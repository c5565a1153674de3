#!/usr/bin/env bash
# On a machine with four GPUs, at once: the energy fidelity bench for the programs named on GPUs 0
# and 1 (scripts/gpu/energy_two_cards.sh), then the two-GPU tests there; the single-GPU tests on
# GPU 2 (FC_TESTS first, a ctest -R pattern); the compiled decode loop's capture pairs
# (scripts/gpu/capture_hostbound.sh) on GPU 3, written into $OUT as they go. Files back: the energy
# results and archives (4), the capture pairs' result and log, the GPU tests' logs (2).
#   usage: FOUR_S=580 bash scripts/gpu/four_cards.sh PROGRAM ...
# The energy figures made here are a check, not the bench's result: with the host's other GPUs busy
# the replays ran 2.5-4 s a kernel instead of 1-2 s, covered less of the kernel time, and the
# measured loops' uncertainty rose over 1 % (docs/replay.md); run the bench alone for its result.
set -u
cd "$(dirname "$0")/../.."
source scripts/device-env.sh
source scripts/gpu/lib.sh
multicast_off
total=${FOUR_S:-580}
tests=${FC_TESTS:-gpu_signal|gpu_replay}
CHB_GPUS=3 CHB_ONLY=decode CHB_S=${CHB_S:-$((total - 150))} bash scripts/gpu/capture_hostbound.sh > /tmp/chb.txt 2>&1 &
chb=$!
(
	cd "$KJ_BUILD" || exit 1
	export CUDA_VISIBLE_DEVICES=2
	ctest -L gpu -R "$tests" --timeout 200 --output-on-failure
	left=$((total - 15 - SECONDS))
	[ $left -gt 30 ] && timeout $left ctest -L gpu -E "$tests|multi" --timeout 150 --output-on-failure
) > "$OUT/gpu_tests_single.log" 2>&1 &
single=$!
EF_GPUS="0 1" EF_TAG=${EF_TAG:-four} EF_TIMEOUT=${EF_TIMEOUT:-$((total - 150))} bash scripts/gpu/energy_two_cards.sh "$@" > /tmp/ef.txt 2>&1
echo "== energy (GPUs 0, 1) done at ${SECONDS} s"; tail -n 32 /tmp/ef.txt
left=$((total - 10 - SECONDS))
[ $left -gt 30 ] && (cd "$KJ_BUILD" && CUDA_VISIBLE_DEVICES=0,1 timeout $left ctest -L gpu -R multi --timeout 150 \
	--output-on-failure) > "$OUT/gpu_tests_multi.log" 2>&1
wait $single
echo "== GPU tests (GPU 2: single-GPU; GPUs 0, 1: multi) done at ${SECONDS} s"
grep -hE "Test +#|tests passed|tests failed" "$OUT"/gpu_tests_*.log | sed 's/  */ /g' | tail -24
wait $chb
echo "== capture pairs (GPU 3)"; tail -n 10 /tmp/chb.txt
