#!/usr/bin/env bash
# Build the module-image fuzz target with clang's libFuzzer (no CMake needed) and, with "run",
# fuzz for $SECONDS_TO_RUN (default 60) seconds from the test images as seed corpus.
# shellcheck source=fuzz/lib.sh
. "$(dirname "$0")/../lib.sh"
fuzz_build cubin -Isrc/common -Isrc/store fuzz/cubin/fuzz_cubin.c src/store/kj_cubin.c src/common/kj_error.c \
	-lzstd
if [ "${1:-}" = run ]; then
	cp tests/data/cubin/*.cubin tests/data/cubin/*.fatbin "$out/cubin-corpus/"
	fuzz_run cubin 65536
fi
