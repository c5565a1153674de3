#!/usr/bin/env bash
# Every committed held-out set of the H100 sweeps, each scored by models of today's build fitted
# on the operator's training grid and every other set (bench/predict_accuracy/grouped_cv.py):
# how well the predictor does on shapes off the grid's alignment, at ten offsets of the dense
# step, without a GPU. Writes bench/results/predict_heldout_sets.json (per operator: each set's
# time and energy MAPE, forward and backward, and its scored rows; the mean over sets).
# Sets by offset of the dense step (NAME: folder); 'x' names are time-only training sweeps scored
# as sets. Each operator uses only the sets measured on its current implementation.
# usage: bash bench/predict_accuracy/heldout_sets.sh [KJOULE] [RESULT.json]   (about 15 min on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/../.."
kj=${1:-build/kjoule}
out=${2:-bench/results/predict_heldout_sets.json}
S=bench/results/sweep_csv
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
set_args() { # OP NAME:DIR... -> --set NAME=$S/DIR/OP/inside (x-sets name their subfolder: NAME:DIR/SUB)
	local op=$1 s name dir sub
	shift
	for s in "$@"; do
		name=${s%%:*} dir=${s#*:} sub=inside
		[[ $dir == */* ]] && sub=${dir#*/} dir=${dir%%/*}
		echo "--set $name=$S/$dir/$op/$sub"
	done
}
common="0.875:h100_heldout_0.875 0.125:h100_heldout_0.125 0.4375:h100_heldout_0.4375 0.3125:h100_heldout_0.3125"
gemm="0.75:h100_heldout_0.75 0.4375:h100_heldout_0.4375 0.5625:h100_heldout_0.5625 0.3125:h100_heldout_0.3125 0.6875:h100_heldout_0.6875"
for op in linear1 linear2 linear3 linear4 flash_atten layernorm softmax; do
	case $op in
	linear2)
		train="$S/h100_combined/$op"
		sets="0.625x:h100_heldout_0.875/extra1 0.875:h100_heldout_0.875 0.125:h100_heldout_0.125 $gemm" ;;
	linear1 | linear3 | linear4) # measured whole on the bias implementation in h100_heldout_0.75
		train="$S/h100_heldout_0.75/$op"
		sets="0.125x:h100_heldout_0.75/extra1 0.625x:h100_heldout_0.75/extra2 $gemm" ;;
	flash_atten)
		train="$S/h100_combined/$op"
		sets="0.625x:h100_heldout_0.875/extra1 $common 0.75:h100_heldout_0.75" ;;
	layernorm)
		train="$S/h100_combined/$op"
		sets="0.625x:h100_heldout_0.875/extra1 $common" ;;
	softmax) # its training grid and 0.375 set re-measured whole on its current kernel
		train="$S/h100_softmax/$op"
		sets="0.375:h100_softmax 0.625x:h100_heldout_0.875/extra1 $common" ;;
	esac
	# shellcheck disable=SC2046
	python3 bench/predict_accuracy/grouped_cv.py --kjoule "$kj" --op $op --train "$train/train" --train "$train/dense" \
		$(set_args $op $sets) --work "$work/w_$op" -o "$work/$op.json"
done
python3 - "$out" "$work" "$0 $*" <<'P'
import datetime, json, os, subprocess, sys
out, work, cmd = sys.argv[1:]
ops = {op: json.load(open(os.path.join(work, op + ".json")))
       for op in ("linear1", "linear2", "linear3", "linear4", "flash_atten", "layernorm", "softmax")}
versions = sorted({o.get("features_version") for o in ops.values()} - {None})
devices = set()
for o in ops.values():
    for d in o["sets"].values():
        meta = os.path.join(d.split("/sweep_csv/")[0], "sweep_csv", d.split("/sweep_csv/")[1].split("/")[0], "measured.json")
        devices.add(json.load(open(meta))["device"])
commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip() or None
res = {"benchmark": "predict_heldout_sets",
       "device": "; ".join(sorted(devices)) + " (the sweep CSVs; fitted and scored on the CPU)",
       "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
       "command": "bash bench/predict_accuracy/heldout_sets.sh " + " ".join(cmd.split()[1:]),
       "features_version": versions[0] if len(versions) == 1 else versions, "git_commit": commit,
       "note": "each held-out set (named by its offset of the dense step; 'x': a time-only training sweep "
               "scored as a set) scored by models fitted on the operator's training grid and every other set",
       "ops": ops}
tmp = out + ".tmp"
with open(tmp, "w") as f:
    json.dump(res, f, indent=1, allow_nan=False)
os.replace(tmp, out)
for op, o in ops.items():
    m = o["mean"]
    f = lambda x: "-" if x is None else f"{x:.1f}"
    print(f"{op:<12} sets {len(o['groups']):2d}  time fwd {f(m['fwd_time_mape_pct'])} bwd {f(m['bwd_time_mape_pct'])}"
          f"  energy fwd {f(m['fwd_energy_mape_pct'])} bwd {f(m['bwd_energy_mape_pct'])}")
P
