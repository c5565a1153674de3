# The host code (KJ_WITH_CUDA=OFF: kjoule, the floor libraries kj_*, the unit tests) configures and builds as Release
# (-O3, where gcc's flow warnings differ from the developer build's -O2) with gcc and with clang,
# and as Debug with gcc (-O0, where its format-truncation checks see what -O2 and -O3 do not),
# with -Werror, in scratch build folders: a warning any of them gives stops CI. A plain configure
# leaves warnings as warnings (KJ_WERROR off), so a user's build with another compiler still
# builds. A compiler that is absent skips its builds (make test installs both).
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
jobs=$(nproc 2>/dev/null || echo 2)
built=0
for build in gcc:Release clang:Release gcc:Debug; do
	cc=${build%%:*} type=${build#*:}
	if ! command -v "$cc" >/dev/null; then
		echo "skip $cc $type: $cc is not installed (scripts/install-deps.sh installs it)"
		continue
	fi
	b="$T/$cc-$type"
	expect 0 cmake -S "$SRC" -B "$b" -DCMAKE_BUILD_TYPE="$type" -DKJ_WITH_CUDA=OFF -DCMAKE_C_COMPILER="$cc"
	grep -q '^KJ_WERROR:BOOL=OFF$' "$b/CMakeCache.txt" || fail "$cc: a plain configure turns KJ_WERROR on"
	grep -q -- '-Werror' "$b/CMakeFiles/kj_common.dir/flags.make" && fail "$cc: a plain configure compiles with -Werror"
	expect 0 cmake -S "$SRC" -B "$b" -DKJ_WERROR=ON
	grep -q -- '-Werror' "$b/CMakeFiles/kj_common.dir/flags.make" || fail "$cc: KJ_WERROR=ON compiles without -Werror"
	start=$(date +%s)
	if cmake --build "$b" -j"$jobs" >"$T/$cc-$type.log" 2>&1; then
		echo "ok   $cc $type built with -Werror in $(($(date +%s) - start)) s"
		built=$((built + 1))
	else
		grep -E -A3 'warning:|error:' "$T/$cc-$type.log" | head -60
		fail "$cc $type build failed (warnings above are errors here)"
	fi
	rm -rf "$b"
done
[ "$fails" = 0 ] && [ "$built" = 0 ] && { echo "neither gcc nor clang found: skipped"; exit 77; }
finish
