#!/usr/bin/env bash
# The sweep worker's flash-attention (kj_gpu_fa2_fwd.cu, kj_gpu_fa2_bwd.cu), layer-norm backward
# (worker_norm_bwd.cuh) and bias-gradient column-sum (worker_colsum.cuh) kernels run on the CPU by
# tests/tools/{fa2,ln,colsum}_emu.cpp (warp instructions emulated, one thread per
# CUDA thread) against double references, quick case lists. Needs g++ with C++20 and the CUDA
# headers (for the fp16/bf16 types); exits 77 (skipped) without them.
# usage: test_kernel_emu.sh KJOULE SRC_DIR BUILD_DIR
set -u
src=$2
cuda_inc=${CUDA_HOME:-/usr/local/cuda}/include
command -v g++ >/dev/null && [ -f "$cuda_inc/cuda_bf16.h" ] || { echo "no g++ or CUDA headers: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags=(-std=c++20 -O2 -fno-strict-aliasing -pthread -DFA2_EMU -I"$cuda_inc" -I"$src/src/gpu" -I"$src/src/sweep/worker" -I"$src/tests/tools")
for t in fa2_emu ln_emu colsum_emu; do
	if ! g++ "${flags[@]}" -x c++ "$src/tests/tools/$t.cpp" -o "$tmp/$t" 2>"$tmp/$t.log"; then
		if grep -q "barrier: No such file\|unrecognized command-line option.*c++20" "$tmp/$t.log"; then
			echo "g++ without C++20 <barrier>: skipped"; exit 77
		fi
		cat "$tmp/$t.log"; exit 1
	fi
	"$tmp/$t" quick > "$tmp/$t.out" 2>&1
	rc=$?
	grep -v "^ok" "$tmp/$t.out"
	[ $rc -eq 0 ] || { echo "$t failed"; exit 1; }
done
echo "kernel emulation: ok"
