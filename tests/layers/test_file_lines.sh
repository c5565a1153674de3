# scripts/check_file_lines.py on small trees of its own: files within 600 lines pass; a 601-line
# .c (or .cu) file fails, naming it and its length; listed as a debt at its length it passes, and
# fails once it grows past the listed count, once it is back within the limit, or once it is gone
# (its line must go: the list only shrinks); a debt without a reason fails.
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
C="$SRC/scripts/check_file_lines.py"
R="$T/r"
lines() { # lines PATH N: a source file of N lines in the test tree
	mkdir -p "$(dirname "$R/$1")" && seq "$2" | sed 's|^|/* line |; s|$| */|' >"$R/$1"
}
mkroot() {
	rm -rf "$R"
	lines src/common/kj_a.c 600
	lines src/common/kj_a.h 900 # headers are not counted
	lines src/sweep/worker/w.cu 10
	: >"$T/debts"
}
run() { expect "$1" python3 "$C" --root "$R" --debts "$T/debts"; }

mkroot
run 0
has "check_file_lines: 2 files, 0 over 600 lines (0 listed debts), ok"

# the plant: a 601-line file fails, named with its length
mkroot
lines src/store/kj_big.c 601
run 1
has "^src/store/kj_big.c: 601 lines, over the limit of 600"
has "FAILED"
mkroot
lines src/sweep/worker/w.cu 700
run 1
has "^src/sweep/worker/w.cu: 700 lines, over the limit of 600"

# listed at its length it passes; grown past the count it fails; shrunk it passes, told to lower it
mkroot
lines src/store/kj_big.c 601
echo "src/store/kj_big.c 601 # planted for the test" >"$T/debts"
run 0
has "^debt: src/store/kj_big.c: 601 lines (listed at 601)$"
lines src/store/kj_big.c 602
run 1
has "^src/store/kj_big.c: 602 lines, grown past the 601"
echo "src/store/kj_big.c 700 # planted for the test" >"$T/debts"
run 0
has "lower the count to 602"
# back within the limit, or gone: its line must go
lines src/store/kj_big.c 600
run 1
has "^src/store/kj_big.c: 600 lines, now within 600: remove its line"
rm "$R/src/store/kj_big.c"
run 1
has "^src/store/kj_big.c: listed in .* but gone: remove its line"
# a debt without a reason, or without a count, fails
mkroot
lines src/store/kj_big.c 601
echo "src/store/kj_big.c 601" >"$T/debts"
run 1
has "debts:1: a debt needs a reason"
echo "src/store/kj_big.c # no count" >"$T/debts"
run 1
has "debts:1: want 'PATH LINES # reason'"
finish
