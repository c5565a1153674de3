#!/usr/bin/env bash
# The main job. With a GPU: trace the BLOOM-560M example, replay its kernels, compare.
# Without one: the analysis of the real example run shipped in the repo. Both end with the HTML
# report of the shipped run (and of the fresh run) beside the kjoule binary.
set -euo pipefail
kj=${1:-build/kjoule}
run=${2:-examples/runs/bloom560m.kjdb}
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && [ -z "${KJ_DEMO_OFFLINE:-}" ]; then
	out=$(mktemp -d)/bloom560m.kjdb
	"$kj" run -o "$out" -- python3 examples/bloom560m.py --iters 20 --warmup 5
	"$kj" replay "$out" --energy
	run=$out
fi
echo "== kjoule info $run"; "$kj" info "$run"
echo; echo "== kjoule kernels $run --top 15"; "$kj" kernels "$run" --top 15
echo; echo "== kjoule compare $run"; "$kj" compare "$run"
# unpack NAME: a run shipped compressed (examples/runs/NAME.kjdb.xz), unpacked beside the binary
# once (again when the shipped one is newer), built aside and renamed into place; prints its path
unpack() {
	local to
	to=$(dirname "$kj")/$1.kjdb
	if [ ! -s "$to" ] || [ "examples/runs/$1.kjdb.xz" -nt "$to" ]; then
		xz -dc "examples/runs/$1.kjdb.xz" > "$to.part"
		mv -f "$to.part" "$to"
	fi
	echo "$to"
}
# the graph-launched run ships compressed (1,004 forwards: 30 MB as a database)
graphrun=$(unpack gpt_graph)
echo; echo "== a program captured in a CUDA graph: kjoule compare $graphrun"
echo "   (GPT-2-medium shape in torch.cuda.graph, 1,004 forwards on an H200: each forward is one graph"
echo "    launch whose kernels run after the NVTX range closed; they belong to the iteration that"
echo "    launched them)"
"$kj" compare "$graphrun" | sed -n '1,16p;/^Sequence replay/,/^Tiers/p'
caprun=$(unpack gpt_train_capture)
echo; echo "== a few steps of a long job: kjoule info $caprun"
echo "   (a GPT training loop of 500 steps on an H200 under --capture step@100:200: 200 steps traced, every"
echo "    step marked, power sampled throughout, CUPTI taken out of the program after the window)"
"$kj" info "$caprun" | sed -n '/^trace size/,$p'
shipped=examples/runs/bloom560m.kjdb
page=$(dirname "$kj")/bloom560m_report.html
"$kj" report "$graphrun" -o "$(dirname "$kj")/gpt_graph_report.html" --quiet
echo; echo "== kjoule report $shipped -o $page"; "$kj" report "$shipped" -o "$page" --quiet
if [ "$run" != "$shipped" ]; then
	"$kj" report "$run" -o "$(dirname "$kj")/demo_run_report.html" --quiet
	page="$page and $(dirname "$kj")/demo_run_report.html"
fi
echo "the reports: open $page (and $(dirname "$kj")/gpt_graph_report.html) in a browser (one file each, no network needed)"
