# Sourced by the GPU test scripts: skip with 77 where no GPU is present, a temporary directory
# $dir removed at exit, check NAME CONDITION (prints ok/FAIL, sets fail=1 and counts $fails) and
# q DB SQL (the first column of the first row). The exit trap turns an exit 0 or 77 into 1 once a
# check failed, so a failure counts however the script ends (tests/cli/test_lib.sh tests the same
# rule in tests/cli/lib.sh).
if ! nvidia-smi -L >/dev/null 2>&1; then echo "no GPU: skipped"; exit 77; fi
dir=$(mktemp -d)
fail=0
fails=0
kj_gpu_lib_exit() {
	local rc=$?
	rm -rf "$dir"
	if [ "${fails:-0}" != 0 ] && { [ "$rc" = 0 ] || [ "$rc" = 77 ]; }; then
		echo "$fails check(s) failed"
		exit 1
	fi
	exit "$rc"
}
trap kj_gpu_lib_exit EXIT
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fails=$((fails + 1)); fi; }
q() { python3 -c 'import sqlite3,sys; r=sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone(); print(r[0] if r else "")' "$@"; }
