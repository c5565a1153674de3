#!/usr/bin/env bash
# The CLI tests' library (tests/cli/lib.sh) can fail: tiny scripts that source it, each with
# planted failing assertions (check, fail, expect, has, lacks) ending every way the tests end
# (`finish`, `exit $fail`, nothing, `exit 77`), must exit non-zero; the same with passing
# assertions, under `set -u`, must exit 0. This script asserts on its own, not through lib.sh.
# usage: test_lib.sh KJOULE SRC_DIR BUILD_DIR
set -u
S=$2
lib="$S/tests/cli/lib.sh"
tmp=$(mktemp -d /tmp/kjlibtest.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
bad=0
n=0

# case WANT NAME BODY: a script sourcing lib.sh with BODY must exit WANT ("nonzero": anything but 0)
case_() {
	local want=$1 name=$2 body=$3 got
	n=$((n + 1))
	printf 'set -u\n. "%s"\n%s\n' "$lib" "$body" > "$tmp/s$n.sh"
	bash "$tmp/s$n.sh" > "$tmp/o$n" 2>&1
	got=$?
	if { [ "$want" = nonzero ] && [ "$got" != 0 ]; } || [ "$got" = "$want" ]; then
		echo "ok   $name (exit $got)"
	else
		echo "FAIL $name: exit $got, want $want; its output:"; sed 's/^/     /' "$tmp/o$n"
		bad=1
	fi
}

# passing assertions: exit 0, "ok" last
case_ 0 "passing checks, finish" 'check "true holds" true; check "arith" "[ 1 -lt 2 ]"; finish'
tail -1 "$tmp/o$n" | grep -qx ok || { echo "FAIL finish does not end with ok"; bad=1; }
case_ 0 "passing expect, has, lacks" 'expect 0 echo hello; has hello; lacks bye; expect 3 sh -c "exit 3"; finish'
case_ 0 "passing checks, exit \$fail" 'check "t" true; exit $fail'
case_ 0 "passing checks, no finish" 'check "t" true'
case_ 77 "a skip without failures stays a skip" 'echo skipped; exit 77'

# planted failures: never exit 0
case_ 1 "a failing check, finish" 'check "x" false; check "y" true; finish'
grep -q '^FAIL x' "$tmp/o$n" || { echo "FAIL the failing check is not named"; bad=1; }
case_ 1 "a failing check, exit \$fail" 'check "x" false; exit $fail'
case_ 1 "a failing check, the script ends without finish" 'check "x" false; check "y" true; echo done'
case_ 1 "a failing check, then exit 77 (a skip hides no failure)" 'check "x" false; exit 77'
case_ 1 "fail MESSAGE, exit \$fail" 'fail "planted"; exit $fail'
case_ 1 "fail MESSAGE, finish" 'fail "planted"; finish'
case_ 1 "expect: the wrong exit code" 'expect 0 false; finish'
case_ 1 "expect: a command that is not there" 'expect 0 /nonexistent/cmd; exit $fail'
case_ 1 "has: a line that is not there" 'expect 0 echo hello; has bye; finish'
case_ 1 "lacks: a line that is there" 'expect 0 echo hello; lacks hello; exit $fail'
case_ 1 "two failures are counted" 'check a false; check b false; finish'
grep -q '^2 failure(s)' "$tmp/o$n" || { echo "FAIL the failures are not counted: $(tail -1 "$tmp/o$n")"; bad=1; }
case_ 3 "a script's own failing exit code is kept" 'check "x" false; exit 3'
case_ nonzero "a mistyped variable under set -u fails the script" 'check "t" true; echo "$no_such_var"; finish'

# the scratch directory goes at exit
case_ 0 "scratch directory" 'echo "$T" > "'"$tmp"'/where"; [ -d "$T" ]'
[ -e "$(cat "$tmp/where")" ] && { echo "FAIL the scratch directory is left behind"; bad=1; }
[ "$bad" = 0 ] && echo ok
exit $bad
