#!/usr/bin/env bash
# On the GPU machine: how cuDNN's fused attention tiles a causal flash_atten call, for the
# regressor's features: the worker traced under kjoule run at a few lengths (kernel names, grids,
# blocks, durations), then the forward and backward time against the length in steps of 64 at
# two head sizes (time only). Logs under $OUT; a short table last.
# usage (device, repo root): bash scripts/gpu/sdpa_tiles.sh
set -u
source scripts/device-env.sh
OUT=${OUT:-/tmp/kjout}
w=$KJ_BUILD/kjoule-sweep-worker
reqs=""
for s in 1,2,16,640,1024 1,2,16,768,1024 1,2,16,640,2048 1,2,16,768,2048 2,2,32,1152,2048; do
	reqs+="flash_atten fp16 $s 0 0"$'\n'
done
printf '%s' "$reqs" | KJ_SWEEP_ACTIVE=3 KJ_SWEEP_WARMUP=1 KJ_SWEEP_TIME_S=0.01 \
	timeout 200 "$KJ_BUILD/kjoule" run --force -o /tmp/tiles.kjdb -- "$w" > "$OUT/tiles_answers.txt" 2> "$OUT/tiles_run.err"
echo "run exit $?"
python3 - /tmp/tiles.kjdb <<'P' | tee "$OUT/tiles_kernels.txt"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
q = """select n.demangled, k.grid_x, k.grid_y, k.grid_z, k.block_x, k.cluster_x, k.shmem_dynamic, count(*), avg(k.end_ns-k.start_ns)
       from kernel k join kernel_name n on n.id = k.name_id
       where n.demangled like '%sdpa%' or n.demangled like '%fmha%' or n.demangled like '%flash%' or n.demangled like '%cudnn%'
       group by n.demangled, k.grid_x, k.grid_y, k.grid_z order by min(k.start_ns)"""
for r in db.execute(q):
    print(r[0][:110], "grid=%dx%dx%d block=%d cluster=%s smem=%s n=%d mean_us=%.1f" % (r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8] / 1e3))
P
: > "$OUT/tiles_len.txt"; : > "$OUT/tiles_reqs.txt"
for cfg in 1,2,16,L,1024 1,2,16,L,2048; do
	reqs=""
	for l in $(seq 512 64 1536); do reqs+="flash_atten fp16 ${cfg/L/$l} 0 0"$'\n'; done
	printf '%s' "$reqs" >> "$OUT/tiles_reqs.txt"
	printf '%s' "$reqs" | timeout 200 "$w" >> "$OUT/tiles_len.txt" 2>>"$OUT/tiles_run.err"
done
python3 - "$OUT/tiles_len.txt" "$OUT/tiles_reqs.txt" <<'P'
import re, sys
for ln, rq in zip(open(sys.argv[1]), open(sys.argv[2])):
    a = dict(re.findall(r'(\w+)=("[^"]*"|\S+)', ln))
    print(rq.split()[2], a.get("f_us"), a.get("b_us"), a.get("f_algo", ""), a.get("b_algo", ""))
P
