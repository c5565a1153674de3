#!/usr/bin/env bash
# Build the module-image fuzz target with clang's libFuzzer (no CMake needed) and, with "run",
# fuzz for $SECONDS_TO_RUN (default 60) seconds from the test images as seed corpus.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v clang >/dev/null || { echo "clang not found: the fuzz target needs clang"; exit 77; }
out=${OUT_DIR:-build-fuzz}
mkdir -p "$out/cubin-corpus"
clang -g -O1 -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -fsanitize=fuzzer,address,undefined \
	-Isrc/common -Isrc/store fuzz/cubin/fuzz_cubin.c src/store/kj_cubin.c src/common/kj_error.c \
	-lzstd -o "$out/fuzz_cubin"
echo "built $out/fuzz_cubin"
if [ "${1:-}" = run ]; then
	cp tests/data/cubin/*.cubin tests/data/cubin/*.fatbin "$out/cubin-corpus/"
	"$out/fuzz_cubin" -max_total_time="${SECONDS_TO_RUN:-60}" -max_len=65536 -artifact_prefix="$out/" \
		"$out/cubin-corpus"
fi
