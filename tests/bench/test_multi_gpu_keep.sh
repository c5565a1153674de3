# bench/multi_gpu/run.py --keep: an earlier result's collectives and programs are kept and nothing
# is swept again; the kept training rows are fitted (the fit step succeeds on them alone), the
# source is recorded, and a result of another GPU count is refused, nothing written.
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
# a result over another number of GPUs: refused before any work, nothing written
python3 "$R" --kjoule "$KJ" --work "$T/w4" --log-dir "$T" --gpus 4 --keep "$old" --skip-programs -o "$T/none.json" \
	>"$T/out2" 2>&1 && fail "a result of 2 GPUs kept for 4"
grep -q "no 'sweep' of collectives over 4 GPUs" "$T/out2" || fail "the refusal: $(cat "$T/out2")"
[ ! -e "$T/none.json" ] || fail "a refused --keep wrote its output"
finish
