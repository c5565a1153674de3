#!/usr/bin/env bash
# Build the meter-log fuzz target with clang's libFuzzer (no CMake needed) and, with "run",
# fuzz for $SECONDS_TO_RUN (default 60) seconds from the test files as seed corpus.
# shellcheck source=fuzz/lib.sh
. "$(dirname "$0")/../lib.sh"
fuzz_build meter -Isrc/common -Isrc/energy fuzz/meter/fuzz_meter.c src/energy/kj_meter.c \
	src/common/kj_error.c -lm
if [ "${1:-}" = run ]; then
	cp tests/data/meter/*.csv "$out/meter-corpus/"
	fuzz_run meter 4096
fi
