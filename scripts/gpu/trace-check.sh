#!/usr/bin/env bash
# On the GPU machine: tracer GPU test, then a traced BLOOM-560M run with a summary.
# usage (device): source scripts/device-env.sh; bash scripts/gpu/trace-check.sh
set -u
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
kj=$KJ_BUILD/kjoule
echo "== machine"; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'
ls /usr/local/cuda/extras/CUPTI/lib64/libcupti.so* /usr/local/cuda/lib64/libcupti.so* 2>/dev/null
echo "== gpu tests"
(cd "$KJ_BUILD" && ctest -L gpu --output-on-failure 2>&1 | tail -60) | tee "$OUT/gpu_tests.log"
echo "== traced BLOOM-560M"
/usr/bin/time -v "$kj" run --force --params-iteration 10 -o "$OUT/bloom.kjdb" -- python3 examples/bloom560m.py --iters 20 --warmup 5 \
	> "$OUT/bloom_run.log" 2>&1
tail -5 "$OUT/bloom_run.log"
"$kj" info "$OUT/bloom.kjdb" 2>&1 | head -60
"$kj" kernels "$OUT/bloom.kjdb" --top 30 2>&1 | head -45
python3 - "$OUT/bloom.kjdb" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
q = lambda s: db.execute(s).fetchall()
fw = q("SELECT start_ns, end_ns FROM nvtx_range WHERE name='forward' AND end_ns IS NOT NULL ORDER BY start_ns")
print("forwards", len(fw))
if fw:
    s, e = fw[-1]
    print("launches in last forward", q(f"SELECT count(*) FROM kernel WHERE launch_ns BETWEEN {s} AND {e}")[0][0])
    print("unique in last forward", q(f"SELECT count(DISTINCT unique_id) FROM kernel WHERE launch_ns BETWEEN {s} AND {e}")[0][0])
    print("busy-ish sum ms in last forward", q(f"SELECT sum(end_ns-start_ns)/1e6 FROM kernel WHERE launch_ns BETWEEN {s} AND {e}")[0][0])
    print("wall ms of last forward", (e - s) / 1e6)
print("keyed_by", q("SELECT keyed_by, count(*) FROM unique_kernel GROUP BY 1"))
print("kernels without launch_ns", q("SELECT count(*) FROM kernel WHERE launch_ns IS NULL")[0][0])
print("modules", q("SELECT count(*), sum(bytes), sum(length(data)), group_concat(DISTINCT format) FROM module"))
print("module functions", q("SELECT count(*) FROM module_function")[0][0])
print("unique kernels whose name no module defines",
      q("SELECT count(*) FROM unique_kernel u JOIN kernel_name n ON n.id=u.name_id WHERE NOT EXISTS (SELECT 1 FROM module_function f WHERE f.mangled = n.mangled)")[0][0])
print("params", q("SELECT handle_kind, count(*) FROM launch_params GROUP BY 1"))
print("unique without params", q("SELECT count(*) FROM unique_kernel u WHERE NOT EXISTS (SELECT 1 FROM launch_params p WHERE p.unique_id=u.id)")[0][0])
print("allocations", q("SELECT kind, count(*), sum(bytes) FROM allocation GROUP BY 1"))
print("problems", q("SELECT severity, what FROM problem"))
print("iteration capture", q("SELECT value FROM meta WHERE key='params_iteration'"), q("SELECT op, count(*) FROM sequence_op GROUP BY 1"))
print("unique groups split by params (name+geometry -> uniques)", q("SELECT count(*) FROM (SELECT name_id, grid_x, grid_y, grid_z, block_x, shmem_dynamic, count(*) c FROM unique_kernel GROUP BY 1,2,3,4,5,6 HAVING c > 1)"))
print("unique kernels with >= 24 launches", q("SELECT count(*) FROM unique_kernel WHERE launches >= 24")[0][0], "of", q("SELECT count(*) FROM unique_kernel")[0][0])
PY
ls -la "$OUT"

if [ -n "${KJ_OVERHEAD:-}" ]; then
	echo "== overhead benchmark"
	bash scripts/gpu/checks.sh overhead
fi
