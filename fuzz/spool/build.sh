#!/usr/bin/env bash
# Build the spool-reader fuzz target with clang's libFuzzer (no CMake needed) and its seed maker;
# with "run", make the seeds and fuzz for $SECONDS_TO_RUN (default 60) seconds from them.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v clang >/dev/null || { echo "clang not found: the fuzz target needs clang"; exit 77; }
out=${OUT_DIR:-build-fuzz}
mkdir -p "$out/spool-corpus"
ver=$(sed -n 's/^project(kjoule VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
inc=(-Isrc/common -Isrc/store -Isrc/trace -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE "-DKJ_VERSION=\"$ver\"")
read -r -a libs <<<"$(pkg-config --libs sqlite3 libzstd yaml-0.1) -lm -lstdc++"
clang -g -O1 -std=c11 -fsanitize=fuzzer,address,undefined "${inc[@]}" \
	fuzz/spool/fuzz_spool.c src/store/*.c src/common/*.c "${libs[@]}" -o "$out/fuzz_spool"
clang -g -O1 -std=c11 "${inc[@]}" -Itests/unit fuzz/spool/make_seeds.c src/store/*.c \
	src/common/*.c "${libs[@]}" -lcmocka -o "$out/make_spool_seeds"
echo "built $out/fuzz_spool"
if [ "${1:-}" = run ]; then
	"$out/make_spool_seeds" "$out/spool-corpus"
	"$out/fuzz_spool" -max_total_time="${SECONDS_TO_RUN:-60}" -max_len=8192 -artifact_prefix="$out/" \
		"$out/spool-corpus"
fi
