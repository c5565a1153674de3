#!/usr/bin/env bash
# Build the meter-log fuzz target with clang's libFuzzer (no CMake needed) and, with "run",
# fuzz for $SECONDS_TO_RUN (default 60) seconds from the test files as seed corpus.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v clang >/dev/null || { echo "clang not found: the fuzz target needs clang"; exit 77; }
out=${OUT_DIR:-build-fuzz}
mkdir -p "$out/meter-corpus"
clang -g -O1 -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -fsanitize=fuzzer,address,undefined \
	-Isrc/common -Isrc/energy fuzz/meter/fuzz_meter.c src/energy/kj_meter.c src/common/kj_error.c \
	-lm -o "$out/fuzz_meter"
echo "built $out/fuzz_meter"
if [ "${1:-}" = run ]; then
	cp tests/data/meter/*.csv "$out/meter-corpus/"
	"$out/fuzz_meter" -max_total_time="${SECONDS_TO_RUN:-60}" -max_len=4096 -artifact_prefix="$out/" \
		"$out/meter-corpus"
fi
