# Sourced by the device scripts under scripts/gpu, after scripts/device-env.sh (which gives
# $KJ_BUILD): $OUT made (the folder whose files come back; /tmp/kjout when unset), kj (this
# build's kjoule) and helpers: sql DB SQL prints every row of SQL tab-separated; status_of RC
# prints ok for 0, else FAIL(RC); multicast_off exports what keeps NCCL, PyTorch's symmetric memory
# and NVSHMEM off NVLink multicast (NVLS) for every process started after it; tp_test (below).
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
kj=$KJ_BUILD/kjoule
sql() { python3 -c 'import sqlite3,sys
for r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2]): print(*r, sep="\t")' "$@"; }
status_of() { [ "$1" = 0 ] && echo ok || echo "FAIL($1)"; }
multicast_off() { export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1; }
# tp_test KEEP SECONDS: the multi-GPU test tests/gpu/multi/run_tp_test.sh (run from the source
# root), its run and compare's outputs kept in KEEP, its output into $OUT/tp_test.log, killed after
# SECONDS; sets t_rc (its exit status) and run (the run it made).
tp_test() {
	KJ_TP_KEEP=$1 timeout "$2" bash tests/gpu/multi/run_tp_test.sh "$kj" "$(pwd)" > "$OUT/tp_test.log" 2>&1
	t_rc=$?
	run=$1/tp.kjdb
}
