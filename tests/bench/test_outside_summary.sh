# bench/trace_overhead/outside_summary.py (scripts/gpu/capture_outside.sh's result) on stand-in turns
# files: each program's summary and rounds are its own file's, the device and command are carried,
# a program whose file is missing or broken is named as not measured (never a silent empty entry),
# and the table prints every contestant's ratio.
set -u
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
S="$SRC/bench/trace_overhead/outside_summary.py"
mkdir -p "$T/o"
python3 - "$T/o" <<'P' || fail "cannot write the stand-ins"
import json, sys
t = {"device": "stand-in GPU", "rounds_done": 110, "block": 5, "date": "2026-01-01",
     "summary": {"plain": {"ratio_to_plain": 1.0, "ratio_q25": 1.0, "ratio_q75": 1.0},
                 "kjoule_capture_late": {"ratio_to_plain": 1.059, "ratio_q25": 1.02, "ratio_q75": 1.083}},
     "ratio_per_round": {"kjoule_capture_late": [1.05, 1.06]}, "forward_ms_per_round": {"plain": [[1] * 5]}}
json.dump(t, open(sys.argv[1] + "/outside_decode.json", "w"))
open(sys.argv[1] + "/outside_gpt2m.json", "w").write("{broken")
P
expect 0 python3 "$S" "$T/o" "CO_DECODE_S=1 bash scripts/gpu/capture_outside.sh"
has "decode   kjoule_capture_late               1.059  1.020  1.083  110"
python3 - "$T/o/capture_outside.json" <<'P' || fail "capture_outside.json wrong: $(head -c 600 "$T/o/capture_outside.json")"
import json, sys
r = json.load(open(sys.argv[1]))
d, g = r["programs"]["decode"], r["programs"]["gpt2m"]
assert r["device"] == "stand-in GPU" and r["command"] == "CO_DECODE_S=1 bash scripts/gpu/capture_outside.sh", r
assert d["rounds_done"] == 110 and d["summary"]["kjoule_capture_late"]["ratio_to_plain"] == 1.059, d
assert "forward_ms_per_round" not in d and d["ratio_per_round"]["kjoule_capture_late"] == [1.05, 1.06], d
assert g["error"].startswith("not measured") and "summary" not in g, g
P
[ -e "$T/o/capture_outside.json.tmp" ] && fail "the result's temporary file was left behind"
finish
