#!/usr/bin/env bash
# Launches tied to their modules. GPU tests (the same-name one and those of the tracer's module
# handling), then max-autotune's triton_mm candidates and a JAX step: how many captured launches
# know their module, and how their replays end. Results in $OUT/modules_check.tar.gz.
set -u
source scripts/device-env.sh
KJ=$KJ_BUILD/kjoule
W=/tmp/modules_check; rm -rf $W; mkdir -p $W
log() { echo "== $*" | tee -a $W/summary.txt; }
(cd $KJ_BUILD && timeout 300 ctest -L gpu -R "gpu_replay_same_name|gpu_trace|gpu_replay$|gpu_graph$" --output-on-failure) > $W/ctest.log 2>&1
log "ctest rc $?: $(grep -E 'tests passed|tests failed' $W/ctest.log)"
grep -E "^(ok|FAIL)|Passed|Failed" $W/ctest.log | head -40 >> $W/summary.txt
modq() { python3 - "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
n, k = db.execute("SELECT count(*), count(module_id) FROM launch_params").fetchone()
kinds = db.execute("SELECT handle_kind, count(*), count(module_id) FROM launch_params GROUP BY 1").fetchall()
st = db.execute("SELECT status, count(*) FROM replay_kernel WHERE cache = 'warm' GROUP BY 1").fetchall()
print(f"launch_params {n}, with module {k}; by handle kind {kinds}; warm replays {st}")
for r in db.execute("SELECT unique_id, substr(error, 1, 160) FROM replay_kernel WHERE cache = 'warm'"
                    " AND status NOT IN ('ok', 'relocated') LIMIT 8"):
    print("  not replayed:", r)
PY
}
$KJ run --force -o $W/ca.kjdb -- python3 examples/compile_autotune.py --iters 2000 > $W/ca_run.log 2>&1
log "compile_autotune run rc $?: $(tail -1 $W/ca_run.log)"
timeout 150 $KJ replay $W/ca.kjdb --cache warm --no-sequence --runs 10 > $W/ca_replay.log 2>&1
log "ca replay rc $?: $(modq $W/ca.kjdb)"
$KJ run --force -o $W/jax.kjdb -- python3 examples/jax_step.py > $W/jax_run.log 2>&1
log "jax run rc $?: $(tail -1 $W/jax_run.log)"
timeout 150 $KJ replay $W/jax.kjdb --cache warm --no-sequence --runs 10 > $W/jax_replay.log 2>&1
log "jax replay rc $?: $(modq $W/jax.kjdb)"
$KJ compare $W/jax.kjdb > $W/jax_compare.txt 2>&1
grep -A8 "^Replay (Σ" $W/jax_compare.txt >> $W/summary.txt
cd $W && tar czf $OUT/modules_check.tar.gz *.log *.txt && cd - >/dev/null
cat $W/summary.txt | cut -c1-240
