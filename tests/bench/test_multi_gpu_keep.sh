# bench/multi_gpu/run.py --keep: an earlier result's collectives and programs are kept and nothing
# is swept again; the kept training rows are fitted (the fit step succeeds on them alone), the
# source is recorded, and a result of another GPU count is refused, nothing written. A kept
# program's operator rows are written back (one file's rows from two programs merged, each once)
# and its swept shapes are not swept again.
set -u
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
R="$SRC/bench/multi_gpu/run.py"
python3 -c 'import ctypes; ctypes.CDLL("libxgboost.so.0")' 2>/dev/null || { echo "libxgboost missing: skipped"; exit 77; }
old="$SRC/bench/results/multi_gpu.json"
python3 "$R" --kjoule "$KJ" --work "$T/w" --log-dir "$T" --keep "$old" --skip-programs -o "$T/new.json" >"$T/out" 2>&1 ||
	fail "--keep failed: $(tail -3 "$T/out")"
python3 - "$old" "$T/new.json" <<'P' || fail "the kept result: $(head -c 1500 "$T/new.json")"
import json, sys
old, new = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert new["sweep"] == old["sweep"], "the collectives not kept as they were"
assert new["programs"] == old.get("programs", {}), "the programs not kept"
k = new["kept"]
assert k["from"] == sys.argv[1] and k["date"] == old["date"] and k["command"] == old["command"], k
names = [s["step"] for s in new["steps"]]
assert not [n for n in names if n.startswith("sweep ")], names          # nothing swept again
fit = [s for s in new["steps"] if s["step"] == "fit"]
assert len(fit) == 1 and fit[0]["rc"] == 0, new["steps"]                # the kept rows fitted
P
python3 - "$T/w/models/models.json" <<'P' || fail "the kept rows' models: $(head -c 800 "$T/w/models/models.json")"
import json, sys
ops = {m["op"] for m in json.load(open(sys.argv[1]))["models"] if m.get("kind") == "collective_loglog"}
assert ops == {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "send_recv"}, ops
P
python3 - "$R" "$T/ops" <<'P' || fail "kept operator rows"
import csv, importlib.util, os, sys
spec = importlib.util.spec_from_file_location("mg", sys.argv[1])
mg = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mg)
w = sys.argv[2]
r1 = {"mp": "2", "b": "1", "F_dur(us)": "5.0"}
r2 = {"mp": "2", "b": "2", "F_dur(us)": "7.5"}
progs = {"a": {"operators": [{"op": "linear1", "shape": "2,1", "csv": "G_linear1_fp16_1_1.csv", "sweep_rc": 0},
                             {"op": "gelu", "shape": "2,1", "csv": "G_gelu_fp16_1_1.csv", "sweep_rc": 1}],
               "operator_rows": {"G_linear1_fp16_1_1.csv": [r1], "G_gelu_fp16_1_1.csv": []}},
         "b": {"operators": [{"op": "linear1", "shape": "2,2", "csv": "G_linear1_fp16_1_1.csv", "sweep_rc": 0}],
               "operator_rows": {"G_linear1_fp16_1_1.csv": [r1, r2]}}}
done = {}
mg.restore_operators(progs, w, done)
assert done == {("linear1", "2,1"): 0, ("linear1", "2,2"): 0}, done     # a failed sweep is swept again
got = list(csv.DictReader(open(os.path.join(w, "train", "sampling_data", "G_linear1_fp16_1_1.csv"))))
assert got == [r1, r2], got
assert not os.path.exists(os.path.join(w, "train", "sampling_data", "G_gelu_fp16_1_1.csv"))
P
# a result over another number of GPUs: refused before any work, nothing written
python3 "$R" --kjoule "$KJ" --work "$T/w4" --log-dir "$T" --gpus 4 --keep "$old" --skip-programs -o "$T/none.json" \
	>"$T/out2" 2>&1 && fail "a result of 2 GPUs kept for 4"
grep -q "no 'sweep' of collectives over 4 GPUs" "$T/out2" || fail "the refusal: $(cat "$T/out2")"
[ ! -e "$T/none.json" ] || fail "a refused --keep wrote its output"
finish
