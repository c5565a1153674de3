# bench/multi_gpu/run.py --reanalyze on a trimmed copy of the committed result (two collectives,
# their training rows, two held-out sizes each, stale predictions planted): this build's fit and
# predict replace the predictions, errors and summary, the figures read log-log between the rows
# (checked against an independent reading here), the GPU's measurements are kept and the analysis
# recorded; a result without training rows is refused, naming the collective, nothing written.
set -u
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
R="$SRC/bench/multi_gpu/run.py"
python3 - "$SRC/bench/results/multi_gpu.json" "$T/old.json" <<'P' || fail "cannot trim the result"
import json, sys
r = json.load(open(sys.argv[1]))
r["sweep"] = {op: r["sweep"][op] for op in ("all_reduce", "all_gather")}
for s in r["sweep"].values():
    s["held_out"] = [h for h in s["held_out"] if h["bytes"] in (262144, 1073741824)]
    for h in s["held_out"]:
        h.update(predicted_us=1.0, predicted_uj=1.0, error_us_pct=0.0, error_uj_pct=0.0, in_grid=None)
    s.pop("held_out_summary", None)
r["programs"] = {}
json.dump(r, open(sys.argv[2], "w"))
P
python3 "$R" --kjoule "$KJ" --reanalyze "$T/old.json" -o "$T/new.json" >"$T/out" 2>&1 ||
	fail "reanalyze failed: $(tail -3 "$T/out")"
python3 - "$T/old.json" "$T/new.json" <<'P' || fail "the reanalysis: $(head -c 1500 "$T/new.json")"
import json, math, sys
old, new = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
for k in ("device", "date", "command", "gpus", "steps", "programs"):
    assert new[k] == old[k], k                                          # the GPU's facts kept
assert new["analysis_version"].startswith("kjoule ") and new["analysis_date"], new
assert "--reanalyze" in new["analysis_command"], new["analysis_command"]
for op, s in new["sweep"].items():
    o = old["sweep"][op]
    assert s["train_rows"] == o["train_rows"] and s["busbw_at_largest_gbps"] == o["busbw_at_largest_gbps"], op
    assert s["model"] == "collective_loglog", s["model"]
    rows = sorted((int(r["bytes"]), float(r["F_dur(us)"]), float(r["F_energy(uJ)"])) for r in s["train_rows"])
    errs = {"us": [], "uj": []}
    for h, ho in zip(s["held_out"], o["held_out"]):
        assert (h["bytes"], h["measured_us"], h["measured_uj"], h["busbw_gbps"]) == \
            (ho["bytes"], ho["measured_us"], ho["measured_uj"], ho["busbw_gbps"]), h
        b = h["bytes"]
        for k, c in (("us", 1), ("uj", 2)):
            if b > rows[-1][0]:                       # the last segment's bandwidth, outside the grid
                (b0, y0), (b1, y1) = (rows[-2][0], rows[-2][c]), (rows[-1][0], rows[-1][c])
                want = y1 + (b - b1) * (y1 - y0) / (b1 - b0)
                assert h["in_grid"] is False, h
            else:                                     # log-log between the two nearest sizes
                i = max(j for j in range(len(rows) - 1) if rows[j][0] <= b)
                f = math.log(b / rows[i][0]) / math.log(rows[i + 1][0] / rows[i][0])
                want = math.exp(math.log(rows[i][c]) + f * math.log(rows[i + 1][c] / rows[i][c]))
                assert h["in_grid"] is True, h
            got = h[f"predicted_{k}"]
            assert abs(got / want - 1) < 1e-6, (op, b, k, got, want)
            m = h[f"measured_{k}"]
            assert abs(h[f"error_{k}_pct"] - round(100 * (got - m) / m, 2)) < 1e-9, h
            errs[k].append(abs(h[f"error_{k}_pct"]))
    sm = s["held_out_summary"]
    assert sm["n"] == 2 and sm["n_in_grid"] == 1, sm
    assert abs(sm["time_mape_pct"] - sum(errs["us"]) / 2) < 0.01 and abs(sm["energy_mape_pct"] - sum(errs["uj"]) / 2) < 0.01, sm
P
grep -q "all_reduce" "$T/out" || fail "no table printed"
# a collective without training rows: refused, naming it, nothing written
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r["sweep"]["all_gather"]["train_rows"]=[]; json.dump(r,open(sys.argv[2],"w"))' \
	"$T/old.json" "$T/bad.json"
python3 "$R" --kjoule "$KJ" --reanalyze "$T/bad.json" -o "$T/none.json" >"$T/out2" 2>&1 &&
	fail "a result without training rows was not refused"
grep -q "sweep.all_gather: no train_rows" "$T/out2" || fail "the refusal does not name it: $(cat "$T/out2")"
[ ! -e "$T/none.json" ] || fail "a refused reanalysis wrote its output"
finish
