#!/bin/bash
# kjoule api: text, json and jsonl on runs with and without API calls.
# usage: test_api.sh KJOULE_BIN SRC_DIR BUILD_DIR   (exit 77: skipped, no python3)
set -u
KJ=$1 SRC=$2
command -v python3 >/dev/null || exit 77
T=$(mktemp -d /tmp/kjcli_api.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

python3 "$SRC/bench/analysis_speed/mkrun.py" -o "$T/run.kjdb" --iterations 6 --kernels 20 >/dev/null || fail mkrun
"$KJ" api "$T/run.kjdb" >"$T/a.txt" || fail "api text"
for s in "Model loading" "Kernels launched per iteration" "Bytes copied" "Stages" "synchronisation" \
	"GPU idle" "Allocations" "Calls per API"; do
	grep -q "$s" "$T/a.txt" || fail "text lacks '$s'"
done
"$KJ" api "$T/run.kjdb" --json >"$T/a.json" || fail "api json"
python3 - "$T/a.json" <<'PY' || fail "json checks"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["api_traced"] is True
assert j["loading"]["api_calls"] == 17          # cuInit + 8 x (alloc + H2D copy)
assert j["kernels_per_iteration"]["mean"] == 20
assert j["bytes"]["h2d"] == 8 * (1 << 24)
st = {s["stage"]: s for s in j["stages"]}
assert st["initialisation"]["duration_us"] > 0 and st["weight_loading"]["duration_us"] > 0
assert st["steady"]["per_iteration_us"] > 0
assert j["synchronization"]["calls"] == 6
assert j["allocations"]["allocations"] == 8
assert j["per_api"][0]["name"] == "cuMemcpyHtoD_v2"
g = j["gpu_idle"]["longest"]
assert len(g) == 10 and g[0]["duration_us"] >= g[-1]["duration_us"]
PY
"$KJ" api "$T/run.kjdb" --format jsonl >"$T/a.jsonl" || fail "jsonl"
python3 - "$T/a.jsonl" "$T/run.kjdb" <<'PY' || fail "jsonl checks"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[2])
total = sum(db.execute("select count(*) from %s" % t).fetchone()[0]
            for t in ("api_call", "kernel", "memcpy", "memset", "nvtx_range", "allocation"))
n = 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    assert set(e) == {"type", "name", "ts", "duration_us", "size", "stream"}, e
    n += 1
assert n == total, (n, total)
PY

# without --api: said, and the rest still answered
python3 "$SRC/bench/analysis_speed/mkrun.py" -o "$T/noapi.kjdb" --no-api >/dev/null
"$KJ" api "$T/noapi.kjdb" >"$T/n.txt" || fail "no-api text"
grep -q "kjoule run --api" "$T/n.txt" || fail "missing API trace not said"
"$KJ" api "$T/noapi.kjdb" --json | python3 -c "
import json,sys; j=json.load(sys.stdin); assert j['api_traced'] is False and j['per_api'] is None
assert j['kernels_per_iteration']['mean'] == 50 and j['synchronization']['calls'] is None" || fail "no-api json"
"$KJ" api "$T/run.kjdb" --format xml 2>/dev/null; [ $? -eq 2 ] || fail "bad format"
: >"$T/e.kjdb"
"$KJ" api "$T/e.kjdb" 2>/dev/null && fail "empty accepted"
echo ok
