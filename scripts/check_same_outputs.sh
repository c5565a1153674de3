#!/usr/bin/env bash
# check_same_outputs.sh OLD_KJOULE NEW_KJOULE [WORKDIR]
#
# A behaviour-preserving refactor's check: runs the analysis commands (kernels, compare, timeline,
# api, report, info, diff) of two kjoule binaries on every run database the repository ships
# (examples/runs/*.kjdb, examples/runs/*.kjdb.xz unpacked, tests/data/*.kjdb) and compares what
# each wrote, byte for byte: stdout, stderr, the exit status and every file it wrote (report's
# HTML, compare -o's folder, diff --html). Nothing is normalised: each step runs in a folder of
# its own per binary, SIDE/NAME.files, reading the runs as ../../runs/RUN.kjdb and writing its
# files under "." so that the paths its messages name are the same on both sides, and no output
# embeds a time of day (the same binary run twice shows no difference).
#
# Prints one line per differing output, then "N outputs compared, D differ"; exit 0 when none
# differ, 1 when some do, 2 on usage. WORKDIR (default: a new temporary folder) keeps
# WORKDIR/old and WORKDIR/new for a look with diff -r. docs/architecture.md, "Behaviour-preserving
# refactors: check_same_outputs".
set -u

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
	echo "usage: $0 OLD_KJOULE NEW_KJOULE [WORKDIR]" >&2
	exit 2
fi
OLD=$(readlink -f "$1")
NEW=$(readlink -f "$2")
for b in "$OLD" "$NEW"; do
	if [ ! -x "$b" ]; then
		echo "$0: $b: not an executable" >&2
		exit 2
	fi
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${3:-$(mktemp -d "${TMPDIR:-/tmp}/kj-same.XXXXXX")}
mkdir -p "$WORK/runs" "$WORK/old" "$WORK/new" || exit 1
STEP_TIMEOUT=${KJ_SAME_TIMEOUT:-300}

# The shipped run databases, under short names (the name is part of every output's file name).
RUNS=()
for f in "$ROOT"/examples/runs/*.kjdb "$ROOT"/tests/data/*.kjdb; do
	[ -e "$f" ] || continue
	n=$(basename "$f" .kjdb)
	cp "$f" "$WORK/runs/$n.kjdb" || exit 1
	RUNS+=("$n")
done
for f in "$ROOT"/examples/runs/*.kjdb.xz; do
	[ -e "$f" ] || continue
	n=$(basename "$f" .kjdb.xz)
	if [ ! -e "$WORK/runs/$n.kjdb" ]; then
		xz -dc "$f" >"$WORK/runs/$n.kjdb.part" && mv "$WORK/runs/$n.kjdb.part" "$WORK/runs/$n.kjdb" ||
			{ echo "$0: cannot unpack $f" >&2; exit 1; }
	fi
	RUNS+=("$n")
done
if [ ${#RUNS[@]} -lt 2 ]; then
	echo "$0: fewer than two run databases found under $ROOT" >&2
	exit 1
fi

# one NAME ARGS...: run both binaries with ARGS (@DB@ stands for ../../runs, @OUT@ for ".") in
# SIDE/NAME.files/, each writing SIDE/NAME.{out,err,rc} and its files there (the folder is
# removed when it stays empty).
one() {
	local name=$1
	shift
	local side bin
	for side in old new; do
		bin=$OLD
		[ "$side" = new ] && bin=$NEW
		local dir="$WORK/$side/$name.files"
		mkdir -p "$dir"
		local args=() a
		for a in "$@"; do
			a=${a//@OUT@/.}
			args+=("${a//@DB@/../../runs}")
		done
		(cd "$dir" && timeout "$STEP_TIMEOUT" "$bin" "${args[@]}" \
			>"$WORK/$side/$name.out" 2>"$WORK/$side/$name.err")
		echo $? >"$WORK/$side/$name.rc"
		rmdir "$dir" 2>/dev/null
	done
}

for r in "${RUNS[@]}"; do
	db=@DB@/$r.kjdb
	one "$r.info" info "$db"
	one "$r.info-json" info "$db" --json
	one "$r.kernels" kernels "$db"
	one "$r.kernels-wide" kernels "$db" --wide --sort count
	one "$r.kernels-csv" kernels "$db" --format csv
	one "$r.kernels-jsonl" kernels "$db" --format jsonl --sort mean
	one "$r.kernels-gemm" kernels "$db" --tier gemm --top 5
	one "$r.compare" compare "$db"
	one "$r.compare-top" compare "$db" --top 25 --skip 2
	one "$r.compare-json" compare "$db" --json
	one "$r.compare-noregion" compare "$db" --region no_such_range
	one "$r.compare-dir" compare "$db" --quiet -o @OUT@/cmp
	one "$r.timeline-chrome" timeline "$db" --format chrome
	one "$r.timeline-ascii" timeline "$db" --format ascii
	one "$r.timeline-ascii-it" timeline "$db" --format ascii --iteration 2 --width 160
	one "$r.timeline-svg" timeline "$db" --format svg
	one "$r.timeline-svg-win" timeline "$db" --format svg --from 1ms --to 40ms -o @OUT@/t.svg
	one "$r.timeline-noiter" timeline "$db" --format ascii --iteration 100000
	one "$r.api" api "$db"
	one "$r.api-json" api "$db" --json --gaps 20
	one "$r.api-jsonl" api "$db" --format jsonl
	one "$r.report" report "$db" -o @OUT@/report.html
	one "$r.report-rows" report "$db" --rows 5 --skip 0 -o @OUT@/report.html
done
n=${#RUNS[@]}
for ((i = 0; i < n; i++)); do
	a=${RUNS[$i]}
	b=${RUNS[$(((i + 1) % n))]}
	one "diff.$a.$b" diff "@DB@/$a.kjdb" "@DB@/$b.kjdb"
	one "diff-json.$a.$b" diff "@DB@/$a.kjdb" "@DB@/$b.kjdb" --json
	one "diff-html.$a.$b" diff "@DB@/$a.kjdb" "@DB@/$b.kjdb" --html @OUT@/diff.html
done

# Every file either side wrote, compared byte for byte.
compared=0
differ=0
while IFS= read -r rel; do
	compared=$((compared + 1))
	if [ ! -f "$WORK/old/$rel" ] || [ ! -f "$WORK/new/$rel" ] ||
		! cmp -s "$WORK/old/$rel" "$WORK/new/$rel"; then
		differ=$((differ + 1))
		echo "DIFFERS: $rel"
	fi
done < <( (cd "$WORK/old" && find . -type f; cd "$WORK/new" && find . -type f) | sed 's|^\./||' | sort -u)

# A step that failed the same way on both sides is the same output, but say so: the check is
# weaker there.
failed=$(cd "$WORK/old" && grep -L '^0$' -- *.rc 2>/dev/null | sed 's/\.rc$//' | tr '\n' ' ')
[ -n "$failed" ] && echo "non-zero exit (old binary): $failed"
echo "runs: ${RUNS[*]}; outputs in $WORK/{old,new}"
echo "$compared outputs compared, $differ differ"
[ "$differ" -eq 0 ]
