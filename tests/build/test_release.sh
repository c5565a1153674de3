# The host code (KJ_WITH_CUDA=OFF: kjoule, kjcore, the unit tests) configures and builds as Release
# (-O3, where gcc's flow warnings differ from the developer build's -O2) with gcc and with clang,
# with -Werror, in scratch build folders: a warning either compiler gives stops CI. A plain
# configure leaves warnings as warnings (KJ_WERROR off), so a user's build with another compiler
# still builds. A compiler that is absent skips its half (make test installs both).
# Takes about a minute per compiler on two cores.
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
jobs=$(nproc 2>/dev/null || echo 2)
built=0
for cc in gcc clang; do
	if ! command -v "$cc" >/dev/null; then
		echo "skip $cc: not installed (scripts/install-deps.sh installs it)"
		continue
	fi
	b="$T/$cc"
	expect 0 cmake -S "$SRC" -B "$b" -DCMAKE_BUILD_TYPE=Release -DKJ_WITH_CUDA=OFF -DCMAKE_C_COMPILER="$cc"
	grep -q '^KJ_WERROR:BOOL=OFF$' "$b/CMakeCache.txt" || fail "$cc: a plain configure turns KJ_WERROR on"
	grep -q -- '-Werror' "$b/CMakeFiles/kjcore.dir/flags.make" && fail "$cc: a plain configure compiles with -Werror"
	expect 0 cmake -S "$SRC" -B "$b" -DKJ_WERROR=ON
	grep -q -- '-Werror' "$b/CMakeFiles/kjcore.dir/flags.make" || fail "$cc: KJ_WERROR=ON compiles without -Werror"
	start=$(date +%s)
	if cmake --build "$b" -j"$jobs" >"$T/$cc.log" 2>&1; then
		echo "ok   $cc Release built with -Werror in $(($(date +%s) - start)) s"
		built=$((built + 1))
	else
		grep -E -A3 'warning:|error:' "$T/$cc.log" | head -60
		fail "$cc Release build failed (warnings above are errors here)"
	fi
	rm -rf "$b"
done
[ "$fails" = 0 ] && [ "$built" = 0 ] && { echo "neither gcc nor clang found: skipped"; exit 77; }
finish
