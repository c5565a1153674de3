# bench/trace_overhead/capture_energy_summary.py (scripts/gpu/capture_energy.sh's result) on stand-in
# files: each loop's figures come from its own compare JSON and its program's last line; its
# database's instances are split into ten consecutive sets in start order, each with the power
# samples of its own span; a loop whose compare or database is missing says so instead of figures.
set -u
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
S="$SRC/bench/trace_overhead/capture_energy_summary.py"
mkdir -p "$T/o/capture_energy"
python3 - "$T" <<'P' || fail "cannot write the stand-ins"
import json, sqlite3, sys
t = sys.argv[1]
cap = lambda apart, slower: {"capture": {"energy_agreement": {"apart_pct": apart, "bound_pct": 1.0, "within": abs(apart) <= 1},
                                         "whole_run": {"instances": 19, "energy_j_mean": 2.0, "energy_unc_j_mean": 0.01},
                                         "captured": {"instances": 5, "energy_j_mean": 2.0 * (1 + apart / 100), "energy_unc_j_mean": 0.01},
                                         "captured_slower_pct": slower, "energy_why": None}}
json.dump(cap(0.5, 0.2), open(f"{t}/o/capture_energy/a.compare.json", "w"))
open(f"{t}/o/capture_energy/a.out", "w").write('noise\n{"steps": 20, "ms_per_step_median": 10.0, "energy_j_per_step_nvml": 2.1}\n')
db = sqlite3.connect(f"{t}/a.kjdb")
db.execute("CREATE TABLE iteration_mark(pid, name, instance, start_ns, end_ns, captured)")
db.execute("CREATE TABLE power_sample(t_ns, power_mw, sm_clock_mhz, temp_c)")
# 20 instances of 1 ms each, 1 ms apart, inserted out of order; instances 10..14 captured; the
# power is 100 W in the first tenth (instances 0, 1: 0..3 ms), 300 W after it
for i in reversed(range(20)):
    db.execute("INSERT INTO iteration_mark VALUES (1, 'step', ?, ?, ?, ?)", (i, 2_000_000 * i, 2_000_000 * i + 1_000_000, int(10 <= i < 15)))
for k in range(80):
    t_ns = 500_000 * k
    db.execute("INSERT INTO power_sample VALUES (?, ?, 1980, 50)", (t_ns, 100_000 if t_ns <= 3_000_000 else 300_000))
db.execute("INSERT INTO power_sample VALUES (1000000, NULL, NULL, NULL)")  # an energy-only sample
db.commit()
P
printf 'a|prog a|step@10:5|0|%s\nb|prog b|step@1:1|1|%s\n' "$T/a.kjdb" "$T/missing.kjdb" >"$T/loops.txt"
expect 0 python3 "$S" "$T/o" "$T/loops.txt" "a b"
has "^a .*0.50 .*True"
python3 - "$T/o/capture_energy.json" <<'P' || fail "result wrong: $(head -c 1500 "$T/o/capture_energy.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["benchmark"] == "capture_energy" and r["command"] == "bash scripts/gpu/capture_energy.sh a b", r["command"]
a, b = r["loops"]["a"], r["loops"]["b"]
assert a["rc"] == 0 and a["capture"] == "step@10:5" and a["energy_agreement"]["apart_pct"] == 0.5 and a["captured_slower_pct"] == 0.2, a
assert a["program_says"]["energy_j_per_step_nvml"] == 2.1 and a["program_says"]["steps"] == 20, a["program_says"]
t = a["tenths"]
assert len(t) == 10 and all(x["instances"] == 2 for x in t), t
assert [x["captured"] for x in t] == [0, 0, 0, 0, 0, 2, 2, 1, 0, 0], [x["captured"] for x in t]
assert abs(t[0]["wall_ms_mean"] - 1.0) < 1e-9, t[0]
assert abs(t[0]["power_w"] - 100) < 1e-9 and abs(t[5]["power_w"] - 300) < 1e-9, (t[0], t[5])
assert b["rc"] == 1 and "error" in b and b["tenths"] == [] and "error" in b["program_says"], b
P
finish
