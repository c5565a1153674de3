# bench/multi_gpu/trace_cost.py on a stand-in job of two ranks and a stand-in kjoule whose settings
# slow the job by known factors, rank 1 by the factor squared, while the job's own speed drifts from
# round to round by up to 3x (the four runs of a round share it: only pairing within a round
# recovers the factors): the per-rank ratios and kjoule's share beyond CUPTI come out as planted,
# rank by rank; a job whose ranks print nothing is counted failed, with no figure, exit 1; a call
# without a program is refused.
set -u
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
B="$SRC/bench/multi_gpu/trace_cost.py"
cat >"$T/kjoule" <<'SH'
#!/usr/bin/env bash
# stand-in: kjoule run --force -o DB [--no-params] -- CMD...
f=1.20
shift 4
[ "$1" = "--no-params" ] && { f=1.10; shift; }
[ -n "${KJOULE_COST_STUDY:-}" ] && f=1.05
shift
FAKE_FACTOR=$f exec "$@"
SH
chmod +x "$T/kjoule"
cat >"$T/job.py" <<'PY'
import json, os, random, sys
count = os.path.join(os.path.dirname(sys.argv[0]), "count")
n = int(open(count).read()) if os.path.exists(count) else 0
open(count, "w").write(str(n + 1))
random.seed(n // 4)  # one drift a round of four runs
drift = 1 + 2 * random.random()
f = float(os.environ.get("FAKE_FACTOR", "1"))
if "--silent" in sys.argv:
    sys.exit(0)
print("a line that is not JSON")
for rank, base in ((0, 10.0), (1, 20.0)):
    print(json.dumps({"rank": rank, "step_ms": base * drift * f ** (1 + rank), "other": -1}))
PY
expect 0 python3 "$B" --kjoule "$T/kjoule" --metric step_ms --seconds 60 --max-rounds 5 --tmp "$T" -o "$T/r.json" -- \
	python3 "$T/job.py"
grep -q "^rank" "$T/out" || fail "no table: $(tail -3 "$T/out")"
python3 - "$T/r.json" <<'P' || fail "ratios not as planted: $(head -c 800 "$T/r.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["rounds"] == 5 and r["metric"] == "step_ms" and r["device"], r
pr = r["ratios_per_rank"]
assert sorted(pr) == ["0", "1"], pr
for rank, p in (("0", 1), ("1", 2)):
    e = pr[rank]
    for k, f in (("kjoule_default", 1.20), ("kjoule_no_params", 1.10), ("cupti_only", 1.05)):
        assert abs(e[k]["median"] - f ** p) < 1e-9 and e[k]["rounds"] == 5, (rank, k, e[k])
        q = e[k]["quartiles"]
        assert abs(q[0] - f ** p) < 1e-9 and abs(q[1] - f ** p) < 1e-9, (rank, k, q)
    assert abs(e["kjoule_default_over_cupti_only"]["median"] - (1.20 / 1.05) ** p) < 1e-9, e
assert all(v == 0 for v in r["failed_runs"].values()), r["failed_runs"]
P
# ranks that print nothing: every run failed, no figure, exit 1
rm -f "$T/count"
expect 1 python3 "$B" --kjoule "$T/kjoule" --metric step_ms --seconds 60 --max-rounds 2 --tmp "$T" -o "$T/s.json" -- \
	python3 "$T/job.py" --silent
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["failed_runs"]["plain"] == 2 and r["ratios_per_rank"] == {}, r' \
	"$T/s.json" || fail "a silent job: $(head -c 400 "$T/s.json")"
expect 2 python3 "$B" --kjoule "$T/kjoule" --metric step_ms -o "$T/n.json"
[ ! -e "$T/n.json" ] || fail "a refused call wrote its result"
finish
