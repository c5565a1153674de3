# bench/multi_gpu/run.py's operator sweeps for a traced program's MODEL.yml, on the stand-in sweep
# worker: every operator `kjoule predict --model` lists is swept once on a grid around its shape,
# the collectives (swept over several GPUs elsewhere) are not, a second program of the same shapes
# sweeps nothing again, and after one fit every operator but the collectives has a prediction. The
# model is bf16: its operators are swept at bf16; two GPUs sweep two operators side by side.
set -u
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
python3 -c 'import ctypes; ctypes.CDLL("libxgboost.so.0")' 2>/dev/null || { echo "libxgboost missing: skipped"; exit 77; }
export KJ_SWEEP_WORKER="$SRC/tests/tools/sweep_worker_standin.py"
cat >"$T/tp.yml" <<'Y'
layers: 4
hidden: 1024
heads: 16
seq: 1
batch: 1
tp: 2
mode: inference
precision: bf16
norm: RMSlayernorm
rope: true
Y
python3 - "$SRC/bench/multi_gpu/run.py" "$KJ" "$T" <<'P' >"$T/out" 2>&1 || fail "operator sweeps: $(tail -5 "$T/out")"
import csv, importlib.util, json, os, subprocess, sys
spec = importlib.util.spec_from_file_location("mg", sys.argv[1])
mg = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mg)
kj, t = sys.argv[2], sys.argv[3]
steps, done = [], {}
first = mg.sweep_operators(kj, t, os.path.join(t, "tp.yml"), t, steps, done, gpus=2)
ops = [e["op"] for e in first]
assert "all_reduce" not in ops and {"linear1", "linear4", "RMSlayernorm", "RoPE", "linear_final"} <= set(ops), ops
assert all(e["sweep_rc"] == 0 for e in first), first
swept = [s["step"] for s in steps if s["step"].startswith("sweep ")]
assert len(swept) == len(first), (swept, first)
# each operator's rows sit beside each other in one data folder, its grid around the shape
data = os.path.join(t, "train", "sampling_data")
for e in first:
    rows = list(csv.DictReader(open(os.path.join(data, f"G_{e['op']}_bf16_1_1.csv"))))
    assert len(rows) >= 2, (e, rows)
log = open(os.path.join(t, "multi_gpu.log")).read()
assert "--device 0" in log and "--device 1" in log and "--device 2" not in log, "not one sweep a GPU"
# the same shapes again (a second program): nothing swept twice, the entries the same
again = mg.sweep_operators(kj, t, os.path.join(t, "tp.yml"), t, steps, done)
assert again == first, (again, first)
assert len([s for s in steps if s["step"].startswith("sweep ")]) == len(swept)
# one fit, then every operator but the collective is predicted
r = subprocess.run([kj, "fit", data, "-o", os.path.join(t, "models"), "--gpu", "G"], capture_output=True, text=True)
assert r.returncode == 0, r.stderr
r = subprocess.run([kj, "predict", "--model", os.path.join(t, "tp.yml"), "--gpu", "G", "--models",
                    os.path.join(t, "models"), "--json"], capture_output=True, text=True)
j = json.loads(r.stdout)
for o in j["operators"]:
    if o["tier"] == "communication":
        assert o["fwd_us"] is None, o
    else:
        assert o["fwd_us"] is not None and o["fwd_us"] > 0, o
print("ok")
P
grep -q "^ok$" "$T/out" || fail "no ok: $(tail -3 "$T/out")"
finish
