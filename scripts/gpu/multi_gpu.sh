#!/usr/bin/env bash
# On a machine with 2 GPUs: the NCCL collectives swept (all five, 14 sizes 8 KiB..1 GiB on 2 GPUs),
# fitted, held-out sizes predicted, bus bandwidth at 1 GiB against the NVLink peak (450 GB/s per
# direction, H100/H200 SXM); then `kjoule run` of a tensor-parallel LLaMA and a DDP GPT-2 under
# torchrun, `kjoule compare` and `kjoule predict --model --run` of each
# (bench/multi_gpu/run.py does those steps, each with its own timeout). Files in $OUT:
# multi_gpu.json (the result), multi_gpu.log (every step's output), topo.txt, build.txt.
# usage (device): source scripts/device-env.sh; bash scripts/gpu/multi_gpu.sh
#   MG_PROGRAMS (run.py --programs: tp tp_graph ddp), MG_REPLAY (run.py --replay), MG_HELD_OPS:
#   within one 600 s call, e.g. MG_HELD_OPS=all_reduce MG_PROGRAMS=tp_graph MG_REPLAY=tp_graph;
#   MG_KEEP (run.py --keep: an earlier result's collectives and programs kept, only MG_PROGRAMS run),
#   MG_OP_GPUS (operator sweeps side by side, one a GPU; default: every GPU), MG_CHECKS=0 (no check
#   of each collective's data), MG_DBS (programs whose run databases come back in $OUT, xz'd in parts)
set -u
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
kj=$KJ_BUILD/kjoule
# NVLink multicast off in every process (kjoule's workers set these too where unset)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{
	echo "== nvidia-smi topo -m"; timeout 30 nvidia-smi topo -m
	echo "== nvidia-smi -L"; timeout 30 nvidia-smi -L
	echo "== nvidia-smi nvlink -s (first GPU)"; timeout 30 nvidia-smi nvlink -s -i 0 2>&1 | head -20
} >"$OUT/topo.txt" 2>&1
cat "$OUT/topo.txt" | head -12
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
echo "GPUs: $ngpu"
# the NCCL worker: built here only where NCCL was found; NCCL itself comes from PyTorch's wheel
worker=""
for wk in "$KJ_BUILD/kjoule-nccl-worker" "$KJ_BUILD/src/sweep/worker_nccl/kjoule-nccl-worker"; do
	[ -x "$wk" ] && worker=$wk && break
done
nccl_dir=$(timeout 60 python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
[ -z "$nccl_dir" ] && nccl_dir=$(timeout 60 python3 -c 'import torch, os, glob; d=os.path.dirname(torch.__file__); print(os.path.dirname((glob.glob(d+"/../nvidia/nccl/lib/libnccl.so*") or glob.glob(d+"/lib/libnccl*"))[0]))' 2>/dev/null)
[ -n "$nccl_dir" ] && export LD_LIBRARY_PATH="$nccl_dir:$LD_LIBRARY_PATH"
{
	echo "worker: ${worker:-not built}"; echo "NCCL library folder: ${nccl_dir:-not found}"
	[ -n "$worker" ] && ldd "$worker" | grep -E "nccl|cudart|not found"
	[ -n "$worker" ] && "$worker" --list
} >"$OUT/build.txt" 2>&1
cat "$OUT/build.txt"
[ -n "$worker" ] && export KJ_NCCL_WORKER=$worker
if [ "$ngpu" -lt 2 ]; then
	echo "fewer than 2 GPUs: nothing to measure"; exit 1
fi
# a sweep asking for more GPUs than the machine has: refused before any work (exit 2)
# (the config's next count on its gpus axis above the machine's, so that the machine's count refuses it)
more=$(for n in 2 4 8 16; do [ $n -gt "$ngpu" ] && echo $n && break; done)
timeout 30 "$kj" sweep configs/sweep/collect/all_reduce.yml --gpus "$more" -o /tmp/kj_refused >/tmp/kj_refused.txt 2>&1
echo "more GPUs than present: exit $? ($(tail -1 /tmp/kj_refused.txt))"
# a check of each collective's data (run_function: small integers, expected sums) on 2 GPUs
for op in $([ "${MG_CHECKS:-1}" = 1 ] && echo all_reduce all_gather reduce_scatter broadcast send_recv); do
	sed 's/"run": "get_one"/"run": "run_function"/' "configs/sweep/test/$op.yml" >"/tmp/kj_rf_$op.yml"
	printf '%-16s ' "$op"; timeout ${MG_CHECK_S:-90} "$kj" sweep "/tmp/kj_rf_$op.yml" --gpus 2 2>&1 | tail -1
done | tee -a "$OUT/build.txt"
timeout ${MG_BENCH_S:-470} python3 bench/multi_gpu/run.py --kjoule "$kj" --work /tmp/kj_multi_gpu --log-dir "$OUT" \
	--gpus 2 --layers "${LAYERS:-8}" ${MG_HELD_OPS:+--held-ops $MG_HELD_OPS} ${MG_PROGRAMS:+--programs $MG_PROGRAMS} \
	${MG_REPLAY:+--replay $MG_REPLAY} ${MG_KEEP:+--keep $MG_KEEP} --op-gpus "${MG_OP_GPUS:-$ngpu}" \
	-o "$OUT/multi_gpu.json" 2>&1 | grep -vE "^== predict " | tail -40
echo "exit ${PIPESTATUS[0]}"
# the named programs' run databases brought back, xz'd in parts under the 16 MB a file comes back in
# (join: cat P.kjdb.xz.part* | xz -d > P.kjdb)
for p in ${MG_DBS:-}; do
	db=/tmp/kj_multi_gpu/$p.kjdb
	[ -f "$db" ] && timeout 120 xz -T0 -9 -c "$db" | split -b 15M -d - "$OUT/$p.kjdb.xz.part"
done
