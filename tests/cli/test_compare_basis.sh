#!/usr/bin/env bash
# compare's prediction basis: a graph-launched iteration replayed whole with its recorded topology
# on the program's saved buffers predicts the iteration ("iteration_replay"; energy_error_pct is
# that replay's), the parts' own figure kept beside it (energy_error_parts_pct); so does the linear
# chain where no topology was rebuilt, if its time off the traced busy time carries under 1 % of
# the predicted energy; on stand-in data, or a chain further off, the parts predict as before. The shipped graph run
# (examples/runs/gpt_graph.kjdb.xz), its sequence replay's data or modes changed here.
# usage: test_compare_basis.sh KJOULE SRC_DIR BUILD_DIR
set -u
kj=$1 src=$2
. "$(dirname "$0")/lib.sh"
xz -dc "$src/examples/runs/gpt_graph.kjdb.xz" > "$dir/a.kjdb" || exit 1
w() { python3 -c 'import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); d.execute(sys.argv[2]); d.commit()' "$@"; }
jq() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); exec("r=" + sys.argv[2]); print(r)' "$@"; }

"$kj" compare "$dir/a.kjdb" --json > "$dir/a.json" 2>/dev/null
check "stand-in data (small integers): the parts predict; the parts' figures are the prediction's" \
	'[ "$(jq "$dir/a.json" "d[\"energy_prediction_method\"]")" = placed_in_sequence ] &&
	 [ "$(jq "$dir/a.json" "d[\"energy_error_parts_pct\"] == d[\"energy_error_pct\"] and d[\"energy_predicted_parts_j\"] == d[\"energy_predicted_j\"]")" = True ]'

cp "$dir/a.kjdb" "$dir/r.kjdb"
w "$dir/r.kjdb" "UPDATE replay_sequence SET data = 'random' WHERE mode IN ('graph', 'topology')"
"$kj" compare "$dir/r.kjdb" --json > "$dir/r.json" 2>/dev/null
check "kjoule's random fill (no snapshot): the parts predict, the iteration replay's error only shown" \
	'[ "$(jq "$dir/r.json" "d[\"energy_prediction_method\"]")" = placed_in_sequence ] &&
	 [ "$(jq "$dir/r.json" "d[\"energy_error_sequence_pct\"] is not None and d[\"energy_error_pct\"] == d[\"energy_error_parts_pct\"]")" = True ]'

cp "$dir/a.kjdb" "$dir/b.kjdb"
w "$dir/b.kjdb" "UPDATE replay_sequence SET data = 'random+snapshot' WHERE mode IN ('graph', 'topology')"
"$kj" compare "$dir/b.kjdb" --json > "$dir/b.json" 2>/dev/null
"$kj" compare "$dir/b.kjdb" > "$dir/b.txt" 2>/dev/null
check "saved buffers, topology replayed: the iteration replay predicts, its error is the headline" \
	'[ "$(jq "$dir/b.json" "d[\"energy_prediction_method\"]")" = iteration_replay ] &&
	 [ "$(jq "$dir/b.json" "d[\"energy_error_pct\"] == d[\"energy_error_sequence_pct\"] and d[\"energy_predicted_j\"] == d[\"energy_predicted_sequence_j\"] and d[\"energy_error_pct\"] is not None")" = True ]'
check "... the parts' prediction kept beside it, as they were, and named" \
	'[ "$(python3 -c "import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); print(a[\"energy_error_pct\"] == b[\"energy_error_parts_pct\"] and a[\"energy_predicted_j\"] == b[\"energy_predicted_parts_j\"] and b[\"energy_parts_method\"] == \"placed_in_sequence\")" "$dir/a.json" "$dir/b.json")" = True ]'
check "... and the text says which figure is the prediction and why" \
	'grep -q "the parts; the iteration replayed whole predicts this graph-launched iteration" "$dir/b.txt" &&
	 grep -q "the prediction: the iteration was launched as CUDA graphs and replayed whole" "$dir/b.txt"'

cp "$dir/b.kjdb" "$dir/c.kjdb"
w "$dir/c.kjdb" "DELETE FROM replay_sequence WHERE mode = 'topology'"
# the chain's replayed time set to the traced busy time of an iteration times 1 + off
busy_ns=$("$kj" compare "$dir/c.kjdb" --json 2>/dev/null | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["busy_us"] * 1000))')
chain_off() { w "$1" "UPDATE replay_sequence SET median_ns = CAST($busy_ns * (1 + $2) AS INTEGER) WHERE mode = 'graph'"; }
chain_off "$dir/c.kjdb" 0.005
"$kj" compare "$dir/c.kjdb" --json > "$dir/c.json" 2>/dev/null
"$kj" compare "$dir/c.kjdb" > "$dir/c.txt" 2>/dev/null
check "the linear chain alone (no recorded topology), 0.5 % off the traced busy time (under 1 % of the energy): it predicts, and says so" \
	'[ "$(jq "$dir/c.json" "d[\"energy_prediction_method\"]")" = iteration_replay ] &&
	 [ "$(jq "$dir/c.json" "d[\"energy_error_pct\"] == d[\"energy_error_sequence_pct\"]")" = True ] &&
	 grep -q "one linear chain, its topology not rebuilt; its time off the traced GPU busy time carries under 1% of the energy" "$dir/c.txt"'

cp "$dir/c.kjdb" "$dir/d.kjdb"
chain_off "$dir/d.kjdb" 0.05
"$kj" compare "$dir/d.kjdb" --json > "$dir/d.json" 2>/dev/null
check "the linear chain 5 % off the traced busy time (something concurrent serialized; its kernels most of the energy): the parts predict" \
	'[ "$(jq "$dir/d.json" "d[\"energy_prediction_method\"]")" = placed_in_sequence ] &&
	 [ "$(jq "$dir/d.json" "d[\"energy_error_pct\"] == d[\"energy_error_parts_pct\"]")" = True ]'

exit $fail
