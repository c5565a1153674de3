#!/usr/bin/env bash
# On a 2-GPU machine (nvidia-h200-x2): NCCL's calls recorded by libkjoule_nccl.so under
# `kjoule run -- torchrun` (docs/multi-gpu.md): the multi-GPU test with its NCCL-bytes checks
# (tests/gpu/multi/run_tp_test.sh), what nccl_call holds, compare's NCCL lines, and one run with
# --no-nccl-calls. Logs under $OUT (at most 8 files); a short table last; under 8 minutes.
# usage (device): source scripts/device-env.sh; bash scripts/gpu/nccl_bytes.sh
set -u
source scripts/gpu/lib.sh
keep=$(mktemp -d)
{
	nvidia-smi -L
	python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())'
	ls -l "$KJ_BUILD/src/trace/nccl/libkjoule_nccl.so"
	python3 -c 'import torch, os, glob; d = os.path.dirname(torch.__file__); print("libnccl beside torch:", glob.glob(d + "/../nvidia/nccl/lib/*") or "none")'
} > "$OUT/facts.txt" 2>&1

echo "== 1. run_tp_test.sh (NCCL bytes checks)"
tp_test "$keep" 300
echo "== 2. what nccl_call holds"
{
	echo "-- meta nccl_calls"; sql "$run" "SELECT value FROM meta WHERE key = 'nccl_calls'"
	echo "-- calls per pid, op, count, datatype, nranks, depth"
	sql "$run" "SELECT pid, op, count, datatype, bytes, nranks, group_depth, count(*) FROM nccl_call GROUP BY 1, 2, 3, 4, 5, 6, 7 ORDER BY 1, 8 DESC LIMIT 40"
	echo "-- first calls and the next NCCL kernel launch of their pid (ns after the call)"
	sql "$run" "SELECT c.pid, c.op, c.t_ns, (SELECT min(k.launch_ns) - c.t_ns FROM kernel k JOIN kernel_name n ON n.id = k.name_id WHERE k.pid = c.pid AND k.launch_ns >= c.t_ns AND n.mangled LIKE '%nccl%') FROM nccl_call c ORDER BY c.t_ns LIMIT 20"
	echo "-- problems"; sql "$run" "SELECT pid, severity, substr(what, 1, 200) FROM problem LIMIT 20"
} > "$OUT/nccl_calls.txt" 2>&1
sed -n '/NCCL bytes per iteration/,/^Job/p' "$keep/compare.txt" > "$OUT/compare_nccl.txt" 2>&1
python3 -c 'import json,sys
j = json.load(open(sys.argv[1]))
for x in j["job"]["ranks"]:
    print({k: v for k, v in x.items() if k.startswith("nccl")})' "$keep/compare.json" >> "$OUT/compare_nccl.txt" 2>&1

echo "== 3. --no-nccl-calls"
timeout 200 "$kj" run --force --no-nccl-calls -o "$keep/off.kjdb" -- torchrun --standalone --nproc-per-node 2 \
	examples/tp_mlp.py --steps 8 > "$OUT/off.log" 2>&1
o_rc=$?
off_meta=$(sql "$keep/off.kjdb" "SELECT value FROM meta WHERE key = 'nccl_calls'" 2>/dev/null)
off_rows=$(sql "$keep/off.kjdb" "SELECT count(*) FROM sqlite_master WHERE name = 'nccl_call'" 2>/dev/null)
timeout 120 "$kj" compare "$keep/off.kjdb" 2>&1 | sed -n '/NCCL bytes per iteration/,/^Job/p' >> "$OUT/off.log"
grep -q "traced with --no-nccl-calls" "$OUT/off.log"; off_says=$?

rm -rf "$keep"
echo
printf '%-44s %s\n' "step" "result"
printf '%-44s %s\n' "run_tp_test.sh (with NCCL bytes checks)" "$(status_of $t_rc) $(grep -c '^FAIL' "$OUT/tp_test.log") FAIL"
printf '%-44s %s\n' "failed checks" "$(grep '^FAIL' "$OUT/tp_test.log" | cut -c1-60 | tr '\n' ';')"
printf '%-44s %s\n' "compare's NCCL lines" "$(grep -c 'bus bandwidth' "$OUT/compare_nccl.txt") rank line(s) with a bandwidth"
printf '%-44s %s\n' "--no-nccl-calls run" "$(status_of $o_rc), meta '$off_meta', nccl_call table: $off_rows, compare says it: $(status_of $off_says)"
