# kjoule fit and predict on sweep data drawn from a known function (the stand-in worker's
# f_us = 3 + product(shape)/1000, b_us = 2 f_us, energies 50x): held-out error bounded,
# predictions of unsampled shapes close to the function, a transformer step as a sum.
set -u
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
export KJ_SWEEP_WORKER="$SRC/tests/tools/sweep_worker_standin.py"
cat >"$T/lin.yml" <<'Y'
{ "kernel_name": "linear1", "columns_name": ['mp', 'b', 'l', 'dim', 'F_dur(us)', 'B_dur(us)'],
  "first_n_column": 4, "starts": [1, 1, 256, 512], "steps": [2, 2, 256, 512],
  "ends": [4, 8, 2048, 4096], "operators": ['mul', 'mul', 'add', 'add'], "run": "get_all" }
Y
expect 0 "$KJ" sweep "$T/lin.yml" --out "$T/s" --gpu-name "NVIDIA H100 80GB HBM3" --energy
"$KJ" fit "$T/s/sampling_data" -o "$T/models" >"$T/out" 2>"$T/err"
rc=$?
if [ $rc != 0 ] && grep -q "XGBoost's library is not installed" "$T/err"; then
	echo "libxgboost missing: skipped"; exit 77
fi
[ $rc = 0 ] || fail "fit: exit $rc: $(cat "$T/err")"
has "NVIDIAH10080GBHBM3_linear1_fp16_fwd_time"
has "4 models in"
for m in fwd_time bwd_time fwd_energy bwd_energy; do
	[ -s "$T/models/NVIDIAH10080GBHBM3_linear1_fp16_$m.json" ] || fail "no model $m"
	grep -q "<svg" "$T/models/NVIDIAH10080GBHBM3_linear1_fp16_$m.svg" || fail "no svg $m"
done
# held-out error of every model under 10 %
python3 - "$T/models/models.json" <<'P' || fail "held-out MAPE above 10 %"
import json, sys
ms = json.load(open(sys.argv[1]))["models"]
assert len(ms) == 4
for m in ms:
    assert m["n_test"] > 20 and m["sm_count"] == 132 and m["sm_source"] == "known-GPU table", m
    assert m["mape_test_pct"] < 10, (m["model"], m["mape_test_pct"])
P
# shapes between the grid's points: within 15 % of the known function
for s in 2,2,768,1536 1,4,1280,2560 4,8,1792,3584; do
	"$KJ" predict --models "$T/models" --gpu "NVIDIA H100 80GB HBM3" --op linear1 --precision fp16 \
		--prop bwd --shape $s --json >"$T/p.json" 2>"$T/err" || fail "predict $s: $(cat "$T/err")"
	python3 - "$T/p.json" "$s" <<'P' || fail "predict $s: $(cat "$T/p.json")"
import json, sys, math
p = json.load(open(sys.argv[1]))
want = 2 * (3 + math.prod(int(x) for x in sys.argv[2].split(",")) / 1000)
assert abs(p["time_us"] - want) / want < 0.15, (p["time_us"], want)
assert abs(p["energy_uj"] - 50 * want) / (50 * want) < 0.15
assert p["time_mape_pct"] is not None
P
done
# a model fitted on other features is refused with the file and what to do
cp -r "$T/models" "$T/oldmodels"
python3 - "$T/oldmodels/models.json" <<'P'
import json, sys
d = json.load(open(sys.argv[1]))
for m in d["models"]:
    m.pop("features")
json.dump(d, open(sys.argv[1], "w"))
P
expect 1 "$KJ" predict --models "$T/oldmodels" --gpu "NVIDIA H100 80GB HBM3" --op linear1 --precision fp16 \
	--prop fwd --shape 1,4,1024,2048
grep -q "oldmodels/models.json: model .* features version 1, .* run kjoule fit again" "$T/err" ||
	fail "old features: $(cat "$T/err")"
# a time-only file beside one with energy: a shape in both keeps the energy of the one that has it
mkdir -p "$T/mix"
G=NVIDIAH10080GBHBM3
python3 - "$(ls "$T"/s/sampling_data/${G}_linear1_fp16*.csv | head -1)" "$T/mix/${G}_linear1_fp16_2_1.csv" \
	"$T/mix/${G}_linear1_fp16_2_2.csv" <<'P'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cols = list(rows[0].keys())
with open(sys.argv[2], "w", newline="") as f:  # time only, every shape
    w = csv.writer(f)
    w.writerow([c for c in cols if "energy" not in c])
    for r in rows:
        w.writerow([r[c] for c in cols if "energy" not in c])
with open(sys.argv[3], "w", newline="") as f:  # energy on every third shape
    w = csv.writer(f)
    w.writerow(cols)
    for r in rows[::3]:
        w.writerow([r[c] for c in cols])
P
expect 0 "$KJ" fit "$T/mix" -o "$T/mixmodels"
python3 - "$T/mixmodels/models.json" "$(ls "$T"/s/sampling_data/${G}_linear1_fp16*.csv | head -1)" <<'P' || fail "mixed files: $(cat "$T/mixmodels/models.json")"
import csv, json, sys
n = len(list(csv.DictReader(open(sys.argv[2]))))
ms = {(m["prop"], m["target"]): m for m in json.load(open(sys.argv[1]))["models"]}
assert ms[("fwd", "time")]["n_final"] == n, (ms[("fwd", "time")]["n_final"], n)
assert ms[("fwd", "energy")]["n_final"] == (n + 2) // 3, ms[("fwd", "energy")]["n_final"]
assert ms[("fwd", "time")]["n_final"] == ms[("fwd", "time")]["n_train"] + ms[("fwd", "time")]["n_test"]
P
# cross-validation picks the baseline form that fits: y = 2 l^1.5 dim^0.5 (a power law in the shape
# columns that FLOPs and bytes, both ~ b l dim, cannot draw) is the 'shape' form, all but exact
# layer-norm rows over b 1-4, l 256-2048, dim 512-4096: time t = 2 l^1.5 dim^0.5 / 1e4 (backward 2t);
# with "power", energies too: a power rising smoothly from 200 to 650 W with the bytes, times t
layernorm_grid() {
	python3 - "$1" "${2:-}" <<'P'
import sys
power = sys.argv[2] == "power"
with open(sys.argv[1], "w") as f:
    f.write("b,l,dim,F_dur(us),B_dur(us)%s,status\n" % (",F_energy(uJ),B_energy(uJ)" if power else ""))
    for b in (1, 2, 4):
        for l in range(256, 2049, 256):
            for d in range(512, 4097, 512):
                t = 2 * l ** 1.5 * d ** 0.5 / 1e4
                mb = b * l * d * 8 / 1e6
                p = 200 + 450 * mb / (mb + 40)
                e = ",%.6g,%.6g" % (p * t, p * 2 * t) if power else ""
                f.write("%d,%d,%d,%.6g,%.6g%s,ok\n" % (b, l, d, t, 2 * t, e))
P
}
mkdir -p "$T/pow"
layernorm_grid "$T/pow/${G}_layernorm_fp16_1_1.csv"
expect 0 "$KJ" fit "$T/pow" -o "$T/powmodels"
python3 - "$T/powmodels/models.json" <<'P' || fail "cross-validated form: $(cat "$T/powmodels/models.json")"
import json, sys
for m in json.load(open(sys.argv[1]))["models"]:
    assert m["baseline"] in ("shape", "shape2"), (m["svg"], m["baseline"], m["cv_mape_pct"])
    assert m["mape_test_pct"] < 0.5, (m["svg"], m["mape_test_pct"])
    cv = m["cv_mape_pct"]
    assert cv["flops_bytes+trees"] > cv["shape"], cv
P
# the error by size: rows under 100 us measured with +-20 % noise, longer ones with +-1 %: fit
# groups its out-of-sample errors by half-decades of the figure, and predict quotes the group a
# prediction falls in, larger than the model's mean for a short one and smaller for a long one
mkdir -p "$T/nz"
python3 - "$T/nz/${G}_layernorm_fp16_1_1.csv" <<'P'
import sys
with open(sys.argv[1], "w") as f:
    f.write("b,l,dim,F_dur(us),B_dur(us),status\n")
    i = 0
    for b in (1, 2, 4):
        for l in range(256, 2049, 256):
            for d in range(512, 4097, 512):
                t = 2 * l ** 1.5 * d ** 0.5 / 1e4
                i += 1
                u = (i * 2654435761 % 1000) / 500.0 - 1  # a fixed spread over [-1, 1)
                t *= 1 + (0.2 if t < 100 else 0.01) * u
                f.write("%d,%d,%d,%.6g,%.6g,ok\n" % (b, l, d, t, 2 * t))
P
expect 0 "$KJ" fit "$T/nz" -o "$T/nzmodels"
python3 - "$T/nzmodels/models.json" <<'P' || fail "error by size: $(cat "$T/nzmodels/models.json")"
import json, sys
m = [m for m in json.load(open(sys.argv[1]))["models"] if m["prop"] == "fwd" and m["target"] == "time"][0]
g = m["mape_by_size"]
assert all(b["n"] >= 5 and b["from"] < b["to"] for b in g), g
assert all(abs(g[k + 1]["from"] / g[k]["to"] - 1) < 1e-9 or g[k + 1]["from"] > g[k]["to"] for k in range(len(g) - 1)), g
assert sum(b["n"] for b in g) <= m["n_final"], (g, m["n_final"])
short = [b for b in g if b["to"] <= 100]
long_ = [b for b in g if b["from"] >= 316]
assert short and long_, g
assert min(b["mape_pct"] for b in short) > 3 * max(b["mape_pct"] for b in long_), g
P
for s in 2,256,2048 4,1792,3584; do
	expect 0 "$KJ" predict --models "$T/nzmodels" --gpu "NVIDIA H100 80GB HBM3" --op layernorm --precision fp16 \
		--prop fwd --shape $s --json
	python3 - "$T/out" "$T/nzmodels/models.json" <<'P' || fail "predict at size $s: $(cat "$T/out")"
import json, sys
p = json.load(open(sys.argv[1]))
m = [m for m in json.load(open(sys.argv[2]))["models"] if m["prop"] == "fwd" and m["target"] == "time"][0]
b = [b for b in m["mape_by_size"] if b["from"] <= p["time_us"] < b["to"]][0]
assert abs(p["time_mape_at_size_pct"] - b["mape_pct"]) < 1e-6 and p["time_rows_at_size"] == b["n"], (p, b)
if p["time_us"] < 100:
    assert p["time_mape_at_size_pct"] > p["time_mape_pct"], p
else:
    assert p["time_mape_at_size_pct"] < p["time_mape_pct"], p
P
done
expect 0 "$KJ" predict --models "$T/nzmodels" --gpu "NVIDIA H100 80GB HBM3" --op layernorm --precision fp16 \
	--prop fwd --shape 2,256,2048
grep -Eq "time .* us +\(held-out MAPE [0-9.]+%; [0-9.]+% at this size, [0-9]+ rows\)" "$T/out" ||
	fail "the size's error in the text: $(cat "$T/out")"
# energy is learnt as power (energy / time) and predicted as that power times the time model's time:
# a power rising smoothly from 200 to 650 W with the bytes, energy = power x time, is all but exact
mkdir -p "$T/pw"
layernorm_grid "$T/pw/${G}_layernorm_fp16_1_1.csv" power
expect 0 "$KJ" fit "$T/pw" -o "$T/pwmodels"
python3 - "$T/pwmodels/models.json" <<'P' || fail "power x time: $(cat "$T/pwmodels/models.json")"
import json, sys
ms = {(m["prop"], m["target"]): m for m in json.load(open(sys.argv[1]))["models"]}
for prop in ("fwd", "bwd"):
    e = ms[(prop, "energy")]
    assert e.get("predicts") == "power_w", e
    assert "predicts" not in ms[(prop, "time")]
    assert e["n_test"] > 20 and e["mape_test_pct"] < 3, (e["svg"], e["mape_test_pct"])
P
expect 0 "$KJ" predict --models "$T/pwmodels" --gpu "NVIDIA H100 80GB HBM3" --op layernorm --precision fp16 \
	--prop bwd --shape 4,1408,2816 --json
python3 - "$T/out" <<'P' || fail "power x time predict: $(cat "$T/out")"
import json, sys
p = json.load(open(sys.argv[1]))
t = 2 * 2 * 1408 ** 1.5 * 2816 ** 0.5 / 1e4
mb = 4 * 1408 * 2816 * 8 / 1e6
w = 200 + 450 * mb / (mb + 40)
assert abs(p["time_us"] - t) / t < 0.03, (p["time_us"], t)
assert abs(p["energy_uj"] / p["time_us"] - w) / w < 0.03, (p["energy_uj"] / p["time_us"], w)
P
# text form names units and the held-out error
expect 0 "$KJ" predict --models "$T/models" --op linear1 --precision fp16 --prop fwd --shape 1,4,1024,2048
has "time .* us .*held-out MAPE"
has "energy .* uJ"
# no model: a message, exit 1; bad shape: exit 2
expect 1 "$KJ" predict --models "$T/models" --op linear2 --precision fp16 --prop fwd --shape 1,4,1024,2048
grep -q "no model for linear2 fp16 fwd" "$T/err" || fail "no model: $(cat "$T/err")"
expect 2 "$KJ" predict --models "$T/models" --op linear1 --precision fp16 --prop fwd --shape 1,4,1024
grep -q "3 values; linear1 takes 4: mp,b,l,dim" "$T/err" || fail "shape: $(cat "$T/err")"
expect 2 "$KJ" predict --models "$T/models" --op linear1 --precision fp16 --prop sideways --shape 1,1,1,1
expect 1 "$KJ" predict --models "$T/nomodels" --op linear1 --prop fwd --shape 1,1,1,1
grep -q "models.json" "$T/err" || fail "missing models: $(cat "$T/err")"

# a transformer step: linear1's rows from the models, the others '-' and the total partial
cat >"$T/gpt.yml" <<'Y'
# GPT-style
layers: 2
hidden: 1024
heads: 16
seq: 1024
batch: 4
Y
expect 0 "$KJ" predict --models "$T/models" --model "$T/gpt.yml" --json
python3 - "$T/out" <<'P' || fail "model json: $(head -c 600 "$T/out")"
import json, sys, math
j = json.load(open(sys.argv[1]))
rows = {r["op"]: r for r in j["operators"]}
l1 = rows["linear1"]
assert l1["count"] == 2 and l1["shape"] == "1,4,1024,1024"
assert l1["fwd_us"] > 0 and l1["bwd_us"] > 0
assert rows["flash_atten"]["fwd_us"] is None and j["time_us"] is None
want = 2 * (l1["fwd_us"] + l1["bwd_us"])
assert abs(j["time_us_partial"] - want) < 1e-6 * want
assert "flash_atten" in j["missing_models"]
assert rows["layernorm"]["count"] == 5 and rows["lastStage_optimizer"]["bwd_us"] is None
# what a caller needs to sweep the missing operators: precision, column names, directions
assert j["precision"] == "fp16"
assert l1["columns"] == ["mp", "b", "l", "dim"] and l1["backward"] is True
assert rows["flash_atten"]["columns"] == ["mp", "b", "h", "l", "dim"]
assert rows["lastStage_optimizer"]["columns"] == ["mp", "dim", "encoders"]
assert rows["lastStage_optimizer"]["backward"] is False
assert all(len(r["columns"]) == len(r["shape"].split(",")) for r in j["operators"])
# what the total leaves out is said with it
assert "idle time" in j["scope"] and "framework" in j["scope"], j["scope"]
P
# against a run, a partial sum takes no error: null, and the reason given
expect 0 "$KJ" predict --models "$T/models" --model "$T/gpt.yml" --run "$SRC/examples/runs/bloom560m.kjdb" --json
python3 - "$T/out" <<'P' || fail "partial against a run: $(head -c 600 "$T/out")"
import json, sys
a = json.load(open(sys.argv[1]))["against"]
assert all(v is None for v in a["errors_pct"].values()), a["errors_pct"]
assert "partial" in a["errors_not_taken"] and a["measured"]["step_time_us"] > 0
assert {x["tier"]: x for x in a["tiers"]}["attention"]["predicted_us"] is None  # flash_atten has no model
P
expect 0 "$KJ" predict --models "$T/models" --model "$T/gpt.yml"
grep -q "(partial)" "$T/out" && grep -q "^the sum of these operators' kernels: not in it are the GPU's idle time" "$T/out" ||
	fail "model text: $(cat "$T/out")"
# no model at all: the operators and their shapes still come out with --gpu; without it, a message
mkdir -p "$T/nomodel" && echo '{"models": []}' >"$T/nomodel/models.json"
expect 0 "$KJ" predict --models "$T/nomodel" --model "$T/gpt.yml" --gpu G --json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["time_us"] is None and len(j["operators"]) == 12, j' "$T/out" || fail "empty models: $(head -c 300 "$T/out")"
expect 2 "$KJ" predict --models "$T/nomodel" --model "$T/gpt.yml"
grep -q "models.json lists no model" "$T/err" || fail "empty models message: $(cat "$T/err")"
echo "heads: 12" >>"$T/gpt.yml"
expect 1 "$KJ" predict --models "$T/models" --model "$T/gpt.yml"
grep -q "duplicate\|heads" "$T/err" || fail "bad model: $(cat "$T/err")"
printf 'layers: 2\nhidden: 1000\nheads: 16\nseq: 8\nbatch: 1\nmode: sometimes\n' >"$T/bad.yml"
expect 1 "$KJ" predict --models "$T/models" --model "$T/bad.yml"
grep -q "bad.yml:6: key 'mode': 'sometimes' is neither train nor inference" "$T/err" || fail "mode: $(cat "$T/err")"

# fit refuses junk with file and line
mkdir -p "$T/junk"
printf 'mp,b,l,dim,F_dur(us),B_dur(us)\n1,1,1,1,2.0,4.0\n1,1,1,2,fast,4.0\n' >"$T/junk/G_linear1_fp16.csv"
expect 1 "$KJ" fit "$T/junk" -o "$T/jm"
grep -q "G_linear1_fp16.csv:3: column 'F_dur(us)': 'fast'" "$T/err" || fail "junk: $(cat "$T/err")"
expect 1 "$KJ" fit "$T/empty_dir_that_is_missing"
# KJ_FIT_XGB_PARAMS (studies): the trees are trained with the parameters it names
KJ_FIT_XGB_PARAMS="max_depth=1" "$KJ" fit "$T/s/sampling_data" -o "$T/shallow" >/dev/null 2>&1 || fail "fit with KJ_FIT_XGB_PARAMS"
python3 - "$T/models" "$T/shallow" <<'P' || fail "KJ_FIT_XGB_PARAMS=max_depth=1 did not make shallower trees"
import glob, json, os, sys
def depth(d):
    """the deepest node of any tree of the models in folder d that have trees"""
    worst = 0
    for p in glob.glob(os.path.join(d, "*_time.json")):
        try:
            m = json.loads(open(p).read())
        except ValueError:
            continue
        for t in m.get("learner", {}).get("gradient_booster", {}).get("model", {}).get("trees", []):
            par = t["parents"]
            for i in range(len(par)):
                k, n = i, 0
                while par[k] != 2147483647 and par[k] >= 0 and n < 64:
                    k, n = par[k], n + 1
                worst = max(worst, n)
    return worst
deep, shallow = depth(sys.argv[1]), depth(sys.argv[2])
sys.exit(not (shallow <= 1 and deep > 1))
P
# flash_atten's CSVs name the implementation each row ran (impl): one implementation's rows fit and
# the models say which; rows of two implementations in one model are refused, naming a row of each;
# an impl value that is no name is refused with its file and line
mkdir -p "$T/fa1" "$T/fa2"
python3 - "$T/fa1/X_flash_atten_fp16_1_1.csv" "$T/fa2/X_flash_atten_fp16_1_1.csv" <<'P'
import sys
head = "mp,b,h,l,dim,F_dur(us),B_dur(us),status,impl\n"
def rows(impl):
    out = []
    for h in (8, 16, 32):
        for l in (256, 512, 768, 1024, 1280):
            f = 3 + h * l * l / 1e5
            out.append(f"1,2,{h},{l},1024,{f:.3f},{2 * f:.3f},ok,{impl}\n")
    return out
open(sys.argv[1], "w").write(head + "".join(rows("cudnn-sdpa.e2/cudnn-sdpa.e2")))
open(sys.argv[2], "w").write(head + "".join(rows("kjoule-flash2/kjoule-flash2")))
P
expect 0 "$KJ" fit "$T/fa1" -o "$T/fa1m" --sm-count 132
python3 - "$T/fa1m/models.json" <<'P' || fail "implementation in models.json: $(cat "$T/fa1m/models.json")"
import json, sys
ms = [m for m in json.load(open(sys.argv[1]))["models"] if m["op"] == "flash_atten"]
sys.exit(not (ms and all(m.get("implementation") == "cudnn-sdpa" for m in ms)))
P
expect 0 "$KJ" predict --models "$T/fa1m" --gpu X --op flash_atten --precision fp16 --prop fwd --shape 1,2,16,640,1024
grep -q "^flash_atten fp16 fwd 1,2,16,640,1024 on X (fitted on cudnn-sdpa)$" "$T/out" || fail "predict names the implementation: $(cat "$T/out")"
expect 0 "$KJ" predict --models "$T/fa1m" --gpu X --op flash_atten --precision fp16 --prop bwd --shape 1,2,16,640,1024 --json
grep -q '"implementation": "cudnn-sdpa"' "$T/out" || fail "predict --json names the implementation: $(cat "$T/out")"
cp "$T/fa2/X_flash_atten_fp16_1_1.csv" "$T/fa1/X_flash_atten_fp16_2_1.csv"
expect 1 "$KJ" fit "$T/fa1" -o "$T/famix"
grep -q "rows of two implementations, cudnn-sdpa (.*X_flash_atten_fp16_1_1.csv:2) and kjoule-flash2 (.*X_flash_atten_fp16_2_1.csv:2)" "$T/err" ||
	fail "mixed implementations: $(cat "$T/err")"
[ ! -e "$T/famix/models.json" ] || fail "a refused fit wrote models"
# the same forward, another backward: refused for the backward
sed 's|kjoule-flash2/kjoule-flash2|cudnn-sdpa.e2/kjoule-flash2|' "$T/fa2/X_flash_atten_fp16_1_1.csv" >"$T/fa1/X_flash_atten_fp16_2_1.csv"
expect 1 "$KJ" fit "$T/fa1" -o "$T/famix"
grep -q "flash_atten fp16 bwd: rows of two implementations, cudnn-sdpa (.*) and kjoule-flash2 (.*X_flash_atten_fp16_2_1.csv:2)" "$T/err" ||
	fail "mixed backward implementations: $(cat "$T/err")"
sed -i '4s/kjoule-flash2\/kjoule-flash2/x!y/' "$T/fa2/X_flash_atten_fp16_1_1.csv"
expect 1 "$KJ" fit "$T/fa2" -o "$T/fabad"
grep -q "X_flash_atten_fp16_1_1.csv:4: column 'impl': 'x!y' is not an implementation's name" "$T/err" ||
	fail "bad impl value: $(cat "$T/err")"
finish
