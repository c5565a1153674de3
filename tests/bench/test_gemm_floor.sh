# bench/predict_accuracy/gemm_floor.py on synthetic sweep CSVs of a known smooth time: interpolating
# the pooled neighbours finds it closely, a planted bump shows as its share of the set's MAPE, two
# folders 4 % apart repeat to 3.85 %, a model result is split by size, and bad input is refused
# with the file and line.
set -u
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
F="$SRC/bench/predict_accuracy/gemm_floor.py"
python3 - "$T" <<'P' || fail "writing the synthetic sweep CSVs"
import os, sys
root = sys.argv[1]
def t(mp, b, l, d):  # a smooth GEMM-like time: launch floor plus work (linear2: M=b*l, N=d, K=d/mp)
    return 3.0 + b * l * d * (d / mp) / 2.0e8
def write(name, shapes, scale=1.0, bump=None, extra=""):
    os.makedirs(os.path.join(root, name, "sampling_data"))
    with open(os.path.join(root, name, "sampling_data", "X_linear2_fp16_1_1.csv"), "w") as f:
        f.write("mp,b,l,dim,F_dur(us),B_dur(us),status\n")
        for s in shapes:
            k = 1.3 if s == bump else 1.0
            f.write("%d,%d,%d,%d,%.6g,%.6g,ok\n" % (s + (scale * k * t(*s), 2 * scale * t(*s))))
        f.write(extra)
grid = [(mp, b, l, d) for mp in (1, 2) for b in (1, 2) for l in range(512, 2049, 256) for d in range(1024, 4097, 512)]
mid = [(mp, b, l, d) for mp in (1, 2) for b in (1, 2) for l in (640, 1408) for d in (1280, 2816)]
write("pool", grid)
write("smooth", mid)
write("bumped", [(1, 1, 896, 1792), (1, 2, 896, 1792), (2, 1, 896, 1792), (2, 2, 896, 1792)], bump=(1, 2, 896, 1792))
write("pair_a", grid[:20])
write("pair_b", grid[:20], scale=1.04)
write("junk", grid[:3], extra="1,1,x,1024,5,10,ok\n")
P
cat >"$T/model.json" <<'J'
{"ops": {"linear2": {"inside": {"rows": [
 {"shape": "1,1,512,1024", "prop": "fwd", "time_us": 10.0, "time_us_pred": 11.0},
 {"shape": "1,1,2048,4096", "prop": "fwd", "time_us": 40.0, "time_us_pred": 38.0},
 {"shape": "1,1,512,1024", "prop": "bwd", "time_us": 20.0, "time_us_pred": 20.0}]}}}}
J
expect 0 python3 "$F" --op linear2 --pool grid="$T/pool" --set smooth="$T/smooth" --set bumped="$T/bumped" \
	--pair "$T/pair_a:$T/pair_b" --model-result smooth="$T/model.json" --k 4,8 -o "$T/r.json"
has "^smooth "
has "^bumped "
python3 - "$T/r.json" <<'P' || fail "result: $(cat "$T/out")"
import json, sys
def strict(x):
    raise ValueError("non-finite number: " + x)
r = json.load(open(sys.argv[1]), parse_constant=strict)
assert r["benchmark"] == "predict_gemm_floor" and r["date"] and r["command"].startswith("bench/predict_accuracy/gemm_floor.py")
s = r["sets"]["smooth"]["neighbours"]
for k in ("k4", "k8"):
    for p in ("fwd", "bwd"):
        assert s[k][p]["all"]["n"] == 16 and s[k][p]["all"]["mape_pct"] < 2.0, (k, p, s[k][p])
# one of four shapes measured 1.3x: predicted from unbumped neighbours it misses by 1 - 1/1.3
# (23 %), a quarter of that over the set; the backward untouched
b = r["sets"]["bumped"]["neighbours"]["k8"]
assert b["fwd"]["large"]["n"] == 1 and abs(b["fwd"]["large"]["mape_pct"] - 100 * (1 - 1 / 1.3)) < 2.0, b
assert 5.0 < b["fwd"]["all"]["mape_pct"] < 7.5 and b["bwd"]["all"]["mape_pct"] < 2.0, b
# 4 % apart at every shape: |a/b - 1| = 1 - 1/1.04
rep = r["repeats"][0]
assert rep["shapes"] == 20
for p in ("fwd", "bwd"):
    assert abs(rep["by_prop"][p]["all"]["mape_pct"] - 100 * (1 - 1 / 1.04)) < 1e-3, rep
# the model's rows split at 20 us: 10 % under, 5 % over, 7.5 % together; backward 0
m = r["model"]["smooth"]["by_prop"]
assert (m["fwd"]["small"]["mape_pct"], m["fwd"]["large"]["mape_pct"], m["fwd"]["all"]["mape_pct"]) == (10.0, 5.0, 7.5), m
assert m["bwd"]["all"] == {"n": 1, "mape_pct": 0.0}, m
P
# bad input: a junk row (file and line), a set without a name, --k below 3, a model result of another op
expect 1 python3 "$F" --op linear2 --set a="$T/junk" --set b="$T/smooth"
grep -q "X_linear2_fp16_1_1.csv:5: not a shape and two times" "$T/err" || fail "junk row: $(cat "$T/err")"
expect 1 python3 "$F" --op linear2 --set "$T/smooth"
grep -q "expected NAME=PATH" "$T/err" || fail "nameless set: $(cat "$T/err")"
expect 1 python3 "$F" --op linear2 --set a="$T/smooth" --k 2
grep -q -- "--k 2: expected" "$T/err" || fail "--k 2: $(cat "$T/err")"
expect 1 python3 "$F" --op linear4 --set a="$T/smooth" --model-result a="$T/model.json"
grep -q "no ops.linear4.inside.rows" "$T/err" || fail "other op: $(cat "$T/err")"
[ -e "$T/r2.json" ] && fail "a refused run wrote a result"
finish
