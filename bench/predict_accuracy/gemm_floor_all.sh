#!/usr/bin/env bash
# gemm_floor.py over the committed H100 sets of linear1-4 (each GEMM's own folders: linear2's from
# session 12 on, linear1/3/4's from their bias implementation, session 17, on), gathered into one
# result. CPU only.
# usage: bash bench/predict_accuracy/gemm_floor_all.sh [RESULT.json]
set -euo pipefail
cd "$(dirname "$0")/../.."
S=bench/results/sweep_csv R=bench/results
out=${1:-$R/predict_gemm_floor_s28.json}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sets() { for s in "$@"; do echo "--set $s=$S/h100_$s/$op/inside"; done; }
models() { for s in "$@"; do echo "--model-result $s=$R/predict_accuracy_$s.json"; done; }
for op in linear1 linear2 linear3 linear4; do
	if [ $op = linear2 ]; then
		args="--pool train=$S/h100_combined/$op/train --pool dense=$S/h100_combined/$op/dense
		      --pool extra=$S/h100_fourth/$op/extra1 --set quarter=$S/h100_fresh_quarter/$op/inside
		      --set half=$S/h100_dense/$op/inside $(sets fourth fifth sixth seventh eighth ninth tenth)
		      --pair $S/h100_dense/$op/train:$S/h100_dense/$op/dense
		      --pair $S/h100_linear2_whole/$op/train:$S/h100_linear2_whole/$op/dense
		      $(models fourth fifth sixth seventh eighth ninth tenth)"
	else
		args="--pool train=$S/h100_sixth/$op/train --pool dense=$S/h100_sixth/$op/dense
		      --pool extra1=$S/h100_sixth/$op/extra1 --pool extra2=$S/h100_sixth/$op/extra2
		      $(sets sixth seventh eighth ninth tenth) --pair $S/h100_sixth/$op/train:$S/h100_sixth/$op/dense
		      $(models sixth seventh eighth ninth tenth)"
	fi
	# shellcheck disable=SC2086
	python3 bench/predict_accuracy/gemm_floor.py --op $op $args -o "$work/$op.json"
done
python3 - "$out" "$work" "$0 $*" <<'P'
import datetime, json, os, sys
out, work, cmd = sys.argv[1:]
ops = {op: json.load(open(os.path.join(work, op + ".json"))) for op in ("linear1", "linear2", "linear3", "linear4")}
res = {"benchmark": "predict_gemm_floor", "device": "NVIDIA H100 80GB HBM3 (the committed sweep CSVs; computed on the CPU)",
       "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
       "command": "bash bench/predict_accuracy/gemm_floor_all.sh " + " ".join(cmd.split()[1:]), "ops": ops}
tmp = out + ".tmp"
with open(tmp, "w") as f:
    json.dump(res, f, indent=1, allow_nan=False)
os.replace(tmp, out)
P
