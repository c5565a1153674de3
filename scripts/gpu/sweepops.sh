#!/usr/bin/env bash
# On the GPU machine: kjoule-sweep-worker's GPU tests, the two ceilings (a 1 GiB device copy, an
# 8192^3 bf16 GEMM), then every operator once at one realistic shape (b=4, l=2048, dim=4096, h=32,
# mp=1; bf16) with energy and the correctness check: fwd/bwd us, uJ, error, fraction of roofline.
# usage (device, repo root): source scripts/device-env.sh; bash scripts/gpu/sweepops.sh [PRECISION]
# Files in $OUT: sweepops_selftest.log, sweepops_tests.log, sweepops_raw.txt, sweepops_worker.err,
# sweepops.json (device, date, command, ceilings and raw answers); a short `kjoule sweep` end to end
# goes into sweepops_tests.log. The summary table comes last.
set -u
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
prec=${1:-bf16}
w=${KJ_BUILD:-build}/kjoule-sweep-worker
[ -x "$w" ] || { echo "no $w: build first (scripts/device-prep.sh)"; exit 1; }
export KJ_SWEEP_ENERGY_S=${KJ_SWEEP_ENERGY_S:-1}

echo "== selftest (every op, fp16/bf16/fp32, small shapes, against double CPU references)"
timeout 300 "$w" --selftest > "$OUT/sweepops_selftest.log" 2>&1
echo "selftest exit $?"
grep -E "FAIL|selftest:" "$OUT/sweepops_selftest.log" | head -30
echo "== ctest -R gpu_sweep_protocol (gpu_sweep_selftest is the run above)"
(cd "${KJ_BUILD:-build}" && timeout 300 ctest -R gpu_sweep_protocol --output-on-failure) > "$OUT/sweepops_tests.log" 2>&1
tail -5 "$OUT/sweepops_tests.log"

echo "== kjoule sweep end to end (linear1, 8 shapes, bf16, energy)"
e2e=$(mktemp -d)
cat > "$e2e/linear1.yml" <<'YML'
{
  "module_name": "target_functions", "kernel_name": "linear1", "function_name": "linear1",
  "columns_name": ['mp', 'b', 'l', 'dim', 'F_dur(us)', 'B_dur(us)'],
  "first_n_column": 4,
  "starts": [1, 1, 512, 1024], "steps": [2, 2, 512, 1024], "ends": [1, 2, 1024, 2048],
  "operators": ['mul', 'mul', 'add', 'add'],
  "warmup_shapes": [1, 1, 512, 1024], "wait": 1, "warmup": 2, "active": 10,
  "shapes": [1, 1, 512, 1024], "run": "get_all"
}
YML
t0=$(date +%s)
timeout 200 "${KJ_BUILD:-build}/kjoule" sweep "$e2e/linear1.yml" --precision bf16 --energy --out "$e2e" \
	> "$e2e/sweep.out" 2>&1
echo "kjoule sweep exit $? in $(( $(date +%s) - t0 )) s"
{ echo "== kjoule sweep end to end"; cat "$e2e/sweep.out"; cat "$e2e"/sampling_data/*.csv "$e2e"/sampling_log/*.txt; } \
	>> "$OUT/sweepops_tests.log" 2>&1
cat "$e2e"/sampling_data/*.csv 2>/dev/null | head -10
rm -rf "$e2e"

echo "== ceilings"
ceil=$(timeout 120 "$w" --ceilings 2>>"$OUT/sweepops_worker.err")
echo "$ceil"

S="b=4 l=2048 dim=4096 h=32 mp=1"
reqs="linear1 1,4,2048,4096
linear2 1,4,2048,4096
linear3 1,4,2048,4096
linear4 1,4,2048,4096
linear_final 1,4,2048,4096
layernorm 4,2048,4096
RMSlayernorm 4,2048,4096
softmax 1,4,32,2048
flash_atten 1,4,32,2048,4096
gelu 1,4,2048,4096
res_add 4,2048,4096
RoPE 1,4,32,2048,4096
embedding 1,4,2048,4096
bmm 1,4,32,2048,4096
baddbmm 1,4,32,2048,4096
fillmask 1,4,32,2048,4096
ScaledUpperTriangMaskedSoftmax 1,4,32,2048
parallel_cross_entropy_128 1,4,2048
moe 1,4,2048,4096,8,14336,2
firstStage_optimizer 1,4096,4
middleStage_optimizer 1,4096,4
lastStage_optimizer 1,4096,4"
echo "== operators at $S, $prec, energy on (${KJ_SWEEP_ENERGY_S} s a pass), check on"
: > "$OUT/sweepops_raw.txt"
start=$(date +%s)
while read -r op shape; do
	line="$op $prec $shape 1 1"
	t0=$(date +%s.%N)
	ans=$(echo "$line" | timeout 150 "$w" 2>>"$OUT/sweepops_worker.err")
	rc=$?
	t1=$(date +%s.%N)
	[ -n "$ans" ] || ans="KJ_SWEEP status=error msg=\"worker exit $rc, no answer (timeout 150 s or crash; see sweepops_worker.err)\""
	printf '%s\t%s\t%.1f\t%s\n' "$line" "$rc" "$(awk "BEGIN{print $t1 - $t0}")" "$ans" >> "$OUT/sweepops_raw.txt"
	echo "$op: $ans" | cut -c1-220
done <<< "$reqs"
echo "operators took $(( $(date +%s) - start )) s"

python3 - "$OUT" "$prec" "$ceil" "$0 $*" <<'PY'
import json, re, subprocess, sys, datetime, os
out, prec, ceil, cmd = sys.argv[1:5]
eb = 4 if prec == "fp32" else 2
def kv(s):
    d = {k: v for k, v in re.findall(r'(\w+)=("[^"]*"|\S+)', s)}
    return {k: (None if v == '-' else v.strip('"') if v.startswith('"') else float(v) if re.match(r'^[-0-9.e+]+$', v) else v) for k, v in d.items()}
c = kv(ceil)
bw = c.get("copy_gbs"); peak = c.get("gemm_bf16_tflops")
V = 50304
def model(op, v):
    """Fallback FLOPs and fewest bytes (fwd, bwd) when the worker's answer carries none."""
    if op.startswith("linear"):
        mp, b, l, dim = v; M = b * l
        K, N = {"linear1": (dim, 3*dim//mp), "linear2": (dim//mp, dim), "linear3": (dim, 4*dim//mp),
                "linear4": (4*dim//mp, dim), "linear_final": (dim, V//mp)}[op]
        return (2*M*N*K, eb*(M*K+N*K+M*N)), (4*M*N*K, eb*(M*N+2*N*K+2*M*K))
    if op in ("layernorm", "RMSlayernorm", "res_add"):
        b, l, dim = v; n = b*l*dim
        if op == "res_add": return (n, 3*n*eb), (0, 3*n*eb)
        return (8*n, eb*(2*n+2*dim)), (12*n, eb*(3*n+3*dim))
    if op in ("softmax", "ScaledUpperTriangMaskedSoftmax"):
        mp, b, h, l = v; n = b*h//mp*l*l
        return (5*n, 2*n*eb), (4*n, 3*n*eb)
    if op == "flash_atten":
        mp, b, h, l, dim = v; bh = b*h//mp; d = dim//h; n = bh*l*d
        return (2*bh*l*l*d, 4*n*eb), (5*bh*l*l*d, 8*n*eb)   # causal: half of the l x l products
    if op == "gelu":
        mp, b, l, dim = v; n = b*l*4*dim//mp
        return (10*n, 2*n*eb), (16*n, 3*n*eb)
    if op == "RoPE":
        mp, b, h, l, dim = v; n = b*h//mp*l*(dim//h)
        return (3*n, 2*n*eb + 4*l*(dim//h)), (3*n, 2*n*eb + 4*l*(dim//h))
    if op == "embedding":
        mp, b, l, dim = v; n = b*l*dim
        return (0, 2*n*eb), (n, n*eb + 4*(V//mp)*dim)
    if op in ("bmm", "baddbmm"):
        mp, b, h, l, dim = v; B = b*h//mp; d = dim//h
        if op == "bmm": return (2*B*l*l*d, eb*(B*l*l+2*B*l*d)), (4*B*l*l*d, eb*(2*B*l*l+3*B*l*d))
        return (2*B*l*l*d, eb*(2*B*l*d+B*l*l)), (4*B*l*l*d, eb*(B*l*l+4*B*l*d))
    if op == "fillmask":
        mp, b, h, l, dim = v; n = b*h//mp*l*l
        return (0, 2*n*eb + b*l*l), (0, 2*n*eb + b*l*l)
    if op == "parallel_cross_entropy_128":
        mp, b, l = v; n = b*l*(V//mp)
        return (3*n, n*eb), (3*n, 2*n*eb)
    if op.endswith("_optimizer"):
        mp, d, enc = v; n = enc*(12*d*d//mp + 7*d//mp + 6*d)
        if op.startswith("first"): n += V//mp*d + 2048*d
        if op.startswith("last"): n += 2*d + V//mp*d
        return (12*n, 28*n + (eb*n if eb == 2 else 0)), (None, None)
    return (None, None), (None, None)
rows = []
for raw in open(os.path.join(out, "sweepops_raw.txt")):
    req, rc, secs, ans = raw.rstrip("\n").split("\t", 3)
    op, p, shape = req.split()[:3]
    v = [int(x) for x in shape.split(",")]
    a = kv(ans)
    (ff, fb), (bf, bb) = model(op, v)
    ff = a.get("flops_f") if a.get("flops_f") is not None else ff
    fb = a.get("bytes_f") if a.get("bytes_f") is not None else fb
    bf = a.get("flops_b") if a.get("flops_b") is not None else bf
    bb = a.get("bytes_b") if a.get("bytes_b") is not None else bb
    def frac(fl, by, us):
        if not us or not bw or not peak or fl is None or by is None: return None
        floor_us = max(fl / (peak * 1e12), by / (bw * 1e9)) * 1e6
        return floor_us / us
    rows.append({"op": op, "precision": p, "shape": v, "request": req, "worker_exit": int(rc),
                 "wall_s": float(secs), "answer": ans, "status": a.get("status"),
                 "f_us": a.get("f_us"), "b_us": a.get("b_us"), "f_uj": a.get("f_uj"), "f_uj_unc": a.get("f_uj_unc"),
                 "b_uj": a.get("b_uj"), "b_uj_unc": a.get("b_uj_unc"), "err_f": a.get("err_f"), "err_b": a.get("err_b"),
                 "flops_f": ff, "bytes_f": fb, "flops_b": bf, "bytes_b": bb,
                 "roofline_fraction_f": frac(ff, fb, a.get("f_us")), "roofline_fraction_b": frac(bf, bb, a.get("b_us")),
                 "msg": a.get("msg")})
def sh(c):
    try: return subprocess.run(c, shell=True, capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as e: return "unavailable: %s" % e
doc = {"benchmark": "sweep_operators",
       "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
       "device": sh("nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit --format=csv,noheader"),
       "command": "bash " + cmd, "git_commit": sh("git rev-parse HEAD 2>/dev/null"),
       "energy_seconds_per_pass": float(os.environ.get("KJ_SWEEP_ENERGY_S", "1")),
       "ceilings": {"line": ceil, "copy_gbs": bw, "gemm_bf16_tflops": peak},
       "roofline_note": "fraction = max(FLOPs / GEMM rate, bytes / copy bandwidth) / measured time; "
                        "FLOPs and bytes from the worker's answer (the operator table) or this script's fallback formulas",
       "operators": rows}
tmp = os.path.join(out, "sweepops.json.tmp")
json.dump(doc, open(tmp, "w"), indent=1)
os.replace(tmp, os.path.join(out, "sweepops.json"))
f = lambda x, d=1: "-" if x is None else ("%.*f" % (d, x))
g = lambda x: "-" if x is None else "%.1e" % x
print("\n== summary (%s, %s; ceilings: copy %s GB/s, bf16 GEMM %s TFLOP/s)" % (doc["device"], prec, f(bw), f(peak)))
print("%-30s %-6s %10s %10s %10s %10s %8s %8s %6s %6s" % ("op", "status", "f_us", "b_us", "f_uJ", "b_uJ", "err_f", "err_b", "frac_f", "frac_b"))
for r in rows:
    print("%-30s %-6s %10s %10s %10s %10s %8s %8s %6s %6s" % (r["op"][:30], (r["status"] or "?")[:6], f(r["f_us"]), f(r["b_us"]),
          f(r["f_uj"], 0), f(r["b_uj"], 0), g(r["err_f"]), g(r["err_b"]), f(r["roofline_fraction_f"], 2), f(r["roofline_fraction_b"], 2)))
bad = [r for r in rows if r["status"] != "ok"]
for r in bad:
    print("  %s: %s" % (r["op"], (r["msg"] or r["answer"])[:200]))
PY
