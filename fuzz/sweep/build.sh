#!/usr/bin/env bash
# Build the sweep readers' fuzz target with clang's libFuzzer (no CMake needed) and, with "run",
# fuzz for $SECONDS_TO_RUN (default 60) seconds from the shipped configs and test data as corpus.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v clang >/dev/null || { echo "clang not found: the fuzz target needs clang"; exit 77; }
out=${OUT_DIR:-build-fuzz}
mkdir -p "$out/sweep-corpus"
read -r -a yaml <<<"$(pkg-config --cflags --libs yaml-0.1)"
clang -g -O1 -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -fsanitize=fuzzer,address,undefined \
	-Isrc/common -Isrc/sweep -Isrc/predict fuzz/sweep/fuzz_sweep.c src/sweep/kj_sweep_config.c \
	src/sweep/kj_sweep_shape.c src/sweep/kj_sweep_csv.c src/sweep/kj_sweep_ops.c \
	src/predict/kj_model.c src/common/kj_error.c src/common/kj_yaml.c "${yaml[@]}" -lm \
	-o "$out/fuzz_sweep"
echo "built $out/fuzz_sweep"
if [ "${1:-}" = run ]; then
	cp configs/sweep/test/*.yml tests/data/sweep/*.yml "$out/sweep-corpus/"
	"$out/fuzz_sweep" -max_total_time="${SECONDS_TO_RUN:-60}" -max_len=4096 -artifact_prefix="$out/" \
		"$out/sweep-corpus"
fi
