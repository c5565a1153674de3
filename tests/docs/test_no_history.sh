# The tree speaks in versions and dates, not in the history of its making: no tracked file names
# a working session or a device call (scripts/check_history.py). Then the checker on a small git
# tree of its own: each kind of mention planted is reported with its file and line and fails; a
# data file (NUL bytes), an untracked file, the checker's own patterns and a "lost session" (a
# terminal's) are not reported.
set -u
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
C="$SRC/scripts/check_history.py"
command -v git >/dev/null && git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1 ||
	{ echo "not a git checkout: skipped"; exit 77; }
expect 0 python3 "$C" --root "$SRC"
has "none names a session"
[ -s "$T/out" ] && grep -q ":[0-9]*: '" "$T/out" && fail "tracked files name the history: $(head -5 "$T/out")"

# planted: the words are split so that this file does not name them itself
S=sess W=ion
g="$T/g" && mkdir -p "$g/docs" "$g/scripts" "$g/bench" && git -C "$g" init -q
cp "$C" "$g/scripts/check_history.py"
{
	echo "measured in ${S}${W} 12 on an H100"
	echo "as ${S}${W}s 3 and 4 found"
	echo "fixed in this ${S}${W}"
	echo "see turns_gpt2m_s""27.json"
	echo "(device ca""ll 4, H200)"
	echo "calls 2, 3 of ${S}${W} 26"
	echo "a replay killed midway (a timeout, a lost ${S}${W}) keeps what it measured"
	echo "kernel __cuda_sm20_div_u64 and sm90_xmma"
} >"$g/docs/a.md"
printf 'SQLite format 3\0 __cuda_sm20_div_s''64 %s%s 5\n' "$S" "$W" >"$g/bench/run.kjdb"
echo "untracked: ${S}${W} 9" >"$g/notes.md"
git -C "$g" add docs scripts bench
expect 1 python3 "$C" --root "$g"
for n in 1 2 3 4 5 6; do
	grep -q "^docs/a.md:$n: '" "$T/out" || fail "planted line $n not reported: $(cat "$T/out")"
done
[ "$(grep -c "^docs/a.md:" "$T/out")" = 6 ] || fail "want the 6 planted lines alone (7-8 name no history): $(cat "$T/out")"
grep -q "run.kjdb\|notes.md\|scripts/check_history.py" "$T/out" && fail "data, untracked or the checker reported: $(cat "$T/out")"
grep -q "6 line(s) name a session or a device call" "$T/err" || fail "no count on stderr: $(cat "$T/err")"
# not a git tree: exit 2 with the reason
mkdir "$T/plain"
expect 2 python3 "$C" --root "$T/plain"
grep -q "cannot list the files git tracks in $T/plain" "$T/err" || fail "no reason: $(cat "$T/err")"
finish
