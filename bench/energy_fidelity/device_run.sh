#!/usr/bin/env bash
# On the GPU machine, after ./scripts/device-prep.sh here: the energy fidelity bench for the
# programs named (all by default), its result, logs and slim run databases under $OUT.
#   bash bench/energy_fidelity/device_run.sh [PROGRAM ...]
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device-env.sh
OUT=${OUT:-/tmp/energy_fidelity_out}
tag=${EF_TAG:-all}
mkdir -p "$OUT" /tmp/ef_slim /tmp/ef_logs
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
timeout ${EF_TIMEOUT:-540} python3 bench/energy_fidelity/run.py --kjoule "$KJ_BUILD/kjoule" --logs /tmp/ef_logs --slim /tmp/ef_slim \
	-o "$OUT/energy_fidelity_$tag.json" ${1:+--programs "$@"}
rc=$?
# each slim database compressed on its own (the image has xz, not zstd), and the logs
for f in /tmp/ef_slim/*.kjdb; do xz -T0 -6 -c "$f" > "$OUT/$(basename "$f").xz"; done
tar -C /tmp --exclude='*.kjdb' -czf "$OUT/ef_logs_$tag.tar.gz" ef_logs
ls -la "$OUT"
exit $rc
