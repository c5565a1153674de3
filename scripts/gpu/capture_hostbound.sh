#!/usr/bin/env bash
# On a GPU machine with two GPUs: what `kjoule run --capture` costs on the two host-bound programs,
# each run measured by its own steady loop (its printed median step / request time, start-up left
# out), whole runs alternating in a new order each round (bench/trace_overhead/capture_pairs.py):
# untraced; a window that never opens (outside); a window open from instance 3 on (inside); the
# defaults; --no-params; CUPTI's activity records alone (KJOULE_COST_STUDY=1024). The JAX step on
# GPU 0 and the compiled decode loop on GPU 1 at once. Files in $OUT: capture_pairs_jax.json,
# capture_pairs_decode.json and their logs.
#   env: CHB_S (seconds of rounds each, 400); CHB_GPUS (the two GPUs, default "0 1"); CHB_ONLY (jax
#   or decode: that program alone, on the first GPU of CHB_GPUS); CHB_LEAVE_OUT (contestants not
#   run, e.g. "full_trace no_params"). On a machine of one GPU without CHB_ONLY, the two programs
#   run one after the other on it (2 x CHB_S seconds).
set -u
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
kj=$KJ_BUILD/kjoule
tmp=$(mktemp -d)
s=${CHB_S:-400}
read -r gj gd <<<"${CHB_GPUS:-0 1}"
only=${CHB_ONLY:-}
leave=()
[ -n "${CHB_LEAVE_OUT:-}" ] && leave=(--leave-out ${CHB_LEAVE_OUT})
[ "$only" = decode ] && gd=$gj
# one GPU and both programs: one after the other (never two programs on one GPU: they would time-slice)
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
serial=0
[ -z "$only" ] && [ "${ngpu:-0}" -lt 2 ] && { serial=1; gd=$gj; echo "one GPU: the JAX step, then the decode loop, $s s each"; }
pj= pd=
export PYTHONUNBUFFERED=1 # each run said as it ends: a call cut short still shows its rounds
mkdir -p "$tmp/j" "$tmp/d"
[ "$only" != decode ] && CUDA_VISIBLE_DEVICES=$gj timeout $((s + 90)) python3 bench/trace_overhead/capture_pairs.py --kjoule "$kj" --name jax_step \
	--capture step@1000000:20 --inside 3 --metric median_ms --seconds "$s" --timeout 80 --tmp "$tmp/j" "${leave[@]}" \
	-o "$OUT/capture_pairs_jax.json" -- python3 examples/jax_step.py --steps 400 >"$OUT/capture_pairs_jax.log" 2>&1 &
[ "$only" != decode ] && pj=$!
[ "$serial" = 1 ] && wait $pj
[ "$only" != jax ] && CUDA_VISIBLE_DEVICES=$gd timeout $((s + 90)) python3 bench/trace_overhead/capture_pairs.py --kjoule "$kj" --name decode_compiled \
	--capture request@1000000:20 --inside 3 --metric ms_per_request --seconds "$s" --timeout 120 --tmp "$tmp/d" "${leave[@]}" \
	-o "$OUT/capture_pairs_decode.json" -- python3 examples/hf_decode.py --requests 8 --warmup 2 >"$OUT/capture_pairs_decode.log" 2>&1 &
[ "$only" != jax ] && pd=$!
wait $pj $pd
python3 - "$OUT" <<'PY'
import json, os, sys
for k in ("jax", "decode"):
    p = os.path.join(sys.argv[1], f"capture_pairs_{k}.json")
    if not os.path.exists(p):
        print(k, "no result"); continue
    d = json.load(open(p))
    print(f"{k}: rounds {d['rounds']} failed {d['failed_runs']}")
    for name, r in d["ratios"].items():
        print(f"  {name:32s} {r['median']}  q {r['quartiles']}")
PY
