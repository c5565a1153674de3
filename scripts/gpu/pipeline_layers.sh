#!/usr/bin/env bash
# On the GPU machine: `kjoule pipeline` (issue 13). Parts, in the order given (default: tests
# truth repeat, which fit one 10-minute call; `sweep` alone is a second call):
#   tests   the GPU tests of the pipeline worker (conv/matmul/attention vs CPU, graph vs single),
#           and the shipped conv shapes against torchvision's modules (gen_pipelines.py --check)
#   truth   ResNet-50 at batch 1 and 32 (TRUTH_BATCHES; TRUTH_GRAPH=1: the forward captured in a
#           CUDA graph, GPU-bound; TRUTH_CL=1: model and input channels-last; TRUTH_YAML_ES: the yaml
#           phases' energy window in seconds (0.3); TRUTH_RUN_ARGS: `kjoule run` options (default
#           --snapshot-graphs: --from replays on the program's buffers; " " for the fill alone); TRUTH_FROM_NOSNAP=1: --from also on a copy of the run without its
#           buffer snapshot; TRUTH_YAML_HEUR=1: the yaml also with cuDNN's
#           heuristic convolution algorithms; in NCHW the yaml also with --bn-kernel plane
#           (PyTorch's eval batch-norm kernel); TRUTH_FROM_LEGACY=1: --from also on another replay
#           fill (KJ_REPLAY_FILL=$TRUTH_FROM_FILL, default legacy); TRUTH_NO_YAML=1:
#           the shipped pipeline not rerun): `kjoule run` of examples/torchvision_nvtx.py end to end,
#           against the shipped pipeline's sum of layers, and against `--from` on that very run
#   repeat  per-phase energy CV over 5 separate runs of phases >= 10 us
#   sweep   every shipped pipeline at batch 1 (355 unique phases; about 6-7 minutes)
# Everything is bounded: each step has a timeout, and no step starts after DEADLINE_S (default
# 560) seconds from the start. Results: $OUT/pipeline_layers_<parts>.json (device, date, command,
# raw numbers), $OUT/*.csv, $OUT/logs.tar.gz; a short table is printed last.
# usage (device): source scripts/device-env.sh; bash scripts/gpu/pipeline_layers.sh [PART...]
set -u
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
parts=${*:-tests truth repeat}
tag=$(echo "$parts" | tr ' ' '_')
W=/tmp/kjpl; rm -rf "$W"; mkdir -p "$W"
kj=$KJ_BUILD/kjoule
export KJ_PIPELINE_WORKER=$KJ_BUILD/kjoule-pipeline-worker
export KJ_REPLAY_WORKER=$KJ_BUILD/kjoule-replay-worker
DEADLINE_S=${DEADLINE_S:-560}
T0=$(date +%s)
left() { echo $((DEADLINE_S - ($(date +%s) - T0))); }
# run CMD with a timeout of min(LIMIT, time left); log its wall time and exit code
step() {
	local lim=$1; shift
	local l; l=$(left)
	if [ "$l" -lt 15 ]; then echo "   [skipped, deadline] $*" | tee -a "$W/steps.txt"; return 124; fi
	[ "$lim" -gt "$l" ] && lim=$l
	local t0; t0=$(date +%s%N)
	timeout -k 5 "$lim" "$@"; local rc=$?
	echo "   [$(( ($(date +%s%N) - t0) / 1000000 )) ms, exit $rc, limit ${lim}s] $*" | tee -a "$W/steps.txt" >&2
	return $rc
}

# cuDNN: the system's, or the one PyTorch ships (nvidia-cudnn wheels)
if ldd "$KJ_PIPELINE_WORKER" 2>/dev/null | grep -q "not found"; then
	for d in $(python3 - <<'P' 2>/dev/null
import glob, os, site
for s in site.getsitepackages():
    for d in glob.glob(os.path.join(s, "nvidia", "*", "lib")) + glob.glob(os.path.join(s, "torch", "lib")):
        print(d)
P
	) /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
		[ -d "$d" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
	done
fi
ldd "$KJ_PIPELINE_WORKER" | grep -E "cudnn|cublasLt|not found" | tee "$W/ldd.txt"
nvidia-smi --query-gpu=name,driver_version,power.draw,clocks.sm,temperature.gpu --format=csv,noheader | tee "$W/gpu.txt"

echo "== idle power (kjoule power --idle, 5 s)"
step 30 "$kj" power --idle --db "$W/idle.kjdb" 2>&1 | tail -2
idle=(--idle-db "$W/idle.kjdb")
[ -s "$W/idle.kjdb" ] || idle=()

for part in $parts; do
case $part in
tests)
	echo "== GPU tests"
	step 180 "$KJ_BUILD/tests/gpu/pipeline/test_pipeline_gpu" > "$W/gpu_tests.log" 2>&1
	echo "== shipped conv shapes against torchvision's own modules (CPU)"
	step 120 python3 scripts/gen_pipelines.py --check >> "$W/gpu_tests.log" 2>&1
	grep -E "^(ok|FAIL)|failure|skipped|same|DIFFER|Error" "$W/gpu_tests.log" | tail -30
	;;
truth)
	for b in ${TRUTH_BATCHES:-1 32}; do
		echo "== truth check, ResNet-50 batch $b: end to end under kjoule run (ranges for the model's children)"
		step 180 "$kj" run --force -o "$W/r50_b$b.kjdb" ${TRUTH_RUN_ARGS:---snapshot-graphs} -- python3 examples/torchvision_nvtx.py --batch "$b" \
			--module-depth 1 ${TRUTH_GRAPH:+--graph} ${TRUTH_CL:+--channels-last} --iters 20 --warmup 10 \
			--min-seconds 3 > "$W/run_b$b.log" 2>&1
		grep '^{' "$W/run_b$b.log" | tail -1 | tee "$W/e2e_b$b.json"
		grep -iE "error|warning" "$W/run_b$b.log" | head -5
		step 60 "$kj" power --idle --duration 3 --db "$W/r50_b$b.kjdb" > /dev/null 2>&1
		step 60 "$kj" compare "$W/r50_b$b.kjdb" --json > "$W/compare_b$b.json" 2> "$W/compare_b$b.err"
		step 60 "$kj" compare "$W/r50_b$b.kjdb" > "$W/compare_b$b.txt" 2>&1
		echo "== truth check, batch $b: the shipped pipeline, layer by layer"
		# variants: the fastest convolutions (default); cuDNN's heuristic ones (TRUTH_YAML_HEUR); in
		# NCHW the batch norm one plane a block, as PyTorch's eval kernel runs it (--bn-kernel plane)
		variants=fastest; [ -n "${TRUTH_YAML_HEUR:-}" ] && variants+=" heuristic"
		[ -z "${TRUTH_CL:-}" ] && variants+=" plane"
		for v in $variants; do
			case $v in
			fastest) d=yaml_b$b; a=(--conv-algo fastest) ;;
			heuristic) d=yaml_heur_b$b; a=(--conv-algo heuristic) ;;
			plane) d=yaml_plane_b$b; a=(--conv-algo fastest --bn-kernel plane) ;;
			esac
			[ -z "${TRUTH_NO_YAML:-}" ] && step 200 "$kj" pipeline configs/pipelines/resnet50.yml --batch "$b" \
				${TRUTH_CL:+--layout nhwc} "${a[@]}" --energy-seconds "${TRUTH_YAML_ES:-0.3}" --iters 300 \
				"${idle[@]}" --timeout 60 --out "$W/$d" > "$W/$d.log" 2>&1
			tail -2 "$W/$d.log"
		done
		echo "== truth check, batch $b: --from the run (depth 1: the model's children)"
		step 200 "$kj" pipeline --from "$W/r50_b$b.kjdb" --layers 1 --energy-seconds 1 "${idle[@]}" \
			--timeout 60 --out "$W/from_b$b" > "$W/from_b$b.log" 2>&1
		tail -4 "$W/from_b$b.log"
		if [ -n "${TRUTH_FROM_NOSNAP:-}" ]; then
			echo "== truth check, batch $b: --from again without the run's buffer snapshot (replay fill alone)"
			cp "$W/r50_b$b.kjdb" "$W/r50_nosnap_b$b.kjdb"
			python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print("snapshot rows dropped:", c.execute("DELETE FROM snapshot").rowcount); c.commit()' "$W/r50_nosnap_b$b.kjdb"
			step 200 "$kj" pipeline --from "$W/r50_nosnap_b$b.kjdb" --layers 1 --energy-seconds 1 "${idle[@]}" \
				--timeout 60 --out "$W/from_nosnap_b$b" > "$W/from_nosnap_b$b.log" 2>&1
			tail -2 "$W/from_nosnap_b$b.log"
		fi
		if [ -n "${TRUTH_FROM_LEGACY:-}" ]; then
			echo "== truth check, batch $b: --from again on the replay fill KJ_REPLAY_FILL=${TRUTH_FROM_FILL:-legacy}"
			step 200 env KJ_REPLAY_FILL=${TRUTH_FROM_FILL:-legacy} "$kj" pipeline --from "$W/r50_b$b.kjdb" --layers 1 --energy-seconds 1 \
				"${idle[@]}" --timeout 60 --out "$W/from_legacy_b$b" > "$W/from_legacy_b$b.log" 2>&1
			tail -2 "$W/from_legacy_b$b.log"
		fi
	done
	;;
repeat)
	echo "== repeatability: 6 phases >= 10 us, 5 separate runs"
	cat > "$W/repeat.yml" <<'Y'
pipelines:
  - name: repeat
    precision: fp16
    params: {batch: 32}
    phases:
      - {name: r50.layer1.conv2, type: conv, C: 64, H: 56, W: 56, M: 64, R: 3, S: 3, pad: 1}
      - {name: r50.layer3.conv1, type: conv, C: 1024, H: 14, W: 14, M: 256, R: 1, S: 1}
      - {name: vit.fc1, type: matmul, M: 3072, K: 768, N: 197*8}
      - {name: gemm4096, type: matmul, M: 4096, K: 4096, N: 4096}
      - {name: vit.ln, type: norm, op: layer, N: 197*32, C: 768}
      - {name: relu.big, type: act, op: relu, C: 256, H: 56, W: 56}
Y
	for i in 1 2 3 4 5; do
		step 60 "$kj" pipeline "$W/repeat.yml" --energy-seconds 1.5 "${idle[@]}" --peak-tflops 1 --peak-gbs 1 \
			--out "$W/repeat_$i" > "$W/repeat_$i.log" 2>&1
	done
	;;
sweep)
	echo "== every shipped pipeline at batch 1"
	step 580 "$kj" pipeline configs/pipelines/*.yml --batch 1 --energy-seconds 0.3 "${idle[@]}" --timeout 60 \
		--out "$W/sweep" > "$W/sweep.log" 2>&1
	grep -E "^==|sequential|FAILED|ceilings" "$W/sweep.log" | head -60
	;;
*) echo "unknown part $part" ;;
esac
done

[ -f "$W/sweep/summary.csv" ] && cp "$W/sweep/summary.csv" "$OUT/sweep_summary.csv"
python3 - "$W" "$OUT/pipeline_layers_$tag.json" "$parts" <<'P'
import csv, glob, json, math, os, sys, datetime
W, out, parts = sys.argv[1], sys.argv[2], sys.argv[3]
def rd(p):
    try:
        return open(p).read()
    except OSError:
        return None
def jl(p):
    try:
        t = rd(p)
        return json.loads(t) if t else None
    except Exception:
        return None
def summary(d):
    p = os.path.join(W, d, "summary.csv")
    return list(csv.DictReader(open(p))) if os.path.exists(p) else []
def phases(d, name):
    p = os.path.join(W, d, name + ".phases.csv")
    return list(csv.DictReader(open(p))) if os.path.exists(p) else []
sys.path.insert(0, "scripts/gpu")
from json_find import find  # noqa: E402
from repeat_cv import repeat_cv  # noqa: E402
def f(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None
R = {"device": (rd(os.path.join(W, "gpu.txt")) or "").strip(), "date": datetime.datetime.utcnow().isoformat() + "Z",
     "command": "bash scripts/gpu/pipeline_layers.sh " + parts, "steps": (rd(os.path.join(W, "steps.txt")) or "").splitlines(),
     "ldd": (rd(os.path.join(W, "ldd.txt")) or "").splitlines()}
table = []
if "tests" in parts:
    t = rd(os.path.join(W, "gpu_tests.log")) or ""
    R["gpu_tests"] = [l for l in t.splitlines() if l.startswith(("ok", "FAIL"))]
    table.append(("gpu tests", "%d ok, %d FAIL" % (sum(l.startswith("ok ") for l in R["gpu_tests"]),
                                                 sum(l.startswith("FAIL") for l in R["gpu_tests"]))))
    R["shape_check"] = [l for l in t.splitlines() if "torchvision convs" in l or l.startswith("  only")]
    table.append(("shapes vs torchvision", "%d same, %d DIFFER" % (sum(l.endswith("same") for l in R["shape_check"]),
                                                              sum(l.endswith("DIFFER") for l in R["shape_check"]))))
if "truth" in parts:
    R["truth"] = {}
    for b in (1, 32):
        e2e = jl(os.path.join(W, "e2e_b%d.json" % b)) or {}
        cmp = jl(os.path.join(W, "compare_b%d.json" % b)) or {}
        y = summary("yaml_b%d" % b)
        fr = summary("from_b%d" % b)
        rec = {"end_to_end_script": e2e,
               "compare": {k: find(cmp, k) for k in ("wall_us", "span_us", "busy_us", "kernel_sum_us", "energy_measured_j",
                                                     "energy_measured_unc_j", "energy_idle_j")},
               "yaml_sum": y[0] if y else None, "from_sum": fr[0] if fr else None,
               "yaml_phases": phases("yaml_b%d" % b, "resnet50"),
               "env": {k: os.environ.get(k) for k in ("TRUTH_GRAPH", "TRUTH_CL", "TRUTH_NO_YAML", "TRUTH_YAML_ES",
                                                     "TRUTH_YAML_HEUR", "TRUTH_FROM_LEGACY", "TRUTH_RUN_ARGS", "TRUTH_FROM_NOSNAP")},
               "from_phases": phases("from_b%d" % b, "forward_1") or [row for p in glob.glob(os.path.join(W, "from_b%d" % b, "*.phases.csv")) for row in csv.DictReader(open(p))]}
        R["truth"]["batch%d" % b] = rec
        e_ms = f(e2e.get("forward_ms_events"))
        busy = f(rec["compare"]["busy_us"])
        ys = f(y[0]["seq_latency_ms"]) if y else None
        fs = f(fr[0]["seq_latency_ms"]) if fr else None
        ee = f(e2e.get("energy_j_per_forward_nvml")) or f(rec["compare"]["energy_measured_j"])
        ye = f(y[0]["seq_energy_j"]) if y else None
        fe = f(fr[0]["seq_energy_j"]) if fr else None
        def pct(a, b_):
            return "%+.1f%%" % (100 * (a / b_ - 1)) if a and b_ else "-"
        bm = busy / 1e3 if busy else None
        table.append(("r50 b%d time ms" % b, "e2e %s (busy %s) | yaml %s (%s; busy %s) | from %s (%s; busy %s)" % (
            "%.3f" % e_ms if e_ms else "-", "%.3f" % bm if bm else "-", "%.3f" % ys if ys else "-",
            pct(ys, e_ms), pct(ys, bm), "%.3f" % fs if fs else "-", pct(fs, e_ms), pct(fs, bm))))
        # the energy of the GPU's work: measured less compare's idle energy of the gaps (awake idle
        # power x non-kernel time), what a sum of layers can be held to in a host-bound program
        ei = f(rec["compare"]["energy_idle_j"])
        em = f(rec["compare"]["energy_measured_j"])
        ew = em - ei if em and ei is not None and em > ei else None
        rec["energy_minus_idle_j"] = ew
        table.append(("r50 b%d energy J" % b, "e2e %s (less idle %s) | yaml %s (%s; %s) | from %s (%s; %s)" % (
            "%.4f" % ee if ee else "-", "%.4f" % ew if ew else "-", "%.4f" % ye if ye else "-", pct(ye, ee),
            pct(ye, ew), "%.4f" % fe if fe else "-", pct(fe, ee), pct(fe, ew))))
        for d, label in (("yaml_heur", "yaml heuristic convs"), ("yaml_plane", "yaml, bn per plane"), ("from_nosnap", "from, no snapshot"), ("from_legacy", "from, fill " + os.environ.get("TRUTH_FROM_FILL", "legacy"))):
            v = summary("%s_b%d" % (d, b))
            if not v:
                continue
            rec[d + "_sum"] = v[0]
            vt, ve = f(v[0]["seq_latency_ms"]), f(v[0]["seq_energy_j"])
            table.append(("r50 b%d %s" % (b, label), "%s ms (%s; busy %s) | %s J (%s; %s)" % (
                "%.3f" % vt if vt else "-", pct(vt, e_ms), pct(vt, bm), "%.4f" % ve if ve else "-", pct(ve, ee),
                pct(ve, ew))))
if "repeat" in parts:
    runs = [phases("repeat_%d" % i, "repeat") for i in range(1, 6)]
    runs = [r for r in runs if r]
    # the sample standard deviation over the mean (scripts/gpu/repeat_cv.py, tested on the CPU)
    R["repeat"] = {"runs": runs, "cv": repeat_cv(runs)}
    for name, c in R["repeat"]["cv"].items():
        table.append(("cv " + name, "%.2f%% energy over %d runs, %.4f ms" % (100 * c["energy_cv"], c["n"], c["latency_ms"])))
if "sweep" in parts:
    s = summary("sweep")
    R["sweep"] = {"summary": s, "phases": {r["name"]: phases("sweep", r["name"]) for r in s}}
    for r in s:
        table.append((r["name"], "%s %s ms %s J bn %s pp %s J/item" % (r["status"], r["seq_latency_ms"], r["seq_energy_j"],
                                                                     r["bottleneck_phase"][:24], r["pp_energy_per_item_j"])))
json.dump(R, open(out, "w"), indent=1)
print("\n== summary (%s)" % out)
for k, v in table:
    print("%-28s %s" % (k[:28], v))
P
tar czf "$OUT/logs.tar.gz" -C "$W" --exclude='*.kjdb' . 2>/dev/null
ls "$OUT" | head -8
