#!/usr/bin/env bash
# On the GPU machine: energy of graph-launched programs over long runs (issue 11), and what the
# tracer sees of XLA's memset nodes.
#   gpt   examples/gpt_graph.py in torch.cuda.graph, GPT_ITERS (1500) forwards: traced, replayed
#         with --energy (per kernel, linear chain and topology), compared
#   jaxdbg  examples/jax_step.py, 30 steps, traced with KJOULE_DEBUG_GRAPH=1: every graph node
#         walked and cloned on stderr; counts of memset nodes, their parameters, and which memset
#         activities found a destination
#   jax   the same, JAX_STEPS (3000) steps, replayed with --energy and compared
# GE_RUN_ARGS: `kjoule run` options for gpt and jax (default --snapshot-graphs: replays run on the
# programs' own buffers, docs/replay.md "Data"; GE_RUN_ARGS=" " for the replay fill alone)
# usage (device): source scripts/device-env.sh; bash scripts/gpu/graph_energy.sh [PART...]
# Results: $OUT/graph_energy.json (device, date, command, raw compare figures), $OUT/*.txt
set -u
OUT=${OUT:-/tmp/kjout}
W=/tmp/kjge; rm -rf "$W"; mkdir -p "$W" "$OUT"
kj=$KJ_BUILD/kjoule
export KJ_REPLAY_WORKER=$KJ_BUILD/kjoule-replay-worker
parts=${*:-gpt jaxdbg jax}
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s]"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$W/gpu.txt"
"$kj" power --idle --duration 5 --db "$W/idle.kjdb" > /dev/null 2>&1
for part in $parts; do
case $part in
gpt)
	echo "$(el) gpt: trace ${GPT_ITERS:-1500} forwards"
	timeout 200 "$kj" run --force -o "$W/gpt.kjdb" ${GE_RUN_ARGS:---snapshot-graphs} -- python3 examples/gpt_graph.py --mode graph \
		--iters "${GPT_ITERS:-1500}" > "$W/gpt.log" 2>&1 || tail -3 "$W/gpt.log"
	timeout 60 "$kj" power --idle --duration 3 --db "$W/gpt.kjdb" > /dev/null 2>&1
	echo "$(el) gpt: replay --energy"
	timeout 300 "$kj" replay "$W/gpt.kjdb" --energy > "$W/gpt.replay.log" 2>&1 || tail -3 "$W/gpt.replay.log"
	grep -E "faulted|data: " "$W/gpt.replay.log" | cut -c1-240 | head -6
	"$kj" compare "$W/gpt.kjdb" --json > "$W/gpt.compare.json" 2>/dev/null
	"$kj" compare "$W/gpt.kjdb" > "$OUT/gpt.compare.txt" 2>&1
	;;
jaxdbg)
	echo "$(el) jax: trace 30 steps with the graph walk on stderr"
	KJOULE_DEBUG_GRAPH=1 timeout 200 "$kj" run --force -o "$W/jaxdbg.kjdb" --iteration-range step -- \
		python3 examples/jax_step.py --steps 30 > "$W/jaxdbg.log" 2>&1 || tail -3 "$W/jaxdbg.log"
	{
		echo "walked nodes by type: $(grep -o 'kjoule graph: walk .* type [0-9]*' "$W/jaxdbg.log" | awk '{print $NF}' | sort | uniq -c | tr '\n' ' ')"
		echo "walked depths: $(grep -o 'depth [0-9]*' "$W/jaxdbg.log" | sort | uniq -c | tr '\n' ' ')"
		echo "cloned nodes by type: $(grep 'kjoule graph: clone' "$W/jaxdbg.log" | awk '{print $NF}' | sort | uniq -c | tr '\n' ' ')"
		echo "memset param reads: $(grep 'kjoule graph: memset' "$W/jaxdbg.log" | sed 's/.*params rc \([0-9]*\).*/rc \1/' | sort | uniq -c | tr '\n' ' ')"
		grep 'kjoule graph: memset' "$W/jaxdbg.log" | head -5
		grep -v '^kjoule graph:' "$W/jaxdbg.log" | grep -i "memset\|graph" | head -5
		python3 - "$W/jaxdbg.kjdb" <<'P'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
q = lambda s: db.execute(s).fetchall()
print("graph_node types:", q("SELECT type, count(*) FROM graph_node GROUP BY type"))
print("memsets: all, in graphs, with address:", q("SELECT count(*), count(graph_node_id), count(address) FROM memset"))
print("graph memset node ids found in graph_node:", q("SELECT count(*) FROM memset m JOIN graph_node g ON g.node_id = m.graph_node_id"))
print("graph memset node ids found as clones:", q("SELECT count(*) FROM memset m JOIN graph_node_clone c ON c.node_id = m.graph_node_id"))
print("graph memset sizes and values:", q("SELECT bytes, value, count(*), count(address) FROM memset WHERE graph_node_id IS NOT NULL GROUP BY bytes, value"))
print("sample graph memset node ids:", q("SELECT graph_node_id FROM memset WHERE graph_node_id IS NOT NULL LIMIT 5"))
print("memset graph nodes:", q("SELECT node_id, parent_node_id, graph_id FROM graph_node WHERE type LIKE '%memset%' LIMIT 8"))
print("problems:", q("SELECT what FROM problem LIMIT 6"))
P
	} > "$OUT/jax_memset_debug.txt" 2>&1
	cat "$OUT/jax_memset_debug.txt" | cut -c1-300
	;;
jax)
	echo "$(el) jax: trace ${JAX_STEPS:-3000} steps"
	timeout 200 "$kj" run --force -o "$W/jax.kjdb" --iteration-range step ${GE_RUN_ARGS:---snapshot-graphs} -- python3 examples/jax_step.py \
		--steps "${JAX_STEPS:-3000}" > "$W/jax.log" 2>&1 || tail -3 "$W/jax.log"
	timeout 60 "$kj" power --idle --duration 3 --db "$W/jax.kjdb" > /dev/null 2>&1
	echo "$(el) jax: replay --energy"
	timeout "${JAX_REPLAY_S:-280}" "$kj" replay "$W/jax.kjdb" --energy > "$W/jax.replay.log" 2>&1 || tail -3 "$W/jax.replay.log"
	grep -E "faulted|data: " "$W/jax.replay.log" | cut -c1-240 | head -6
	python3 -c 'import sqlite3,sys; print("jax memsets: all, in graphs, with address:", sqlite3.connect(sys.argv[1]).execute("SELECT count(*), count(graph_node_id), count(address) FROM memset").fetchone())' "$W/jax.kjdb"
	"$kj" compare "$W/jax.kjdb" --json > "$W/jax.compare.json" 2>/dev/null
	"$kj" compare "$W/jax.kjdb" > "$OUT/jax.compare.txt" 2>&1
	;;
esac
done
echo "$(el) done"
python3 - "$W" "$OUT/graph_energy.json" "$parts" <<'P'
import json, os, sys, datetime
W, out, parts = sys.argv[1:4]
keys = ["busy_us", "kernel_sum_us", "wall_us", "energy_measured_j", "energy_measured_basis",
        "energy_measured_windows_j", "energy_measured_loop_j", "energy_sequence_pace_us", "energy_measured_mean_unc_pct",
        "energy_error_judgeable", "energy_kernels_j", "energy_idle_j", "energy_predicted_j", "energy_error_pct",
        "energy_predicted_insitu_time_j", "energy_error_insitu_time_pct", "energy_predicted_sequence_j",
        "energy_error_sequence_pct", "energy_sequence_mode", "sequence_topology_energy_j",
        "sequence_graph_energy_j", "explained_fraction", "explained_fraction_sequence"]
sys.path.insert(0, "scripts/gpu")
from json_find import find  # noqa: E402
R = {"benchmark": "graph_energy", "device": open(os.path.join(W, "gpu.txt")).read().strip(),
     "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
     "command": "bash scripts/gpu/graph_energy.sh " + parts,
     "env": {k: os.environ.get(k) for k in ("GPT_ITERS", "JAX_STEPS", "GE_RUN_ARGS")}, "runs": {}}
print("%-10s %9s %9s %8s %9s %8s %9s %8s %9s %8s" % ("run", "busy_us", "meas_J", "unc%", "Σiso_J", "err%",
      "insitu_J", "err%", "seq_J", "err%"))
for name in ("gpt", "jax"):
    p = os.path.join(W, name + ".compare.json")
    if not os.path.exists(p):
        continue
    try:
        c = json.load(open(p))
    except Exception as e:
        R["runs"][name] = {"error": str(e)}
        continue
    r = {k: find(c, k) for k in keys}
    # the program's own report (NVML energy per forward or step over its timed loop, host waits
    # included) and what the replay said about the iteration's energy (paced or back to back)
    try:
        lines = [l for l in open(os.path.join(W, name + ".log")) if l.startswith("{")]
        r["program"] = json.loads(lines[-1]) if lines else None
    except (OSError, ValueError):
        r["program"] = None
    try:
        r["replay_lines"] = [l.strip()[:300] for l in open(os.path.join(W, name + ".replay.log"))
                             if any(w in l for w in ("paced", "back to back", "not rebuilt", "sequence replay"))][:8]
    except OSError:
        r["replay_lines"] = []
    R["runs"][name] = r
    f = lambda v, fmt: "-" if v is None else fmt % v
    print("%-10s %9s %9s %8s %9s %8s %9s %8s %9s %8s" % (name, f(r["busy_us"], "%.1f"), f(r["energy_measured_j"], "%.4f"),
          f(r["energy_measured_mean_unc_pct"], "%.1f"), f(r["energy_predicted_j"], "%.4f"), f(r["energy_error_pct"], "%+.1f"),
          f(r["energy_predicted_insitu_time_j"], "%.4f"), f(r["energy_error_insitu_time_pct"], "%+.1f"),
          f(r["energy_predicted_sequence_j"], "%.4f"), f(r["energy_error_sequence_pct"], "%+.1f")))
json.dump(R, open(out, "w"), indent=1)
P
