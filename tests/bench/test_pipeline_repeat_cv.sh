#!/usr/bin/env bash
# The pipeline repeat CV (scripts/gpu/repeat_cv.py, used by pipeline_layers.sh's 'repeat' part):
# the sample standard deviation (n - 1) over the mean, on hand-computed runs; a phase measured in
# one run only has none; a failed row is left out; the committed result's CVs are the ones its raw
# runs give.
# usage: test_pipeline_repeat_cv.sh KJOULE SRC_DIR BUILD_DIR
set -u
S=$2
. "$S/tests/cli/lib.sh"
python3 - "$S/scripts/gpu" <<'P' || fail "repeat_cv on hand-computed runs"
import math, sys
sys.path.insert(0, sys.argv[1])
from repeat_cv import repeat_cv
row = lambda name, e, l="0.5": {"name": name, "energy_j": e, "latency_ms": l}
# a: energies 1, 2, 3, 4 J: mean 2.5, sample SD sqrt(5/3) = 1.2910 (population SD 1.1180)
# b: measured twice (2 and 4 J: sample SD sqrt(2)); its third row failed (no figure)
# c: one run only: no CV
runs = [[row("a", "1", "1.0"), row("b", "2"), row("c", "5")],
        [row("a", "2", "3.0"), row("b", "4")],
        [row("a", "3", "1.0"), row("b", "")],
        [row("a", "4", "3.0"), row("b", "nan")]]
cv = repeat_cv(runs)
assert set(cv) == {"a", "b"}, cv
assert abs(cv["a"]["energy_cv"] - math.sqrt(5 / 3) / 2.5) < 1e-12, cv["a"]
assert abs(cv["a"]["energy_cv"] - 0.5163977794943222) < 1e-12
assert cv["a"]["n"] == 4 and abs(cv["a"]["latency_ms"] - 2.0) < 1e-12, cv["a"]
assert cv["b"]["n"] == 2 and abs(cv["b"]["energy_cv"] - math.sqrt(2) / 3) < 1e-12, cv["b"]
assert repeat_cv([]) == {}
P
check "pipeline_layers.sh computes the CV through repeat_cv, not a population SD" \
	'grep -q "repeat_cv(runs)" "$S/scripts/gpu/pipeline_layers.sh" && ! grep -q "pstdev" "$S/scripts/gpu/pipeline_layers.sh"'
check "the committed pipeline_repeat.json's CVs are its raw runs' sample CVs" \
	'cp "$S/bench/results/pipeline_repeat.json" "$T/r.json" && python3 "$S/scripts/gpu/repeat_cv.py" "$T/r.json" --write >/dev/null &&
	 python3 -c "import json,sys; a,b=[json.load(open(f))[\"repeat\"][\"cv\"] for f in sys.argv[1:]]; sys.exit(a != b or not a)" "$S/bench/results/pipeline_repeat.json" "$T/r.json"'
finish
