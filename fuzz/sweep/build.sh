#!/usr/bin/env bash
# Build the sweep readers' fuzz target with clang's libFuzzer (no CMake needed) and, with "run",
# fuzz for $SECONDS_TO_RUN (default 60) seconds from the shipped configs and test data as corpus.
# shellcheck source=fuzz/lib.sh
. "$(dirname "$0")/../lib.sh"
read -r -a yaml <<<"$(pkg-config --cflags --libs yaml-0.1)"
fuzz_build sweep -Isrc/common -Isrc/sweep -Isrc/predict fuzz/sweep/fuzz_sweep.c src/sweep/kj_sweep_config.c \
	src/sweep/kj_sweep_shape.c src/sweep/kj_sweep_csv.c src/sweep/kj_sweep_ops.c src/predict/kj_model.c \
	src/common/kj_error.c src/common/kj_yaml.c "${yaml[@]}" -lm
if [ "${1:-}" = run ]; then
	cp configs/sweep/test/*.yml tests/data/sweep/*.yml "$out/sweep-corpus/"
	fuzz_run sweep 4096
fi
