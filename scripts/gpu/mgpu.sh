#!/usr/bin/env bash
# On a 2-GPU machine (nvidia-h100-x2): the multi-GPU test (tests/gpu/multi/run_tp_test.sh) and
# what a torchrun job's run holds (docs/multi-gpu.md). Logs under $OUT (at most 8 files).
# usage (device): source scripts/device-env.sh; bash scripts/gpu/mgpu.sh
set -u
source scripts/gpu/lib.sh
keep=$(mktemp -d)
nvidia-smi -L > "$OUT/facts.txt" 2>&1
python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())' >> "$OUT/facts.txt" 2>&1
echo "== test"
tp_test "$keep" 400
echo "== what the run holds"
{
	echo "-- processes"; sql "$run" "SELECT pid, ppid, exe, ended_cleanly, (SELECT count(*) FROM kernel k WHERE k.pid = p.pid), (SELECT group_concat(DISTINCT device_id) FROM kernel k WHERE k.pid = p.pid) FROM process p"
	echo "-- devices"; sql "$run" "SELECT id, name, nvml_index FROM device"
	echo "-- power samples per device"; sql "$run" "SELECT device_id, count(*), min(t_ns), max(t_ns) FROM power_sample GROUP BY device_id"
	echo "-- nvtx by name/depth/closed (top 30)"; sql "$run" "SELECT pid, coalesce(domain,''), name, depth, end_ns IS NULL, count(*) FROM nvtx_range GROUP BY 1,2,3,4,5 ORDER BY 6 DESC LIMIT 30"
	echo "-- unclosed ranges"; sql "$run" "SELECT pid, tid, domain, name, depth FROM nvtx_range WHERE end_ns IS NULL LIMIT 20"
	echo "-- nccl kernels"; sql "$run" "SELECT k.pid, n.mangled, count(*), sum(k.end_ns - k.start_ns) FROM kernel k JOIN kernel_name n ON n.id = k.name_id WHERE n.mangled LIKE '%nccl%' GROUP BY 1, 2 LIMIT 10"
	echo "-- host_call ops"; sql "$run" "SELECT op, count(*) FROM host_call GROUP BY op"
	echo "-- problems"; sql "$run" "SELECT pid, severity, substr(what, 1, 160) FROM problem LIMIT 10"
} > "$OUT/run_facts.txt" 2>&1
timeout 120 "$kj" info "$run" > "$OUT/info.txt" 2>&1; i_rc=$?
cp "$keep/compare.txt" "$OUT/compare.txt" 2>/dev/null
cp "$keep/compare.json" "$OUT/compare.json" 2>/dev/null
timeout 120 "$kj" timeline --format chrome "$run" -o "$keep/tl.json" > "$OUT/timeline.log" 2>&1; c_rc=$?
python3 -c 'import json,sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
for e in ev:
    if e.get("name") == "process_name": print(e["pid"], e["args"]["name"])' "$keep/tl.json" >> "$OUT/timeline.log" 2>&1
tail -5 "$keep/run.log" >> "$OUT/timeline.log" 2>/dev/null
sz=$(stat -c %s "$run" 2>/dev/null || echo 0)
if [ "$sz" -gt 0 ] && [ "$sz" -lt 200000000 ]; then timeout 200 xz -T4 -6 -c "$run" > "$keep/tp.kjdb.xz"; fi
[ -f "$keep/tp.kjdb.xz" ] && [ "$(stat -c %s "$keep/tp.kjdb.xz")" -lt 16000000 ] && cp "$keep/tp.kjdb.xz" "$OUT/"
echo
echo "step              status"
echo "gpu_multi_tp      $(status_of $t_rc)  ($(grep -c '^ok' "$OUT/tp_test.log") ok, $(grep -c '^FAIL' "$OUT/tp_test.log") FAIL)"
echo "info              $(status_of $i_rc)"
echo "timeline chrome   $(status_of $c_rc)"
echo "run kept          $( [ -f "$OUT/tp.kjdb.xz" ] && echo "tp.kjdb.xz" || echo "no (size $sz)")"
grep '^FAIL' "$OUT/tp_test.log" | head -8
