# kjoule predict outside the measured grid: fit records each model's shape range; predict says how
# far outside a shape lies and that the error is unknown there (no held-out MAPE quoted), prints no
# figure the model does not resolve (no 0.00, no inf or NaN), refuses shapes that are no shapes
# naming the column, and marks extrapolated operators in --model and --run.
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
python3 -c 'import ctypes; ctypes.CDLL("libxgboost.so.0")' 2>/dev/null || { echo "libxgboost missing: skipped"; exit 77; }
G=NVIDIAH10080GBHBM3
mkdir -p "$T/d"
# layer norm over b 1-4, l 256-2048, dim 512-4096: time 3 + b l dim / 1e5 us (backward 2x), 300 W
python3 - "$T/d/${G}_layernorm_fp16_1_1.csv" <<'P'
import sys
with open(sys.argv[1], "w") as f:
    f.write("b,l,dim,F_dur(us),B_dur(us),F_energy(uJ),B_energy(uJ),status\n")
    for b in (1, 2, 4):
        for l in range(256, 2049, 256):
            for d in range(512, 4097, 512):
                t = 3 + b * l * d / 1e5
                f.write("%d,%d,%d,%.6g,%.6g,%.6g,%.6g,ok\n" % (b, l, d, t, 2 * t, 300 * t, 600 * t))
P
expect 0 "$KJ" fit "$T/d" -o "$T/m" --rounds 20
python3 - "$T/m/models.json" <<'P' || fail "shape ranges in models.json: $(head -c 600 "$T/m/models.json")"
import json, sys
for m in json.load(open(sys.argv[1]))["models"]:
    assert m["shape_range"] == {"b": [1, 4], "l": [256, 2048], "dim": [512, 4096]}, m["shape_range"]
    lo, hi = m["measured_range"]
    f = 3 + 256 * 512 / 1e5
    want = f * (2 if m["prop"] == "bwd" else 1) * (300 if m["target"] == "energy" else 1)
    assert abs(lo - want) < 1e-3 * want and hi > lo, (m["model"], lo, want)
P
P="$KJ predict --models $T/m --op layernorm --precision fp16"
# strict JSON: no NaN or Infinity anywhere
strict() { python3 -c 'import json,sys
def bad(x): raise ValueError("non-finite number: " + x)
json.load(open(sys.argv[1]), parse_constant=bad)' "$1"; }

# 1. inside the grid: the held-out error, in_grid true
expect 0 $P --prop fwd --shape 2,1000,1000
grep -Eq "^  time +[0-9.]+ us +\(held-out MAPE [0-9.]+%" "$T/out" || fail "in grid: $(cat "$T/out")"
lacks "outside"
expect 0 $P --prop fwd --shape 2,1000,1000 --json
python3 - "$T/out" <<'P' || fail "in grid json: $(cat "$T/out")"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["in_grid"] is True and p["time_outside_grid"] == [] and p["error_note"] is None, p
assert p["time_mape_pct"] is not None and p["time_us"] > 0
P
# the grid's corners are inside it
for s in 1,256,512 4,2048,4096; do
	expect 0 $P --prop bwd --shape $s --json
	python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); assert p["in_grid"] is True and p["time_mape_pct"] is not None, p' "$T/out" ||
		fail "corner $s: $(cat "$T/out")"
done
# 2. far outside: how far, per column, and no held-out error quoted
expect 0 $P --prop fwd --shape 1000000000,1000000000,100000000
grep -q "^  time .* us   (error unknown outside the measured grid)$" "$T/out" || fail "far outside: $(cat "$T/out")"
grep -q "outside the measured grid: b=1000000000 is 2.5e+08x the largest measured 4; l=1000000000 is 488281x the largest measured 2048; dim=100000000 is 24414x the largest measured 4096" "$T/out" ||
	fail "how far outside: $(cat "$T/out")"
lacks "MAPE"
grep -Eqi "nan|inf" "$T/out" && fail "non-finite figure printed: $(cat "$T/out")"
expect 0 $P --prop fwd --shape 1000000000,1000000000,100000000 --json
strict "$T/out" || fail "far outside json not strict: $(cat "$T/out")"
python3 - "$T/out" <<'P' || fail "far outside json: $(cat "$T/out")"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["in_grid"] is False and p["error_note"] == "error unknown outside the measured grid", p
for k in ("time_mape_pct", "energy_mape_pct", "time_mape_at_size_pct", "energy_mape_at_size_pct"):
    assert p[k] is None, (k, p[k])
assert p["time_outside_grid"][0] == {"column": "b", "value": 1000000000, "min": 1, "max": 4}, p["time_outside_grid"]
assert len(p["energy_outside_grid"]) == 3
P
# just past the grid: a figure, marked
expect 0 $P --prop bwd --shape 4,4096,1024
grep -Eq "^  time +[0-9.]+ us   \(error unknown outside the measured grid\)$" "$T/out" &&
	grep -q "l=4096 is 2x the largest measured 2048$" "$T/out" || fail "just outside: $(cat "$T/out")"
# 3. below the grid, where the model falls under anything measured: no figure (never 0.00)
expect 0 $P --prop fwd --shape 3,3,3
grep -q "0\.00" "$T/out" && fail "a zero printed as a figure: $(cat "$T/out")"
grep -q "^  time    no figure: below 4.31 us, the least its rows measured, outside the measured grid" "$T/out" &&
	grep -q "l=3 is 85.3x under the least measured 256; dim=3 is 171x under the least measured 512" "$T/out" ||
	fail "below the grid: $(cat "$T/out")"
expect 0 $P --prop fwd --shape 3,3,3 --json
python3 - "$T/out" <<'P' || fail "below the grid json: $(cat "$T/out")"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["time_us"] is None and p["energy_uj"] is None and p["in_grid"] is False, p
assert "under what the model resolves" in p["time_unresolved"], p
P
# 4. shapes that are no shapes: refused (exit 2), naming the column
for bad in "2,0,1000|column 'l' (2 of 3): '0' is not a positive integer" \
	"2,-5,1000|column 'l' (2 of 3): '-5' is not a positive integer" \
	"2,1.5,1000|column 'l' (2 of 3): '1.5' is not a positive integer" \
	"1e3,8,8|column 'b' (1 of 3): '1e3' is not a positive integer" \
	"2,,1000|column 'l' (2 of 3): '' is not a positive integer" \
	"99999999999999999999,1,1|column 'b' (1 of 3): '99999999999999999999' is too large" \
	"2,1000|2 values; layernorm takes 3: b,l,dim" \
	"1,2,3,4|4 values; layernorm takes 3: b,l,dim"; do
	s=${bad%%|*} msg=${bad#*|}
	expect 2 $P --prop fwd --shape "$s"
	grep -qF -- "--shape '$s': $msg" "$T/err" || fail "shape $s: $(cat "$T/err")"
done
# 5. models fitted before the range was recorded: the range is said to be unknown
cp -r "$T/m" "$T/old"
python3 - "$T/old/models.json" <<'P'
import json, sys
d = json.load(open(sys.argv[1]))
for m in d["models"]:
    del m["shape_range"], m["measured_range"]
json.dump(d, open(sys.argv[1], "w"))
P
expect 0 "$KJ" predict --models "$T/old" --op layernorm --prop fwd --shape 2,1000,1000
grep -q "held-out MAPE .*the measured grid is unknown: models.json predates it, refit to check" "$T/out" || fail "old models: $(cat "$T/out")"
expect 0 "$KJ" predict --models "$T/old" --op layernorm --prop fwd --shape 2,1000,1000 --json
python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); assert p["in_grid"] is None and p["time_outside_grid"] is None and "unknown" in p["error_note"], p' "$T/out" ||
	fail "old models json: $(cat "$T/out")"

# 6. --model: an operator outside its grid is marked, row and totals; one below it has no figure
printf 'layers: 2\nhidden: 1024\nheads: 16\nseq: 4096\nbatch: 4\n' >"$T/long.yml"
expect 0 "$KJ" predict --models "$T/m" --model "$T/long.yml" --gpu "$G"
grep -Eq "^layernorm +5 4,4096,1024 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+  OUTSIDE$" "$T/out" &&
	grep -q "^outside the measured grid, error unknown: layernorm (l=4096 is 2x the largest measured 2048)$" "$T/out" ||
	fail "--model outside: $(cat "$T/out")"
expect 0 "$KJ" predict --models "$T/m" --model "$T/long.yml" --gpu "$G" --json
strict "$T/out" || fail "--model json not strict"
python3 - "$T/out" <<'P' || fail "--model outside json: $(head -c 800 "$T/out")"
import json, sys
j = json.load(open(sys.argv[1]))
rows = {r["op"]: r for r in j["operators"]}
assert rows["layernorm"]["in_grid"] is False and rows["layernorm"]["outside_grid"] == "l=4096 is 2x the largest measured 2048"
assert rows["linear1"]["in_grid"] is None  # no model
assert j["outside_grid"] == "layernorm (l=4096 is 2x the largest measured 2048)" and j["unresolved"] == ""
P
printf 'layers: 2\nhidden: 16\nheads: 2\nseq: 8\nbatch: 1\n' >"$T/tiny.yml"
expect 0 "$KJ" predict --models "$T/m" --model "$T/tiny.yml" --gpu "$G" --json
python3 - "$T/out" <<'P' || fail "--model unresolved: $(head -c 800 "$T/out")"
import json, sys
j = json.load(open(sys.argv[1]))
ln = {r["op"]: r for r in j["operators"]}["layernorm"]
assert ln["fwd_us"] is None and ln["bwd_uj"] is None and ln["in_grid"] is False, ln
assert j["unresolved"] == "layernorm" and j["time_us"] is None and j["time_us_partial"] is None, j
P
expect 0 "$KJ" predict --models "$T/m" --model "$T/tiny.yml" --gpu "$G"
grep -q "^no figure the model resolves (outside its measured grid) for: layernorm" "$T/out" &&
	grep -q "^training step on $G: time - (no operator predicted), energy - (no operator predicted)$" "$T/out" || fail "--model unresolved text: $(cat "$T/out")"
grep -q "0\.00" "$T/out" && fail "--model printed a zero: $(cat "$T/out")"
# 7. --run: the step's judging says which operators were extrapolated
R=$SRC/examples/runs/bloom560m.kjdb
expect 0 "$KJ" predict --models "$T/m" --model "$T/long.yml" --gpu "$G" --run "$R" --json
python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["against"]; assert a["outside_grid"].startswith("layernorm (l=4096"), a' "$T/out" ||
	fail "--run json: $(head -c 400 "$T/out")"
expect 0 "$KJ" predict --models "$T/m" --model "$T/long.yml" --gpu "$G" --run "$R"
grep -q "^  ! operators predicted outside their measured grid, where the models' error is unknown: layernorm (l=4096" "$T/out" ||
	fail "--run text: $(cat "$T/out")"
finish
