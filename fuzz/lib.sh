# shellcheck shell=bash
# Sourced by fuzz/*/build.sh: the steps every libFuzzer target shares. After sourcing, the working
# folder is the source root and $out the output folder (OUT_DIR, default build-fuzz); a machine
# without clang exits 77 here.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v clang >/dev/null || { echo "clang not found: the fuzz target needs clang"; exit 77; }
out=${OUT_DIR:-build-fuzz}
fuzz_cflags=(-g -O1 -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE)

# fuzz_build NAME ARGS...: clang with libFuzzer, ASan and UBSan over ARGS (includes, sources,
# libraries) into $out/fuzz_NAME; $out/NAME-corpus made for its seeds.
fuzz_build() {
	local name=$1
	shift
	mkdir -p "$out/$name-corpus"
	clang "${fuzz_cflags[@]}" -fsanitize=fuzzer,address,undefined "$@" -o "$out/fuzz_$name"
	echo "built $out/fuzz_$name"
}

# fuzz_run NAME MAX_LEN: fuzz for $SECONDS_TO_RUN (default 60) seconds from $out/NAME-corpus,
# inputs up to MAX_LEN bytes; a failing input is left in $out (crash-*, leak-*, oom-*).
fuzz_run() {
	"$out/fuzz_$1" -max_total_time="${SECONDS_TO_RUN:-60}" -max_len="$2" -artifact_prefix="$out/" \
		"$out/$1-corpus"
}
