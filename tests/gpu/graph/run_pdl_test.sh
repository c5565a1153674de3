#!/usr/bin/env bash
# usage: run_pdl_test.sh KJOULE PDL_TARGET — exit 77 where no GPU is present.
# A two-layer forward captured with programmatic dependent launch (PDL) between its kernels, each
# layer in an NVTX range at capture, traced with --snapshot-graphs: the programmatic edge is
# recorded and rebuilt by the topology replay, the graph's buffers are saved once, and
# `pipeline --from` replays layer b after running layer a once on them (its inputs).
set -u
kj=$1 target=$2
. "$(dirname "$0")/../lib.sh"

"$kj" run --snapshot-graphs=64 --iteration-range step -o "$dir/p.kjdb" -- "$target" > "$dir/run.log" 2>&1; rc=$?
check "the program runs traced with --snapshot-graphs and checks its own output" '[ $rc -eq 0 ] && grep -q "iterations done" "$dir/run.log"'
db=$dir/p.kjdb
check "the capture made a programmatic edge, and it is recorded as one" \
	'[ "$(q $db "SELECT count(*) FROM graph_edge WHERE type = \"programmatic\"")" -ge 1 ]'
check "the graph's buffers (w1, w2, x, y, z) were saved once, before its first launch" \
	'[ "$(q $db "SELECT count(DISTINCT address) FROM snapshot")" = 5 ]'
"$kj" replay "$db" --sequence --graph --runs 20 > "$dir/seq.txt" 2>&1; rc=$?
check "the sequence replays, the topology rebuilt with its programmatic edge" \
	'[ $rc -eq 0 ] && [ "$(q $db "SELECT status FROM replay_topology")" = rebuilt ] && grep -q "programmatic" "$dir/seq.txt"'
check "the sequence ran on the saved buffers, no fallback fill" \
	'[ "$(q $db "SELECT data FROM replay_sequence WHERE mode = \"graph\"")" = "random+snapshot" ]'
"$kj" pipeline --from "$db" --layers 1 --no-energy --runs 20 --out "$dir/from" > "$dir/from.log" 2>&1; rc=$?
check "pipeline --from: layers a and b replayed" \
	'[ $rc -eq 0 ] && python3 -c "
import csv, glob, sys
rows = [r for p in glob.glob(sys.argv[1] + \"/*.phases.csv\") for r in csv.DictReader(open(p))]
names = {r[\"name\"]: r for r in rows}
sys.exit(not (set(names) >= {\"a\", \"b\"} and all(names[n][\"status\"] == \"ok\" for n in (\"a\", \"b\"))))
" "$dir/from"'
check "layer b got its inputs from layer a run once on the saved buffers; layer a needed none" \
	'python3 -c "
import csv, glob, sys
rows = {r[\"name\"]: r for p in glob.glob(sys.argv[1] + \"/*.phases.csv\") for r in csv.DictReader(open(p))}
sys.exit(not (\"operations before the range\" in rows[\"b\"][\"error\"] and \"operations before the range\" not in rows[\"a\"][\"error\"]))
" "$dir/from"'
[ $fail -eq 0 ] || { tail -20 "$dir/run.log"; tail -20 "$dir/seq.txt"; tail -20 "$dir/from.log"; }
exit $fail
