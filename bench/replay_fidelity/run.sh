#!/usr/bin/env bash
# Replay fidelity benchmark. On the GPU machine, after `source scripts/device-env.sh`:
#   bench/replay_fidelity/run.sh [RUN.kjdb] [OUTDIR]
# Without RUN: records the synthetic test run (tests/gpu/replay kernels) and replays that.
# Writes OUTDIR/replay_<name>.json (kjoule replay --json plus wall time) and prints a table:
# coverage, Σ(count × warm median) and Σ(count × cold median) against the traced GPU busy time.
set -euo pipefail
build=${KJ_BUILD:-build}
run=${1:-}
out=${2:-${OUT:-/tmp}}
energy=${KJ_BENCH_ENERGY:-1}
export KJ_REPLAY_WORKER=${KJ_REPLAY_WORKER:-$build/kjoule-replay-worker}
if [ -z "$run" ]; then
	run=$out/replay_synthetic.kjdb
	"$build/tests/gpu/replay/kj_replay_record" "$run" "$build/tests/gpu/replay/replay_kernels.cubin"
fi
name=$(basename "$run" .kjdb)
extra=()
[ "$energy" = 1 ] && extra+=(--energy --unroll 100 --energy-seconds "${KJ_BENCH_ENERGY_S:-2}")
t0=$(date +%s.%N)
"$build/kjoule" replay "$run" --runs 100 --warmup 10 --cache both "${extra[@]}" --json >"$out/replay_$name.raw.json"
t1=$(date +%s.%N)
python3 - "$out/replay_$name.raw.json" "$out/replay_$name.json" "$t0" "$t1" "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
wall = float(sys.argv[4]) - float(sys.argv[3])
doc["bench"] = {"wall_s": wall, "gpu": sys.argv[5]}
json.dump(doc, open(sys.argv[2], "w"), indent=1)
c = doc["coverage"]; busy = doc["traced_busy_ns"]
w = doc["replay_warm_sum_ns"]; cold = doc["replay_cold_sum_ns"]
print(f"replay of {sys.argv[1]} on {sys.argv[5]}: wall {wall:.1f} s")
print(f"coverage: launches {c['launches_exact'] + c['launches_relocated']}/{c['launches']} "
      f"(relocated {c['launches_relocated']}), unique {c['unique_exact'] + c['unique_relocated']}/{c['unique_kernels']}")
if busy and w:
    print(f"traced busy {busy/1e6:.3f} ms | replay warm {w/1e6:.3f} ms ({100*(w-busy)/busy:+.1f}%) | "
          f"cold {cold/1e6:.3f} ms ({100*(cold-busy)/busy:+.1f}%)")
print("%-28s %6s %9s %9s %9s %9s %10s %8s" % ("kernel", "count", "traced_us", "warm_us", "cold_us", "stdev_us", "mJ/launch", "W"))
for k in doc["kernels"]:
    if not k["warm"]:
        print("%-28s %6d %s: %s" % (k["name"][:28], k["launches"], k["status"], (k["error"] or "")[:60])); continue
    e = k["energy"] or {}
    print("%-28s %6d %9.2f %9.2f %9.2f %9.2f %10s %8s" % (k["name"][:28], k["launches"],
          k["traced_ns"] / max(k["launches"], 1) / 1e3, k["warm"]["median_ns"] / 1e3,
          (k["cold"] or {}).get("median_ns", 0) / 1e3, k["warm"]["stdev_ns"] / 1e3,
          "%.4g" % e["energy_mj_per_launch"] if e else "-", "%.0f" % (e["power_mw"] / 1e3) if e else "-"))
PY
