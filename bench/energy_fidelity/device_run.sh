#!/usr/bin/env bash
# On the GPU machine, after ./scripts/device-prep.sh here: the energy fidelity bench for the
# programs named (all by default), its result ($OUT/energy_fidelity_TAG.json) and one archive of
# its logs and slim run databases ($OUT/ef_TAG.tar.xz) under $OUT.
#   EF_TAG=name bash bench/energy_fidelity/device_run.sh [PROGRAM ...]
# Under CUDA_VISIBLE_DEVICES the programs and their replays run on that GPU; two tags can run at
# once on two GPUs (scripts/gpu/energy_two_cards.sh).
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device-env.sh
OUT=${OUT:-/tmp/energy_fidelity_out}
tag=${EF_TAG:-all}
logs=/tmp/ef_logs_$tag slim=/tmp/ef_slim_$tag
mkdir -p "$OUT" "$slim" "$logs"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
timeout ${EF_TIMEOUT:-540} python3 bench/energy_fidelity/run.py --kjoule "$KJ_BUILD/kjoule" --logs "$logs" --slim "$slim" \
	-o "$OUT/energy_fidelity_$tag.json" ${1:+--programs "$@"}
rc=$?
# the slim databases and the logs in one archive (the image has xz, not zstd): with the result,
# two files a tag, so four GPUs' tags stay within the 8 files a device call brings back
tar -C /tmp --exclude='ef_logs_*/*.kjdb' -cJf "$OUT/ef_$tag.tar.xz" "ef_slim_$tag" "ef_logs_$tag"
exit $rc
