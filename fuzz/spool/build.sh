#!/usr/bin/env bash
# Build the spool-reader fuzz target with clang's libFuzzer (no CMake needed) and its seed maker;
# with "run", make the seeds and fuzz for $SECONDS_TO_RUN (default 60) seconds from them.
# shellcheck source=fuzz/lib.sh
. "$(dirname "$0")/../lib.sh"
ver=$(sed -n 's/^project(kjoule VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
inc=(-Isrc/common -Isrc/store -Isrc/trace "-DKJ_VERSION=\"$ver\"")
read -r -a libs <<<"$(pkg-config --libs sqlite3 libzstd yaml-0.1) -lm -lstdc++"
fuzz_build spool "${inc[@]}" fuzz/spool/fuzz_spool.c src/store/*.c src/common/*.c "${libs[@]}"
clang "${fuzz_cflags[@]}" "${inc[@]}" -Itests/unit fuzz/spool/make_seeds.c src/store/*.c src/common/*.c \
	"${libs[@]}" -lcmocka -o "$out/make_spool_seeds"
if [ "${1:-}" = run ]; then
	"$out/make_spool_seeds" "$out/spool-corpus"
	fuzz_run spool 8192
fi
