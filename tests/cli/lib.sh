# Shared by the CLI tests (source it): a scratch directory removed on exit, and the ways the tests
# assert. Every failed assertion (check, fail, expect, has, lacks) adds one to $fails, and the exit
# trap turns a script that would end 0 (or 77, skipped) into exit 1 once any assertion failed, so
# a failure counts whether the script ends with `finish`, `exit $fail` or nothing.
# Exit 77 (skipped) where python3, which the tests use to read databases, is absent.
command -v python3 >/dev/null || { echo "python3 missing: skipped"; exit 77; }
dir=$(mktemp -d /tmp/kjtest.XXXXXX)
T=$dir
fails=0
fail=0 # 1 once any assertion failed: older scripts end with `exit $fail`

# kj_lib_exit: the EXIT trap: removes the scratch directory; a run with failures never exits 0 or 77
kj_lib_exit() {
	local rc=$?
	rm -rf "$dir"
	if [ "${fails:-0}" != 0 ] && { [ "$rc" = 0 ] || [ "$rc" = 77 ]; }; then
		echo "$fails failure(s)"
		exit 1
	fi
	exit "$rc"
}
trap kj_lib_exit EXIT

# fail MESSAGE: count a failure
fail() { echo "FAIL: $*"; fails=$((fails + 1)); fail=1; }
# check NAME EXPR: EXPR (evaluated) must hold
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fail=1; fi; }

# q DB SQL: the first column of the first row ("" when there is none)
q() { python3 -c 'import sqlite3,sys; r=sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone(); print(r[0] if r else "")' "$@"; }

# expect CODE CMD...: run CMD (stdout to $T/out, stderr to $T/err), check its exit code
expect() {
	local want=$1; shift
	local got=0
	"$@" >"$T/out" 2>"$T/err" || got=$?
	[ "$got" = "$want" ] || fail "exit $got (want $want): $* -- $(head -c 300 "$T/err")"
}
# has PATTERN / lacks PATTERN: the last expect's stdout has (lacks) a line matching PATTERN
has() { grep -q -- "$1" "$T/out" || fail "output lacks '$1'"; }
lacks() { if grep -q -- "$1" "$T/out"; then fail "output has '$1'"; fi; }
# finish: the last line of a test: "ok", or the count of failures and exit 1
finish() { if [ "$fails" = 0 ]; then echo "ok"; else echo "$fails failure(s)"; exit 1; fi; }
