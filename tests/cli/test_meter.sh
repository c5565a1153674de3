#!/usr/bin/env bash
# kjoule meter on real files: good logs (values, text and JSON), bad ones (exit 1, file:line),
# usage errors (exit 2), windows, gaps, import into a run database.
# usage: test_meter.sh KJOULE_BIN SRC_DIR BUILD_DIR
set -u
K=$1; SRC=$2; D=$SRC/tests/data/meter
fail=0; n=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# check ARGS... | EXIT n | GREP text (likwid style)
check() {
	local want=$1 pat=$2; shift 2
	n=$((n + 1))
	out=$("$K" meter "$@" 2>&1); rc=$?
	if [ "$rc" != "$want" ] || ! grep -qE -- "$pat" <<<"$out"; then
		echo "FAIL: meter $* -> exit $rc (want $want), output:"; echo "$out" | head -5
		echo "      wanted /$pat/"; fail=1
	fi
}
check 0 'energy 25000\.000 J over 100\.000 s.*average 250\.00 W.*201 samples' $D/generic_good.csv
check 0 'energy 2000\.000 J over 10\.000 s.*peak 300\.00 W, min 100\.00 W' $D/generic_ramp.csv
check 0 '\(wattsup\).*601 samples' $D/wattsup_good.csv
check 0 '\(wattsup\)' --format wattsup $D/wattsup_good.csv
check 0 'energy 1000\.000 J over 4\.000 s.*9 samples' $D/generic_good.csv --from 1763719210 --to 1763719214
check 0 'over 60\.000 s.*61 samples' $D/wattsup_good.csv --from 2026-11-21T10:01:00Z --to 2026-11-21T11:02:00+01:00
check 0 'energy 900\.000 J over 9\.000 s' $D/gap.csv --to 1763719209
check 1 'bad_header\.csv:1: bad header' $D/bad_header.csv
check 1 'bad_duplicate\.csv:4: duplicate timestamp' $D/bad_duplicate.csv
check 1 'bad_backwards\.csv:4: time goes backwards' $D/bad_backwards.csv
check 1 "bad_missing\.csv:3: missing field 'pm2'" $D/bad_missing.csv
check 1 'bad_fields\.csv:3: 4 fields, want 5' $D/bad_fields.csv
check 1 'bad_negative\.csv:3: negative watts' $D/bad_negative.csv
check 1 'bad_absurd\.csv:3: absurd watts' $D/bad_absurd.csv
check 1 'bad_sum\.csv:3: sum 180 W is not pm1 \+ pm2' $D/bad_sum.csv
check 1 "bad_time\.csv:3: time 'yesterday'" $D/bad_time.csv
check 1 'gap\.csv:12: gap of 21\.000 s.*unknown, not zero' $D/gap.csv
check 1 'outside the log' $D/generic_good.csv --from 1763719000 --to 1763719210
check 1 'bad header' --format generic $D/wattsup_good.csv
check 1 'No such file' $D/absent.csv
check 2 'usage' 
check 2 "--format 'csv'" --format csv $D/generic_good.csv
check 2 "--from 'noon'" $D/generic_good.csv --from noon
check 2 'unknown option' $D/generic_good.csv --bogus

# JSON: exactly the documented keys, parsed by python
n=$((n + 1))
j=$("$K" meter $D/generic_good.csv --json) || { echo "FAIL: --json exit $?"; fail=1; }
python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert list(d) == ["energy_j", "duration_s", "power_w", "samples"], d
assert list(d["power_w"]) == ["average", "peak", "min"], d
assert abs(d["energy_j"] - 25000) < 1e-6 and d["duration_s"] == 100 and d["samples"] == 201, d
assert d["power_w"] == {"average": 250.0, "peak": 250.0, "min": 250.0}, d
' "$j" || { echo "FAIL: JSON $j"; fail=1; }

# --run: a database that does not exist is refused (import itself: tests/unit/test_meter.c)
check 1 'none/run\.kjdb' $D/generic_good.csv --run "$tmp/none/run.kjdb"

echo "$n checks"
exit $fail
