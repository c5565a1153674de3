#!/usr/bin/env bash
# kjoule power: usage errors exit 2; without NVML it says so and exits 1 (no GPU here); with a
# GPU, a short log has the documented header, rows and update edges.
# usage: test_power.sh KJOULE_BIN SRC_DIR BUILD_DIR
set -u
K=$1
fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
expect() { # want_rc pattern args...
	local want=$1 pat=$2; shift 2
	out=$("$K" power "$@" 2>&1); rc=$?
	if [ "$rc" != "$want" ] || ! grep -qE -- "$pat" <<<"$out"; then
		echo "FAIL: power $* -> $rc (want $want): $out"; fail=1
	fi
}
expect 0 'usage: kjoule power' --help
expect 2 "--gpu 'x'" --gpu x
expect 2 "--interval-ms '0'" --interval-ms 0
expect 2 "--duration 'soon'" --duration soon
expect 2 'needs a value' -o
expect 2 'unknown argument' --bogus
# A stand-in NVML (tests/tools/fake_nvml.c: one GPU at a steady 100 W, no energy counter) runs
# the log and the idle measure without a GPU: rows in time order, idle from power readings, stored.
fake=${3:-}/tests/libkj_fake_nvml.so
if [ -e "$fake" ]; then
	KJ_NVML_LIB=$fake "$K" power --duration 0.3 -o "$tmp/f.csv" 2>"$tmp/f.err" ||
		{ echo "FAIL: power on the stand-in NVML: $(cat "$tmp/f.err")"; fail=1; }
	python3 - "$tmp/f.csv" <<'PY' || fail=1
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) > 10, len(rows)
assert all(r["gpu"] == "0" and r["power_average_w"] == "100.000" for r in rows), rows[0]
t = [int(r["t_monotonic_ns"]) for r in rows]
assert t == sorted(t) and len(set(t)) == len(t), "rows out of order"
assert all(r["time_utc_iso8601"].endswith("Z") and len(r["time_utc_iso8601"]) == 27 for r in rows)
PY
	grep -q "rows in .* written to $tmp/f.csv" "$tmp/f.err" || { echo "FAIL: no rows line"; fail=1; }
	out=$(KJ_NVML_LIB=$fake "$K" power --idle --duration 0.3 --db "$tmp/i.kjdb" 2>&1)
	grep -q 'GPU 0 (Fake GPU, GPU-fake-nvml): idle 100.0 W median (p10 100.0 W, p90 100.0 W) over [0-9]* power readings' <<<"$out" ||
		{ echo "FAIL: idle line: $out"; fail=1; }
	row=$(sqlite3 "$tmp/i.kjdb" 'SELECT median_mw, p10_mw, p90_mw, source FROM idle_power' 2>&1)
	[ "$row" = "100000|100000|100000|nvml-power" ] || { echo "FAIL: idle_power row: $row"; fail=1; }
fi
if ! "$K" power --duration 0.5 -o "$tmp/p.csv" >"$tmp/out" 2>&1; then
	if grep -q 'NVML is absent\|NVML sees no GPU\|nvmlInit failed' "$tmp/out"; then
		[ $fail = 0 ] && exit 77 # no GPU: the rest needs one
		exit $fail
	fi
	echo "FAIL: power without a GPU did not say why: $(cat "$tmp/out")"; exit 1
fi
head -1 "$tmp/p.csv" | grep -q '^time_utc_iso8601,t_monotonic_ns,gpu,power_instant_w,power_average_w,energy_counter_mj,energy_updated,sm_clock_mhz,mem_clock_mhz,temp_c,util_gpu_pct,util_mem_pct,throttle_reasons_hex$' ||
	{ echo "FAIL: header"; fail=1; }
python3 - "$tmp/p.csv" <<'PY' || fail=1
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) > 50, len(rows)
assert all(len(r) == 13 for r in rows)
assert any(r["power_instant_w"] or r["power_average_w"] for r in rows)
t = [int(r["t_monotonic_ns"]) for r in rows if r["gpu"] == "0"]
assert t == sorted(t), "rows of one GPU out of order"
PY
grep -q 'samples/s' "$tmp/out" || { echo "FAIL: no samples/s line"; fail=1; }
exit $fail
