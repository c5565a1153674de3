#!/usr/bin/env bash
# `pipeline --from` on a graph-launched kept iteration (synthetic spools, tests/tools/mkspool.py
# --graph): the graph's kernels are grouped by the NVTX ranges open when the graph was captured
# (model > layer0/layer1 > attn/mlp), the iteration's eager kernel by the ranges around its launch,
# and a graph captured with no range open is refused with the reason and the remedy. No GPU: the
# phases are read from `--list`. Every expected count follows from the spool's layout
# (mkspool.py's capture_chain) and is cross-checked against the database.
# usage: test_pipeline_graph.sh KJOULE SRC_DIR BUILD_DIR
set -u
K=$1 S=$2
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

F=9 L=2 IT=4 # captured kernels, layers; the kept iteration is forward#4 of 6
PER=$(((F - 1) / L)) # kernels per layer: kernel 0 is in "model" only, then PER per layer,
HALF=$(((PER + 1) / 2)) # the first HALF of a layer's in its "attn", the rest in its "mlp"
python3 "$S/tests/tools/mkspool.py" n --graph --functions $F --nested $L --eager --iters 6
"$K" ingest n -o n.kjdb 2>/dev/null || fail "ingest of the nested spool"

# phases NAME:OPS,... of `--list` (kj_phase_format leaves out first=0 and last=0)
phases() {
	python3 -c '
import re, sys
out = []
for line in open(sys.argv[1]).read().splitlines()[1:-1]:
    name = line[2:38].strip()
    f = re.search(r" first=(\d+)", line)
    l = re.search(r" last=(\d+)", line)
    f, l = int(f.group(1)) if f else 0, int(l.group(1)) if l else 0
    out.append("%s:%d" % (name, l - f + 1))
print(",".join(out))' "$T/out"
}
# the same, as expected: "name:ops" words joined by commas
want() { local IFS=,; echo "$*"; }
same() { [ "$(phases)" = "$1" ] || fail "$2: phases $(phases), want $1"; }

# --layers 1: the layers below the capture root "model"; kernel 0 (in "model" only) before them,
# the node-by-node kernel (captured in no range) after them, then the eager kernel in "head"
expect 0 "$K" pipeline --from n.kjdb --layers 1 --list
has "^forward#$IT (n/a, 5 phases): graph kernels by the NVTX ranges open at capture, below 'model'"
same "$(want "(before layer0):1" "layer0:$PER" "layer1:$((F - 1 - PER))" "(between layer1 and head):1" "head:1")" "--layers 1"
# cross-check: each layer phase holds the iteration's graph kernels captured under that layer
for l in layer0 layer1; do
	n=$(q n.kjdb "WITH RECURSIVE a(kid, rid) AS (SELECT k.id, k.capture_range_id FROM sequence_op s
		JOIN kernel k ON k.id = s.kernel_id WHERE s.iteration = $IT AND k.capture_range_id IS NOT NULL
		UNION ALL SELECT a.kid, r.parent_id FROM a JOIN nvtx_range r ON r.id = a.rid WHERE r.parent_id IS NOT NULL)
		SELECT count(DISTINCT a.kid) FROM a JOIN nvtx_range r ON r.id = a.rid WHERE r.name = '$l'")
	phases | tr , '\n' | grep -qx "$l:$n" || fail "$l phase is not its $n captured kernels: $(phases)"
done

# --layers 2: attn and mlp of each layer, in capture order
expect 0 "$K" pipeline --from n.kjdb --layers 2 --list
same "$(want "(before attn):1" "attn:$HALF" "mlp:$((PER - HALF))" "attn:$HALF" "mlp:$((PER - HALF))" "(after mlp):2")" "--layers 2"

# --region: every capture-time range so named; eager ranges by name too; the rest left out
expect 0 "$K" pipeline --from n.kjdb --region attn --list
same "$(want "attn:$HALF" "attn:$HALF")" "--region attn"
expect 0 "$K" pipeline --from n.kjdb --region layer1 --list
has "layer1 .* first=$((1 + PER)) last=$((2 * PER))"
expect 0 "$K" pipeline --from n.kjdb --region head --list
same "head:1" "--region head"
expect 1 "$K" pipeline --from n.kjdb --region nosuch --list
grep -q "no NVTX range named 'nosuch' inside forward#$IT, nor open when its graphs were captured" err ||
	fail "--region nosuch: $(cat err)"
expect 1 "$K" pipeline --from n.kjdb --layers 3 --list
grep -q "no NVTX range 3 level(s) below the capture root 'model'" err || fail "--layers 3: $(cat err)"
expect 0 "$K" pipeline --from n.kjdb --layers 0 --list
same "forward#$IT:$((F + 2))" "--layers 0"

# a memset of the graph launch takes the group of the graph kernel before it
cp n.kjdb m.kjdb
python3 - m.kjdb $IT <<'P'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1]); it = int(sys.argv[2])
corr = db.execute("SELECT correlation_id FROM sequence_op WHERE iteration = ? AND ordinal = 2", (it,)).fetchone()[0]
db.execute("UPDATE sequence_op SET ordinal = ordinal + 1 WHERE iteration = ? AND ordinal >= 3", (it,))
db.execute("INSERT INTO sequence_op(iteration, ordinal, pid, stream_id, op, correlation_id, bytes)"
           " VALUES(?, 3, 4242, 7, 'memset', ?, 64)", (it, corr))
db.commit()
P
expect 0 "$K" pipeline --from m.kjdb --layers 1 --list
same "$(want "(before layer0):1" "layer0:$((PER + 1))" "layer1:$((F - 1 - PER))" "(between layer1 and head):1" "head:1")" "graph memset"

# no range encloses every captured kernel (layer1 made a top-level range): the root is the capture
# itself, so --layers 1 takes the top-level ranges
cp n.kjdb r.kjdb
python3 -c 'import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); l=d.execute("SELECT id FROM nvtx_range WHERE name = \"layer1\"").fetchone()[0]; d.execute("UPDATE nvtx_range SET parent_id = NULL, depth = 0 WHERE id = ?", (l,)); d.execute("UPDATE nvtx_range SET depth = 1 WHERE parent_id = ?", (l,)); d.commit()' r.kjdb
expect 0 "$K" pipeline --from r.kjdb --layers 1 --list
has "below the capture$"
same "$(want "model:$((1 + PER))" "layer1:$((F - 1 - PER))" "(between layer1 and head):1" "head:1")" "no common capture range"

# bad capture data names the file and the field
cp n.kjdb b.kjdb
python3 -c 'import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); d.execute("UPDATE kernel SET capture_range_id = 999999 WHERE id = (SELECT kernel_id FROM sequence_op WHERE iteration = 4 AND ordinal = 1)"); d.commit()' b.kjdb
expect 1 "$K" pipeline --from b.kjdb --layers 1 --list
grep -q "b.kjdb: kernel.capture_range_id 999999 (sequence_op ordinal 1) names no nvtx_range row" err ||
	fail "dangling capture range: $(cat err)"
cp n.kjdb c.kjdb
python3 -c 'import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); d.execute("UPDATE nvtx_range SET parent_id = (SELECT id FROM nvtx_range WHERE name = \"attn\" LIMIT 1) WHERE name = \"model\""); d.commit()' c.kjdb
expect 1 "$K" pipeline --from c.kjdb --layers 1 --list
grep -q "c.kjdb: nvtx_range .*: parent_id chain deeper than 64 levels" err || fail "parent cycle: $(cat err)"

# the default graph spool: capture > attn/mlp, one range per kernel, alternating
python3 "$S/tests/tools/mkspool.py" d --graph --functions 5 --iters 6
"$K" ingest d -o d.kjdb 2>/dev/null || fail "ingest of the default graph spool"
expect 0 "$K" pipeline --from d.kjdb --layers 1 --list
same "$(want attn:1 mlp:1 attn:1 mlp:1 attn:1 "(after attn):1")" "default graph spool"

# no range open at capture (5 captured kernels and the node-by-node one): refused, with why and what to do; --layers 0 still takes it whole
python3 "$S/tests/tools/mkspool.py" z --graph --functions 5 --iters 6 --no-capture-ranges
"$K" ingest z -o z.kjdb 2>/dev/null || fail "ingest of the spool without capture ranges"
expect 1 "$K" pipeline --from z.kjdb --layers 1 --list
grep -q "z.kjdb: the kept iteration forward#$IT ran as CUDA graph launches and no NVTX range was open when its graphs were captured" err ||
	fail "refusal: $(cat err)"
grep -q "kernel.capture_range_id is empty for all $((5 + 1)) of its graph kernels" err || fail "refusal count: $(cat err)"
grep -q "push ranges around the modules while capturing (e.g. examples/torchvision_nvtx.py" err ||
	fail "refusal remedy: $(cat err)"
expect 1 "$K" pipeline --from z.kjdb --region attn --list
grep -q "no NVTX range was open when its graphs were captured" err || fail "refusal with --region: $(cat err)"
expect 0 "$K" pipeline --from z.kjdb --layers 0 --list
same "forward#$IT:$((5 + 1))" "--layers 0 without capture ranges" # 5 captured + 1 node-by-node

# run through a stand-in replay worker (times from the run itself, no energy): each phase says
# "energy not measured" and the energy columns stay empty, never 0; with energy asked for on a run
# without saved buffers, the summary says the phases ran on random data and names the remedy
export KJ_REPLAY_WORKER="$S/tests/tools/replay_worker_standin.py" KJ_STANDIN_KJOULE="$K"
expect 0 "$K" pipeline --from n.kjdb --layers 1 --idle-w 80 --out po
has "layer0 .* ms   energy not measured"
has "energy not measured (5 phase(s) without one)"
lacks " 0 J"
python3 -c 'import csv,sys; r=list(csv.DictReader(open(sys.argv[1])))[0]; sys.exit(not (r["status"] == "ok" and r["seq_energy_j"] == "" and r["pp_energy_per_item_j"] == "" and float(r["seq_latency_ms"]) > 0))' po/summary.csv ||
	fail "summary.csv of a run without energies: $(cat po/summary.csv)"
expect 0 "$K" pipeline --from n.kjdb --layers 1 --idle-w 80 --no-energy --out pn
has "energy not measured (5 phase(s) without one: --no-energy)"
STANDIN_MJ=2 expect 0 "$K" pipeline --from n.kjdb --layers 1 --idle-w 80 --out pe
has "phases replayed on random data: .*--snapshot-graphs"
grep -q "phases replayed on random data" pe/summary.csv || fail "summary note: $(cat pe/summary.csv)"
unset KJ_REPLAY_WORKER KJ_STANDIN_KJOULE

# a run ingested before capture ranges were kept (no column): refused, saying so
cp z.kjdb old.kjdb && python3 -c 'import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); d.execute("ALTER TABLE kernel DROP COLUMN capture_range_id"); d.commit()' old.kjdb
expect 1 "$K" pipeline --from old.kjdb --layers 1 --list
grep -q "ingested before kjoule kept the NVTX ranges open at capture (no column kernel.capture_range_id)" err ||
	fail "run without capture ranges: $(cat err)"

# the shipped graph run (examples/gpt_graph.py) opens no range while capturing: refused, saying so
G=$S/tests/data/gpt_graph_short.kjdb
expect 1 "$K" pipeline --from "$G" --layers 1 --list
grep -q "no NVTX range was open when its graphs were captured" err || fail "shipped graph run: $(cat err)"
expect 0 "$K" pipeline --from "$G" --layers 0 --list
it=$(q "$G" "SELECT value FROM meta WHERE key = 'params_iteration'")
same "$it:$(q "$G" "SELECT count(*) FROM sequence_op WHERE iteration = ${it##*#}")" "shipped graph run, --layers 0"
finish
