#!/usr/bin/env bash
# Build the pipeline-file fuzz target with clang's libFuzzer (no CMake needed) and, with "run",
# fuzz for $SECONDS_TO_RUN (default 60) seconds from the shipped pipelines as seed corpus.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v clang >/dev/null || { echo "clang not found: the fuzz target needs clang"; exit 77; }
out=${OUT_DIR:-build-fuzz}
mkdir -p "$out/pipeline-corpus"
read -r -a yaml <<<"$(pkg-config --cflags --libs yaml-0.1)"
clang -g -O1 -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -fsanitize=fuzzer,address,undefined \
	-Isrc/common -Isrc/pipeline -Isrc/sweep fuzz/pipeline/fuzz_pipeline.c src/pipeline/kj_pipeline_yaml.c \
	src/pipeline/kj_pipeline_expr.c src/pipeline/kj_pipeline_phase.c src/pipeline/kj_pipeline_result.c \
	src/sweep/kj_sweep_ops.c src/common/kj_yaml.c src/common/kj_num.c \
	src/common/kj_error.c "${yaml[@]}" -lm -o "$out/fuzz_pipeline"
echo "built $out/fuzz_pipeline"
if [ "${1:-}" = run ]; then
	cp configs/pipelines/*.yml examples/custom_phase/*.yml "$out/pipeline-corpus/"
	"$out/fuzz_pipeline" -max_total_time="${SECONDS_TO_RUN:-60}" -max_len=8192 -artifact_prefix="$out/" \
		"$out/pipeline-corpus"
fi
