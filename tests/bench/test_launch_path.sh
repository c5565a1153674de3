# bench/launch_path on a synthetic iteration whose bytes are known: two functions, one a 256-byte
# block and one a 40-byte block with padding, launched in turn. The spool holds each later launch's
# record with its whole block (the build sends blocks whole, so the two byte counts agree), and
# without parameters 40 bytes a launch and nothing more a block; the byte counts do not depend on
# the round count beyond the group records. A malformed line is refused, naming file and line, and
# run.py writes its result from the shipped BLOOM-560M run (into a scratch file), with valgrind its
# instructions a launch too (more with parameters than without), refusing an --other that is not
# NAME=PATH.
set -u
KJ=$1 SRC=$2 BUILD=${3:-}
. "$SRC/tests/cli/lib.sh"
LP="$BUILD/bench/launch_path/launch_path"
[ -x "$LP" ] || { echo "no launch_path harness (built with the injection library): skipped"; exit 77; }
python3 - "$T/it.txt" <<'P' || fail "cannot write the iteration"
import sys
with open(sys.argv[1], "w") as f:
    for i in range(20):
        big = bytes((i * 7 + k) % 256 for k in range(256)).hex()
        small = (bytes([i, 0, 0, 0, 0, 0, 0, 0]) + bytes(range(32))).hex()  # an int, padding, 32 bytes
        f.write(f"0 8 1 1 128 1 1 0 0:256 {big}\n")
        f.write(f"1 4 1 1 64 1 1 0 0:4,8:32 {small}\n")
P
field() { python3 -c 'import json,sys; d=json.loads(open(sys.argv[1]).read()); v=d
for k in sys.argv[2].split("/"): v=v[k]
print(v)' "$1" "$2"; }

expect 0 "$LP" "$T/it.txt" 50
cp "$T/out" "$T/p50.json"
expect 0 "$LP" "$T/it.txt" 200
cp "$T/out" "$T/p200.json"
expect 0 "$LP" "$T/it.txt" 200 --no-params
cp "$T/out" "$T/n200.json"
check "40 launches read" '[ "$(field "$T/p200.json" launches)" = 40 ]'
p=$(field "$T/p200.json" spool_bytes_per_launch)
w=$(field "$T/p200.json" spool_bytes_per_launch_blocks_whole)
n=$(field "$T/n200.json" spool_bytes_per_launch)
check "blocks sent whole: the two counts agree ($p, $w)" '[ "$p" = "$w" ]'
# every launch but the two groups' first carries its block: (256 + 40) bytes every two launches
python3 -c "
import sys
p, n = float(sys.argv[1]), float(sys.argv[2])
want = (256 + 40) / 2 * (1 - 2 / (40 * 200))
sys.exit(0 if abs((p - n) - want) < 0.5 else 1)" "$p" "$n" || fail "blocks add $p - $n bytes a launch, not (256 + 40) / 2"
python3 -c "import sys; sys.exit(0 if 40 <= float(sys.argv[1]) < 41 else 1)" "$n" ||
	fail "without parameters a launch took $n bytes, not 40 and the groups' share"
p50=$(field "$T/p50.json" spool_bytes_per_launch)
python3 -c "import sys; sys.exit(0 if abs(float(sys.argv[1]) - float(sys.argv[2])) < 2 else 1)" "$p50" "$p" ||
	fail "bytes a launch depend on the rounds: $p50 (50) against $p (200)"

printf '0 8 1 1 128 1 1 0 0:256 00ff\n' >"$T/short.txt"
expect 2 "$LP" "$T/short.txt" 5
grep -q "short.txt:1: block shorter than its layout" "$T/err" || fail "a short block not named by file and line: $(cat "$T/err")"
printf '0 8 1 1\n' >"$T/cut.txt"
expect 2 "$LP" "$T/cut.txt" 5
grep -q "cut.txt:1:" "$T/err" || fail "a cut line not named: $(cat "$T/err")"

expect 0 python3 "$SRC/bench/launch_path/run.py" --launch-path "$LP" --rounds 4 --repeats 1 -o "$T/lp.json"
has "no_params_cold"
check "run.py's result names the run" '[ "$(field "$T/lp.json" run)" = examples/runs/bloom560m.kjdb ]'
kept=$(q "$SRC/examples/runs/bloom560m.kjdb" "SELECT count(*) FROM launch_params WHERE iteration IS NOT NULL")
check "run.py replayed the shipped run's kept iteration ($kept launches)" '[ "$(field "$T/lp.json" launches)" = "$kept" ]'
if command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null; then
	expect 0 python3 "$SRC/bench/launch_path/run.py" --launch-path "$LP" --rounds 2 --repeats 1 --instructions -o "$T/ins.json"
	d=$(field "$T/ins.json" instructions_per_launch/this/defaults)
	n=$(field "$T/ins.json" instructions_per_launch/this/no_params)
	python3 -c "import sys; d, n = map(float, sys.argv[1:]); sys.exit(0 if d > n > 50 else 1)" "$d" "$n" ||
		fail "instructions a launch: $d with parameters, $n without"
else
	echo "no valgrind: --instructions not checked"
fi
expect 1 python3 "$SRC/bench/launch_path/run.py" --launch-path "$LP" --other "$LP" -o "$T/bad.json"
grep -q "not NAME=PATH" "$T/err" || fail "an --other without a name not refused: $(cat "$T/err")"
check "nothing written for the refused --other" '[ ! -e "$T/bad.json" ]'
finish
