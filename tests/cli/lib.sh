# Shared by the CLI tests (source it): a scratch directory removed on exit, and the two ways the
# tests assert. Exit 77 (skipped) where python3, which the tests use to read databases, is absent.
command -v python3 >/dev/null || { echo "python3 missing: skipped"; exit 77; }
dir=$(mktemp -d /tmp/kjtest.XXXXXX)
T=$dir
trap 'rm -rf "$dir"' EXIT
fail=0
fails=0

# check NAME EXPR: EXPR (evaluated) must hold
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }

# q DB SQL: the first column of the first row ("" when there is none)
q() { python3 -c 'import sqlite3,sys; r=sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone(); print(r[0] if r else "")' "$@"; }

# fail MESSAGE: count a failure (tests in this style end with `finish`)
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# expect CODE CMD...: run CMD (stdout to $T/out, stderr to $T/err), check its exit code
expect() {
	local want=$1; shift
	"$@" >"$T/out" 2>"$T/err"
	local got=$?
	[ "$got" = "$want" ] || fail "exit $got (want $want): $* -- $(head -c 300 "$T/err")"
}
has() { grep -q -- "$1" "$T/out" || fail "output lacks '$1'"; }
lacks() { grep -q -- "$1" "$T/out" && fail "output has '$1'"; }
finish() { [ "$fails" = 0 ] && echo "ok" || { echo "$fails failure(s)"; exit 1; }; }
