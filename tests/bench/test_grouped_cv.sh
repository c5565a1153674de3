# bench/predict_accuracy/grouped_cv.py on softmax's committed H100 CSVs (three held-out sets, named by offset): each
# group is scored by models that never saw it, the mean is the groups' mean, bad input is refused.
set -u
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
python3 -c 'import ctypes; ctypes.CDLL("libxgboost.so.0")' 2>/dev/null || { echo "libxgboost missing: skipped"; exit 77; }
C="$SRC/bench/results/sweep_csv"
G="$SRC/bench/predict_accuracy/grouped_cv.py"
sets="--set 0.375=$C/h100_softmax/softmax/inside --set 0.875=$C/h100_heldout_0.875/softmax/inside --set 0.125=$C/h100_heldout_0.125/softmax/inside"
# shellcheck disable=SC2086
python3 "$G" --kjoule "$KJ" --op softmax --train "$C/h100_combined/softmax/train" --train "$C/h100_combined/softmax/dense" \
	$sets --work "$T/w" -o "$T/r.json" >"$T/out" 2>"$T/err" || fail "grouped_cv: $(tail -5 "$T/err")"
has "^mean "
python3 - "$T/r.json" "$T/w" <<'P' || fail "result: $(cat "$T/out")"
import json, math, os, sys
r = json.load(open(sys.argv[1]))
assert sorted(r["groups"]) == ["0.125", "0.375", "0.875"], r["groups"]
for g in r["groups"].values():  # the scored rows come with each group
    assert g["rows"] and g["n_shapes"] == len({x["shape"] for x in g["rows"]}), g.get("n_shapes")
for k, m in r["mean"].items():
    v = [g[k] for g in r["groups"].values()]
    assert all(x is not None and math.isfinite(x) and x > 0 for x in v), (k, v)
    assert abs(m - sum(v) / len(v)) < 1e-9
    assert max(v) < 30, (k, v)  # sane: the models fit these shapes to tens of percent at worst
# in each fold the held-out group is 'inside' and not among the training sets
for g in r["groups"]:
    d = os.path.join(sys.argv[2], g, "softmax")
    assert os.path.isdir(os.path.join(d, "inside")) and not os.path.exists(os.path.join(d, "set_" + g)), os.listdir(d)
    assert sorted(x for x in os.listdir(d) if x.startswith("set_")) == sorted("set_" + o for o in r["groups"] if o != g)
P
# bad input: a set without CSVs, a single group, a missing training folder
expect 1 python3 "$G" --kjoule "$KJ" --op softmax --train "$C/h100_combined/softmax/train" --set a="$T" --set b="$T" --work "$T/w2"
grep -q "expected NAME=DIR with DIR/sampling_data" "$T/err" || fail "empty set: $(cat "$T/err")"
expect 1 python3 "$G" --kjoule "$KJ" --op softmax --train "$C/h100_combined/softmax/train" --set 0.375="$C/h100_softmax/softmax/inside" --work "$T/w2"
grep -q "at least two --set groups" "$T/err" || fail "one group: $(cat "$T/err")"
expect 1 python3 "$G" --kjoule "$KJ" --op softmax --train "$T/nothing" $sets --work "$T/w2"
grep -q "no sampling_data" "$T/err" || fail "bad --train: $(cat "$T/err")"
finish
