# Sourced by the GPU scripts that time the sweep worker's operators (fastops.sh, sdpa.sh): sets $w
# (the worker, argument 1 or $KJ_BUILD's), runs its selftest into $OUT/<prefix>_selftest.log and
# prints the lines matching <pattern>, then sets $ceil to the worker's --ceilings line.
# usage: source scripts/gpu/worker_prelude.sh PREFIX PATTERN [WORKER]
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
w=${3:-${KJ_BUILD:-build}/kjoule-sweep-worker}
[ -x "$w" ] || { echo "no $w: build first"; exit 1; }
echo "== selftest"
timeout 300 "$w" --selftest > "$OUT/$1_selftest.log" 2>&1
echo "selftest exit $?"
grep -E "$2" "$OUT/$1_selftest.log" | head -30
ceil=$(timeout 120 "$w" --ceilings 2>/dev/null)
echo "$ceil"
