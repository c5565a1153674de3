# Sourced by the GPU test scripts: skip with 77 where no GPU is present, a temporary directory
# $dir removed at exit, check NAME CONDITION (prints ok/FAIL, sets fail=1 and counts $fails) and
# q DB SQL (the first column of the first row); for the multi-GPU tests need_two_gpus_torch,
# tp_run, tp_compare and compare_py (each described above it). The exit trap turns an exit 0 or 77
# into 1 once a check failed, so a failure counts however the script ends (tests/cli/test_lib.sh
# tests the same rule in tests/cli/lib.sh).
if ! nvidia-smi -L >/dev/null 2>&1; then echo "no GPU: skipped"; exit 77; fi
dir=$(mktemp -d)
fail=0
fails=0
kj_gpu_lib_exit() {
	local rc=$?
	rm -rf "$dir"
	if [ "${fails:-0}" != 0 ] && { [ "$rc" = 0 ] || [ "$rc" = 77 ]; }; then
		echo "$fails check(s) failed"
		exit 1
	fi
	exit "$rc"
}
trap kj_gpu_lib_exit EXIT
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fails=$((fails + 1)); fi; }
q() { python3 -c 'import sqlite3,sys; r=sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone(); print(r[0] if r else "")' "$@"; }

# need_two_gpus_torch: exit 77 (skipped) with fewer than 2 GPUs or without PyTorch's torch.distributed.
need_two_gpus_torch() {
	[ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')" -ge 2 ] || { echo "fewer than 2 GPUs: skipped"; exit 77; }
	python3 -c 'import torch, torch.distributed' 2>/dev/null || { echo "no PyTorch: skipped"; exit 77; }
}
# tp_run KJOULE SRC_DIR RUN LOG ARGS...: `KJOULE run --force -o RUN -- torchrun` of examples/tp_mlp.py
# ARGS on 2 ranks, NVLink multicast off (NCCL, PyTorch, NVSHMEM), its output into LOG, killed after
# 240 s; returns kjoule's exit status.
tp_run() {
	local kj=$1 src=$2 run=$3 log=$4
	shift 4
	timeout 240 "$kj" run --force -o "$run" -- env NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
		NVSHMEM_DISABLE_NVLS=1 torchrun --standalone --nproc-per-node 2 "$src/examples/tp_mlp.py" "$@" >"$log" 2>&1
}
# tp_compare KJOULE RUN BASE: compare's text into BASE.txt, checked to exit 0 (its status in crc),
# then compare --json into BASE.json; the stderr of both into BASE.err.
tp_compare() {
	timeout 120 "$1" compare "$2" >"$3.txt" 2>"$3.err"
	crc=$?
	check "compare exits 0 (got $crc)" '[ $crc = 0 ]'
	timeout 120 "$1" compare --json "$2" >"$3.json" 2>>"$3.err"
}
# compare_py JSON CODE: runs the Python CODE with j (compare --json's output, read from the file
# JSON), job (its job section, {} where none) and r (the job's ranks, [] where none).
compare_py() {
	python3 - "$1" <<PY
import json, sys
j = json.load(open(sys.argv[1]))
job = j.get("job") or {}
r = job.get("ranks") or []
$2
PY
}
