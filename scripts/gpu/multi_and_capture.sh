#!/usr/bin/env bash
# On a machine with 2 GPUs, in one call: first, side by side, capture ranges on GPU 0
# (scripts/gpu/capture.sh) and the GPU tests of replay, pipeline and graphs on GPU 1
# (scripts/gpu/arch.sh); then both GPUs for the collectives and the tensor- and data-parallel
# programs (scripts/gpu/multi_gpu.sh). Each part's limit is set here so the whole ends in time.
# Files in $OUT: capture_overhead.json, multi_gpu.json, capture.tar.gz, arch.tar.gz, multi.tar.gz.
# usage (device): bash scripts/gpu/multi_and_capture.sh
#   env: PHASE1_S (250), MG_BENCH_S (230)
set -u
cd "$(dirname "$0")/../.."
source scripts/device-env.sh
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT" /tmp/mc/capture /tmp/mc/arch /tmp/mc/multi
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
p1=${PHASE1_S:-250}
t0=$(date +%s)
(CUDA_VISIBLE_DEVICES=0 OUT=/tmp/mc/capture CAP_TEST_S=100 CAP_TURNS_S=80 CAP_JAX_S=50 CAP_DECODE_S=0 \
	CAP_STEPS_S=15 timeout "$p1" bash scripts/gpu/capture.sh > /tmp/mc/capture/table.txt 2>&1) &
cap=$!
(CUDA_VISIBLE_DEVICES=1 OUT=/tmp/mc/arch timeout "$p1" bash scripts/gpu/arch.sh > /tmp/mc/arch/table.txt 2>&1) &
arch=$!
wait $cap; echo "capture exit $? after $(( $(date +%s) - t0 )) s" >> /tmp/mc/capture/table.txt
wait $arch; echo "arch exit $? after $(( $(date +%s) - t0 )) s" >> /tmp/mc/arch/table.txt

OUT=/tmp/mc/multi MG_CHECK_S=25 MG_BENCH_S=${MG_BENCH_S:-230} MG_HELD_OPS="all_reduce all_gather" LAYERS=4 \
	timeout $(( ${MG_BENCH_S:-230} + 40 )) bash scripts/gpu/multi_gpu.sh > /tmp/mc/multi/table.txt 2>&1
echo "multi_gpu exit $? after $(( $(date +%s) - t0 )) s" >> /tmp/mc/multi/table.txt

cp /tmp/mc/capture/capture_overhead.json /tmp/mc/multi/multi_gpu.json "$OUT/" 2>/dev/null
for d in capture arch multi; do tar -C /tmp/mc -czf "$OUT/$d.tar.gz" --exclude='*.kjdb' "$d"; done
echo "== capture (GPU 0)"; tail -16 /tmp/mc/capture/table.txt
echo "== replay, pipeline and graph GPU tests (GPU 1)"; tail -12 /tmp/mc/arch/table.txt
echo "== collectives and parallel programs (2 GPUs)"; tail -22 /tmp/mc/multi/table.txt
