#!/usr/bin/env bash
# On a machine with two GPUs, at once: on GPU 0 the GPU tests RD_TESTS (a ctest -R pattern); on
# GPU 1 where a replay's time goes, kernel by kernel: the cuDNN ResNet traced with its saved
# buffers (--snapshot=8192, as bench/energy_fidelity runs it), then `kjoule replay --energy
# --budget 110` with KJ_REPLAY_DEBUG=1 (the worker's setup and each kernel's map+fill, module,
# time and energy seconds). Files in $OUT: gpu_tests.log, replay_diag.log; a summary last.
set -u
cd "$(dirname "$0")/../.."
source scripts/device-env.sh
source scripts/gpu/lib.sh
multicast_off
total=${RD_S:-400}
(cd "$KJ_BUILD" && CUDA_VISIBLE_DEVICES=0 timeout $((total - 20)) ctest -L gpu -R "${RD_TESTS:-gpu_signal}" \
	--timeout 300 --output-on-failure) > "$OUT/gpu_tests.log" 2>&1 &
tests=$!
(
	export CUDA_VISIBLE_DEVICES=1
	t0=$SECONDS
	"$kj" run --snapshot=8192 -o /tmp/rd.kjdb -- python3 examples/resnet_cudnn.py --iters 320 > /tmp/rd_run.log 2>&1
	echo "run rc $? in $((SECONDS - t0)) s; $(du -h /tmp/rd.kjdb | cut -f1)"
	t0=$SECONDS
	KJ_REPLAY_DEBUG=1 timeout $((total - 30 - SECONDS)) "$kj" replay /tmp/rd.kjdb --energy --budget 110 2>&1
	echo "replay rc $? in $((SECONDS - t0)) s"
) > "$OUT/replay_diag.log" 2>&1
wait $tests
echo "== replay diagnosis (GPU 1)"
grep -E "^run rc|^replay rc|setup|map\+fill" "$OUT/replay_diag.log" | sed 's/^\[ *[0-9.]*\] //' | head -30
echo "== GPU tests (GPU 0)"
grep -hE "Test +#|tests passed|tests failed|FAIL" "$OUT/gpu_tests.log" | sed 's/  */ /g' | tail -12
