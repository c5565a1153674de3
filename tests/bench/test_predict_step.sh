# bench/predict_step/run.py on the CPU: the stand-in worker answers the sweeps (f_us = 3 + product of
# the shape / 1000, b_us = 2 f_us, energies 50x), so every operator `kjoule predict --model` needs is
# swept on a grid around the model's shape but not on it, fitted and predicted, then measured at the
# model's shape alone (never fitted) to judge each prediction; the traced part is left out (--no-trace),
# made to fail (a stand-in program with no GPU work: skipped and recorded, no crash), or read from
# the shipped run (--run).
set -u
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
python3 -c 'import ctypes; ctypes.CDLL("libxgboost.so.0")' 2>/dev/null || { echo "libxgboost missing: skipped"; exit 77; }
export KJ_SWEEP_WORKER="$SRC/tests/tools/sweep_worker_standin.py" KJ_BENCH_DEVICE=cpu-standin
B="$SRC/bench/predict_step/run.py"
G="NVIDIA H100 80GB HBM3"

# 1. sweep + fit + predict of the default model (24 x 1024, seq 1024, batch 4, bf16), no trace
expect 0 python3 "$B" --kjoule "$KJ" --no-trace --gpu-name "$G" --out-dir "$T/a" -o "$T/a.json"
tail -1 "$T/out" | grep -q "^step: predicted [0-9.]* ms, [0-9.]* J; measured - ms" || fail "table last: $(tail -2 "$T/out")"
[ -e "$T/a.json.tmp" ] && fail "temporary result left behind"
python3 - "$T/a.json" "$KJ" "$T/a" <<'P' || fail "no-trace result: $(head -c 400 "$T/a.json")"
import json, math, subprocess, sys
def strict(x):
    raise ValueError("non-finite number in the result: " + x)
r = json.load(open(sys.argv[1]), parse_constant=strict)
assert r["benchmark"] == "predict_step" and r["device"] == "cpu-standin" and r["date"] and r["command"]
assert "git_commit" in r and r["commands"] and r["skipped"] == [], r["skipped"]
assert r["model"]["layers"] == 24 and r["model"]["precision"] == "bf16" and "layers: 24" in r["model"]["yml"]
# the operators are the ones predict --model lists for this model, each swept and predicted
want = json.loads(subprocess.run([sys.argv[2], "predict", "--models", sys.argv[3] + "/empty_models",
                                  "--model", sys.argv[3] + "/model.yml", "--gpu", "x", "--json"],
                                 capture_output=True, text=True).stdout)["operators"]
assert [(e["op"], e["shape"], e["count"]) for e in r["operators"]] == \
       [(w["op"], w["shape"], w["count"]) for w in want]
ops = {e["op"] for e in r["operators"]}
assert {"embedding", "layernorm", "linear1", "flash_atten", "linear_final", "parallel_cross_entropy_128",
        "lastStage_optimizer", "master_copies"} <= ops, ops  # gpt_train.py's default: fp32 masters, copies apart
tp = te = 0.0
for e in r["operators"]:
    assert e["sweep"]["rows_measured"] == 4, e
    assert e["sweep"]["rc"] == 0
    p = e["predicted"]
    keys = ["fwd_us", "fwd_uj"] + (["bwd_us", "bwd_uj"] if e["backward"] else [])
    assert all(p[k] is not None and p[k] > 0 for k in keys), e
    # the sweep's row at the model's shape is the stand-in's function there
    f = 3 + math.prod(int(x) for x in e["shape"].split(",")) / 1000
    m = e["measured_at_shape"]
    assert abs(m["fwd_us"] - f) < 1e-3 * f and abs(m["fwd_uj"] - 50 * f) < 1e-3 * 50 * f, (e["op"], m, f)
    # its power, and the SM clock the stand-in reported for the energy windows, read from the log
    assert abs(m["fwd_w"] - 50) < 0.1 and m["fwd_mhz"] == 1755, (e["op"], m)
    assert (m["bwd_mhz"] == 1980) if e["backward"] else True, (e["op"], m)
    # ... and the warm and cold energies the row's is the mean of (the stand-in: 40 and 60 x f)
    assert abs(m["fwd_uj_warm"] - 40 * f) < 1e-3 * 40 * f and abs(m["fwd_uj_cold"] - 60 * f) < 1e-3 * 60 * f, (e["op"], m)
    if e["backward"]:
        assert abs(m["bwd_us"] - 2 * f) < 1e-3 * f
    # the grid lies around the model's shape, not on it: b, l and encoders either side of the
    # model's value (b = 1 from 1 up), the columns that pick the kernels at it; the fitted rows hold
    # no row of the model's shape and predict finds it inside every column's range
    g = e["grid"]
    for c, v, s, st, en in zip(e["columns"], map(int, e["shape"].split(",")), g["starts"], g["steps"], g["ends"]):
        if c in ("b", "l", "encoders") and v > 1:
            assert s < v < en and (v - s) % st, (e["op"], c, s, st, v, en)
        elif c not in ("b", "l", "encoders"):
            assert s == v == en, (e["op"], c, s, v, en)
    assert e["grid_holds_step_shape"] is False and e["fit_rows_hold_step_shape"] is False, e
    assert e["predicted_in_grid"] is True, e
    # the regressor's own error at the step's shape, against the shape measured alone after the fit
    for k in keys:
        want = 100 * (p[k] - m[k]) / m[k]
        assert abs(e["error_at_shape_pct"][k] - want) < 1e-6, (e["op"], k, e["error_at_shape_pct"], want)
        assert abs(want) < 5, (e["op"], k, want)
    tp += e["step_time_us"]
    te += e["step_energy_uj"]
assert r["step_shapes"]["off_grid"] is True and r["step_shapes"]["in_a_grid"] == [], r["step_shapes"]
assert r["step_shapes"]["outside_a_range"] == [], r["step_shapes"]
assert {e["op"]: e["backward"] for e in r["operators"]}["lastStage_optimizer"] is False
assert {e["op"]: e["backward"] for e in r["operators"]}["master_copies"] is False
pr = r["predicted"]
assert pr["missing_models"] == "" and abs(pr["time_us"] - tp) < 1e-6 * tp and abs(pr["energy_uj"] - te) < 1e-6 * te
s = r["sum_of_sweep_measurements"]
assert s["complete"] and abs(s["time_us"] - tp) < 0.05 * tp
# not measured: no step, errors null (never 0), no gap
assert r["measured"] is None and r["gap"] is None
assert r["errors"]["time_pct"] is None and r["errors"]["energy_pct"] is None
P

# 2. the traced part failing: a stand-in python whose "training" launches nothing (kjoule run
#    succeeds, compare finds nothing to compare): recorded under skipped, the rest still reported
cat >"$T/py" <<'S'
#!/bin/sh
case "$*" in *--model-yml*) exec python3 "$@";; esac
echo '{"program": "gpt_train", "ms_per_step_median": 1.0}'
S
chmod +x "$T/py"
expect 0 python3 "$B" --kjoule "$KJ" --python "$T/py" --layers 2 --hidden 256 --heads 4 --seq 128 \
	--batch 2 --steps 2 --warmup 1 --gpu-name "$G" --out-dir "$T/b" -o "$T/b.json"
python3 - "$T/b.json" <<'P' || fail "failed trace: $(head -c 600 "$T/b.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["measured"] is None and r["errors"]["time_pct"] is None and r["errors"]["energy_pct"] is None
assert any(s.startswith("kjoule compare: exit") for s in r["skipped"]), r["skipped"]
run = [c for c in r["commands"] if c["what"] == "kjoule run"][0]
assert run["rc"] == 0 and "--iteration-range step" in run["command"] and "--steps 2 --warmup 1" in run["command"]
assert r["predicted"]["time_us"] > 0
# the program ran once without kjoule first, long enough for NVML's counter, and its line is kept
un = [c for c in r["commands"] if c["what"] == "untraced program"][0]
assert un["rc"] == 0 and "--min-seconds 3" in un["command"] and "kjoule" not in un["command"].split()[0]
assert r["untraced"]["ms_per_step_median"] == 1.0, r["untraced"]
P
grep -q '"program": "gpt_train"' "$T/b/trace.log" || fail "trace.log lacks the program's output"

# 3. an existing run (the shipped BLOOM-560M forward, not this model: the arithmetic only)
expect 0 python3 "$B" --kjoule "$KJ" --run "$SRC/examples/runs/bloom560m.kjdb" --warmup 1 --norm rms \
	--layers 2 --hidden 256 --heads 4 --seq 128 --batch 2 --gpu-name "$G" --out-dir "$T/c" -o "$T/c.json"
python3 - "$T/c.json" "$T/c/compare/iterations.csv" <<'P' || fail "existing run: $(head -c 600 "$T/c.json")"
import csv, json, statistics, sys
r = json.load(open(sys.argv[1]))
m, p, e = r["measured"], r["predicted"], r["errors"]
assert "RMSlayernorm" in {o["op"] for o in r["operators"]}
its = [x for x in csv.DictReader(open(sys.argv[2])) if x["skipped"] == "0"]
assert len(its) == m["iterations"]["measured"] == len(m["walls_us"])
med = statistics.median(float(x["wall_us"]) for x in its)
assert abs(m["step_time_us_median"] - med) < 1e-6 * med
assert abs(e["time_pct_vs_median_wall"] - 100 * (p["time_us"] - med) / med) < 1e-6
mean = m["step_time_us_mean"]  # compare's mean wall: the run's time over the measured steps
assert mean > 0 and abs(e["time_pct"] - 100 * (p["time_us"] - mean) / mean) < 1e-6
ej = m["step_energy_j_mean"]
assert ej > 0 and abs(e["energy_pct"] - 100 * (p["energy_uj"] / 1e6 - ej) / ej) < 1e-6
assert r["compare"]["top_kernels"] and r["compare"]["top_kernels"][0]["measured_us"] > 0
tiers = {t["tier"]: t for t in r["gap"]["by_tier"]}
assert tiers["gemm"]["measured_us"] > 0 and tiers["gemm"]["predicted_minus_measured_us"] is not None
assert tiers["attention"]["measured_us"] == 0  # the run has no attention kernel
assert r["gap"]["wall_minus_kernel_busy_us"] > 0
# kjoule predict --run judged the same step: the same errors as the bench's own
pa = r["predict_against_run"]
assert abs(pa["errors_pct"]["time"] - e["time_pct"]) < 1e-4 * abs(e["time_pct"]), (pa["errors_pct"], e)
assert abs(pa["errors_pct"]["energy"] - e["energy_pct"]) < 1e-4 * abs(e["energy_pct"])
P

# 4. bad input names the argument
expect 2 python3 "$B" --kjoule "$KJ" --layers 0 --no-trace --out-dir "$T/d" -o "$T/d.json"
grep -q -- "--layers must be a positive integer" "$T/err" || fail "bad --layers: $(cat "$T/err")"
# 5. the measured step only (--no-sweep), eager and --compile, judged by programs.py against the
#    no-trace result of part 1 (the shipped run stands for both programs: the arithmetic only)
expect 0 python3 "$B" --kjoule "$KJ" --run "$SRC/examples/runs/bloom560m.kjdb" --warmup 1 --no-sweep \
	--gpu-name "$G" --out-dir "$T/e" -o "$T/e.json"
expect 0 python3 "$B" --kjoule "$KJ" --python "$T/py" --no-sweep --compile --steps 2 --warmup 1 \
	--gpu-name "$G" --out-dir "$T/f" -o "$T/f.json"
expect 0 python3 "$B" --kjoule "$KJ" --python "$T/py" --no-sweep --compile --cuda-graph --steps 2 --warmup 1 \
	--gpu-name "$G" --out-dir "$T/g" -o "$T/g.json"
python3 - "$T/e.json" "$T/f.json" "$T/g.json" <<'P' || fail "--no-sweep: $(head -c 600 "$T/f.json")"
import json, sys
e, f, g = (json.load(open(x)) for x in sys.argv[1:])
for r in (e, f, g):  # nothing swept, fitted or predicted
    assert r["operators"] == [] and r["predicted"] is None and r["settings"]["sweeps"] is False, r["settings"]
    assert not any(c["what"].startswith(("sweep", "kjoule fit", "kjoule predict")) for c in r["commands"])
assert e["settings"]["program"] == "eager" and e["measured"]["step_time_us_mean"] > 0
assert f["settings"]["program"] == "torch.compile"
for what in ("untraced program", "kjoule run"):
    c = [c for c in f["commands"] if c["what"] == what][0]
    assert "--compile" in c["command"].split() and "--cuda-graph" not in c["command"].split(), c
    c = [c for c in g["commands"] if c["what"] == what][0]
    assert {"--compile", "--cuda-graph"} <= set(c["command"].split()), c
assert g["settings"]["program"] == "torch.compile + CUDA graph", g["settings"]
P
P=$SRC/bench/predict_step/programs.py
expect 0 python3 "$P" --sweeps "$T/a.json" --traced "$T/e.json" --traced "$T/f.json" -o "$T/p.json"
grep -q "^eager " "$T/out" || fail "programs table: $(cat "$T/out")"
python3 - "$T/p.json" "$T/a.json" "$T/e.json" <<'P' || fail "programs.py: $(head -c 600 "$T/p.json")"
import json, sys
def strict(x):
    raise ValueError("non-finite number in the result: " + x)
r = json.load(open(sys.argv[1]), parse_constant=strict)
a, e = json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
assert r["device"] == "cpu-standin" and r["date"] and r["command"].startswith("bench/predict_step/programs.py")
t, j = a["predicted"]["time_us"], a["predicted"]["energy_uj"] / 1e6
assert r["predicted"]["time_us"] == t and abs(r["predicted"]["energy_j"] - j) < 1e-9
eager, comp = r["programs"]
m = e["measured"]
assert eager["program"] == "eager"
assert abs(eager["errors_pct"]["time_vs_traced_mean_wall"] - 100 * (t - m["step_time_us_mean"]) / m["step_time_us_mean"]) < 0.01
assert abs(eager["errors_pct"]["energy_vs_traced_mean"] - 100 * (j - m["step_energy_j_mean"]) / m["step_energy_j_mean"]) < 0.01
tiers = {x["tier"]: x for x in eager["tiers"]}
gemm_pred = sum(o["step_time_us"] for o in a["operators"] if o["tier"] == "gemm")
assert abs(tiers["gemm"]["predicted_us"] - gemm_pred) < 1e-6 * gemm_pred
assert tiers["attention"]["measured_us"] == 0 and tiers["attention"]["predicted_minus_measured_us"] > 0
# the sweep rows' energy counted at the mean, warm and cold (stand-in: 50, 40 and 60 x f) and the GEMMs alone cold
sw = r["sweep_rows_energy_j"]
assert abs(sw["warm"] / sw["mean"] - 0.8) < 1e-3 and abs(sw["cold"] / sw["mean"] - 1.2) < 1e-3, sw
assert sw["mean"] < sw["gemm_cold"] < sw["cold"], sw
ej = e["measured"]["step_energy_j_mean"]
assert abs(eager["energy_of_sweep_rows_pct"]["cold"] - 100 * (sw["cold"] - ej) / ej) < 0.01
# the stand-in program measured nothing: said so, no errors invented
assert comp["program"] == "torch.compile" and "not_measured" in comp and "errors_pct" not in comp
P
# another shape or another GPU is refused, naming what differs
expect 1 python3 "$P" --sweeps "$T/a.json" --traced "$T/c.json" -o "$T/q.json"
grep -q "model layers 2 is not the sweeps' 24" "$T/err" || fail "other shape: $(cat "$T/err")"
[ -e "$T/q.json" ] && fail "a refused comparison wrote a result"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r["device"]="NVIDIA H200, 580.159.04"; json.dump(r, open(sys.argv[2], "w"))' "$T/e.json" "$T/e200.json"
expect 1 python3 "$P" --sweeps "$T/a.json" --traced "$T/e200.json" -o "$T/q.json"
grep -q "e200.json: measured on 'NVIDIA H200, 580.159.04', the sweeps on 'cpu-standin'" "$T/err" || fail "other GPU: $(cat "$T/err")"
[ -e "$T/q.json" ] && fail "a refused comparison wrote a result"
# 6. kjoule predict --model ... --run: the same operator sum against a run's measured step, in the
#    product (the shipped BLOOM forward stands for the step: the arithmetic, the tiers, the GPU check)
R=$SRC/examples/runs/bloom560m.kjdb
expect 0 "$KJ" predict --models "$T/a/models" --model "$T/a/model.yml" --run "$R" --skip 1 --json
cp "$T/out" "$T/against.json"
"$KJ" compare "$R" --skip 1 --json --quiet >"$T/cmp.json" || fail "compare of the shipped run"
python3 - "$T/against.json" "$T/cmp.json" <<'P' || fail "predict --run: $(head -c 800 "$T/against.json")"
import json, sys
def strict(x):
    raise ValueError("non-finite number in the result: " + x)
p = json.load(open(sys.argv[1]), parse_constant=strict)
c = json.load(open(sys.argv[2]))
a = p["against"]
assert a["iterations"] == c["iterations"] and a["iterations"]["skipped"] == 1
m = a["measured"]
close = lambda x, y: abs(x - y) <= 1e-6 * abs(y)  # predict writes 8 significant digits
assert close(m["step_time_us"], c["wall_us"]) and close(m["step_energy_j"], c["energy_measured_j"])
assert close(m["kernel_sum_us"], c["kernel_sum_us"])
t, e = p["time_us"], p["energy_uj"] / 1e6
assert close(a["errors_pct"]["time"], 100 * (t - c["wall_us"]) / c["wall_us"])
assert close(a["errors_pct"]["energy"], 100 * (e - c["energy_measured_j"]) / c["energy_measured_j"])
assert close(a["errors_pct"]["time_vs_kernel_sum"], 100 * (t - c["kernel_sum_us"]) / c["kernel_sum_us"])
assert a["errors_not_taken"] is None
# the run is an H200's, the models an H100's: said
assert a["device"] == "NVIDIA H200" and a["gpu_matches"] is False
# per tier: the operators' step totals where their kernels land, beside the run's own tier times
tiers = {x["tier"]: x for x in a["tiers"]}
want = {}
for r in p["operators"]:
    tier = {"linear1": "gemm", "linear2": "gemm", "linear3": "gemm", "linear4": "gemm", "linear_final": "gemm",
            "flash_atten": "attention", "layernorm": "norm", "parallel_cross_entropy_128": "reduction",
            "embedding": "elementwise", "res_add": "elementwise", "gelu": "elementwise"}.get(r["op"], "other")
    want[tier] = want.get(tier, 0.0) + r["count"] * (r["fwd_us"] + (r["bwd_us"] if r["backward"] else 0.0))
for tier, v in want.items():
    assert abs(tiers[tier]["predicted_us"] - v) < 1e-6 * v, (tier, tiers[tier], v)
ct = {x["tier"]: x["measured_us"] for x in c["tiers"]}
for tier, x in tiers.items():
    assert abs(x["measured_us"] - ct.get(tier, 0.0)) <= 1e-6 * abs(ct.get(tier, 0.0)), tier
    assert abs(x["predicted_minus_measured_us"] - (x["predicted_us"] - x["measured_us"])) <= 1e-6 * max(x["predicted_us"], x["measured_us"]), x
assert tiers["attention"]["measured_us"] == 0 and "flash_atten" in tiers["attention"]["operators"]
assert tiers["memset"]["operators"] == "" and tiers["memset"]["predicted_us"] == 0  # no operator lands there
assert abs(sum(x["predicted_us"] for x in tiers.values()) - t) < 1e-6 * t
P
expect 0 "$KJ" predict --models "$T/a/models" --model "$T/a/model.yml" --run "$R" --skip 1
grep -q "^against .*bloom560m.kjdb (region 'forward': 54 iteration(s) measured, 1 skipped; NVIDIA H200)" "$T/out" &&
	grep -q "^  time a step (ms) .* %$" "$T/out" && grep -q "^  ! the run's GPU (NVIDIA H200) is not the one" "$T/out" &&
	grep -q "^  gemm .* linear1, linear2, linear3, linear4, linear_final$" "$T/out" ||
	fail "predict --run text: $(cat "$T/out")"
# the shipped graph run's loop spans under two energy-counter updates: no energy error from it, said
expect 0 "$KJ" predict --models "$T/a/models" --model "$T/a/model.yml" --run "$SRC/tests/data/gpt_graph_short.kjdb" --json
python3 - "$T/out" <<'P' || fail "too-short run: $(head -c 600 "$T/out")"
import json, sys
a = json.load(open(sys.argv[1]))["against"]
assert a["measured"]["energy_too_short"] is True and a["measured"]["step_energy_j"] > 0
assert a["errors_pct"]["energy"] is None and a["errors_pct"]["time"] is not None
assert "energy counter" in a["errors_not_taken"]
P
# a run that cannot be read or compared: named, exit 1, and no table printed before the failure
expect 1 "$KJ" predict --models "$T/a/models" --model "$T/a/model.yml" --run "$T/none.kjdb"
grep -q "none.kjdb" "$T/err" && [ ! -s "$T/out" ] || fail "missing run: $(cat "$T/err") / $(head -3 "$T/out")"
expect 1 "$KJ" predict --models "$T/a/models" --model "$T/a/model.yml" --run "$R" --skip 500
grep -q "skip 500 leaves no iteration" "$T/err" && [ ! -s "$T/out" ] || fail "--skip past the run: $(cat "$T/err")"
expect 2 "$KJ" predict --models "$T/a/models" --model "$T/a/model.yml" --skip 1
grep -q -- "--region and --skip choose the iterations of --run" "$T/err" || fail "--skip alone: $(cat "$T/err")"
finish
