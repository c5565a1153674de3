#!/usr/bin/env bash
# gemm_floor.py over the committed H100 sets of linear1-4 (each GEMM's own folders: linear2's grid
# and every held-out set; linear1/3/4's measured whole on their bias implementation in
# h100_heldout_0.75 and the sets after it), with the model's rows of each set from
# bench/results/predict_heldout_sets.json (heldout_sets.sh), gathered into one result. CPU only.
# usage: bash bench/predict_accuracy/gemm_floor_all.sh [RESULT.json] [HELDOUT.json]
set -euo pipefail
cd "$(dirname "$0")/../.."
S=bench/results/sweep_csv R=bench/results
out=${1:-$R/predict_gemm_floor.json}
heldout=${2:-$R/predict_heldout_sets.json}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# the model's scored rows of each set, one file per operator and set, as gemm_floor.py reads them
python3 - "$heldout" "$work" <<'P'
import json, os, sys
r = json.load(open(sys.argv[1]))
for op, o in r["ops"].items():
    for name, g in o["groups"].items():
        with open(os.path.join(sys.argv[2], f"model_{op}_{name}.json"), "w") as f:
            json.dump({"ops": {op: {"inside": {"rows": g["rows"]}}}}, f)
P
sets() { for s in "$@"; do echo "--set $s=$S/h100_heldout_$s/$op/inside"; done; }
models() { for s in "$@"; do echo "--model-result $s=$work/model_${op}_$s.json"; done; }
for op in linear1 linear2 linear3 linear4; do
	if [ $op = linear2 ]; then
		args="--pool train=$S/h100_combined/$op/train --pool dense=$S/h100_combined/$op/dense
		      --pool extra=$S/h100_heldout_0.875/$op/extra1 --set 0.25=$S/h100_heldout_0.25/$op/inside
		      --set 0.5=$S/h100_dense/$op/inside $(sets 0.875 0.125 0.75 0.4375 0.5625 0.3125 0.6875)
		      --pair $S/h100_dense/$op/train:$S/h100_dense/$op/dense
		      --pair $S/h100_linear2_whole/$op/train:$S/h100_linear2_whole/$op/dense
		      $(models 0.875 0.125 0.75 0.4375 0.5625 0.3125 0.6875)"
	else
		args="--pool train=$S/h100_heldout_0.75/$op/train --pool dense=$S/h100_heldout_0.75/$op/dense
		      --pool extra1=$S/h100_heldout_0.75/$op/extra1 --pool extra2=$S/h100_heldout_0.75/$op/extra2
		      $(sets 0.75 0.4375 0.5625 0.3125 0.6875) --pair $S/h100_heldout_0.75/$op/train:$S/h100_heldout_0.75/$op/dense
		      $(models 0.75 0.4375 0.5625 0.3125 0.6875)"
	fi
	# shellcheck disable=SC2086
	python3 bench/predict_accuracy/gemm_floor.py --op $op $args -o "$work/$op.json"
done
python3 - "$out" "$work" "$0 $*" <<'P'
import datetime, json, os, sys
out, work, cmd = sys.argv[1:]
ops = {op: json.load(open(os.path.join(work, op + ".json"))) for op in ("linear1", "linear2", "linear3", "linear4")}
res = {"benchmark": "predict_gemm_floor", "device": "NVIDIA H100 80GB HBM3, 580.159.04 (the committed sweep CSVs; computed on the CPU)",
       "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
       "command": "bash bench/predict_accuracy/gemm_floor_all.sh " + " ".join(cmd.split()[1:]), "ops": ops}
tmp = out + ".tmp"
with open(tmp, "w") as f:
    json.dump(res, f, indent=1, allow_nan=False)
os.replace(tmp, out)
P
