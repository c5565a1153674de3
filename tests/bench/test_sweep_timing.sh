# bench/sweep_timing/run.py with a stand-in worker: every round gets the shapes, the spreads between
# rounds are the ones the stand-in's figures imply, and the rounds' timing settings reach the worker.
set -u
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
: "$KJ"
cat > "$T/worker" <<'W'
#!/usr/bin/env bash
# median rounds answer 10 us, then 11 us (a counter file tells them apart); settled rounds 10 us
# at 1500 MHz; an energy window always 10 us; a message with spaces and '=' to be skipped
n=$(cat "$0.count" 2>/dev/null || echo 0); echo $((n + 1)) > "$0.count"
[ -z "$KJ_SWEEP_TIMING" ] || { echo "KJ_SWEEP_TIMING=$KJ_SWEEP_TIMING" >&2; exit 3; }
while read -r op prec shape energy check; do
	f=10; [ -z "$KJ_SWEEP_SETTLE" ] && [ "$n" = 1 ] && f=11
	t=-; [ -n "$KJ_SWEEP_SETTLE" ] && t=1500
	w=-; [ "$energy" = 1 ] && w=10
	echo "KJ_SWEEP status=ok f_us=$f b_us=20 f_uj=- f_uj_unc=- b_uj=- b_uj_unc=- err_f=- err_b=- f_mhz=- b_mhz=- f_tmhz=$t b_tmhz=$t f_wus=$w b_wus=20 msg=\"$op $shape x=1\""
done
W
chmod +x "$T/worker"
python3 "$SRC/bench/sweep_timing/run.py" --worker "$T/worker" --shapes "1,1,512,1024;2,4,640,1280" -o "$T/r.json" \
	>"$T/out" 2>"$T/err" || fail "run.py: $(tail -5 "$T/err")"
has "^f_quick_vs_quick "
python3 - "$T/r.json" <<'P' || fail "result: $(cat "$T/out")"
import json, sys
r = json.load(open(sys.argv[1]))
assert [len(x["answers"]) for x in r["rounds"]] == [2] * 5, r["rounds"]
S = r["summary"]
# 10 against 11: |a-b| over their mean
assert abs(S["f_quick_vs_quick"]["mean_pct"] - 100 / 10.5) < 1e-6, S["f_quick_vs_quick"]
assert S["f_window_vs_window"]["mean_pct"] == 0 and S["b_quick_vs_quick"]["mean_pct"] == 0
assert S["f_settled_vs_settled"]["n"] == 2 and S["f_settled_vs_settled"]["mean_pct"] == 0
assert S["f_settled_clock_mhz"] == [1500.0, 1500.0, 1500.0], S["f_settled_clock_mhz"]
assert S["f_quick_minus_settled_mean_pct"] == 0
P
