#!/usr/bin/env bash
# Build the pipeline-file fuzz target with clang's libFuzzer (no CMake needed) and, with "run",
# fuzz for $SECONDS_TO_RUN (default 60) seconds from the shipped pipelines as seed corpus.
# shellcheck source=fuzz/lib.sh
. "$(dirname "$0")/../lib.sh"
read -r -a yaml <<<"$(pkg-config --cflags --libs yaml-0.1)"
fuzz_build pipeline -Isrc/common -Isrc/pipeline -Isrc/sweep fuzz/pipeline/fuzz_pipeline.c \
	src/pipeline/kj_pipeline_yaml.c src/pipeline/kj_pipeline_expr.c src/pipeline/kj_pipeline_phase.c \
	src/pipeline/kj_pipeline_result.c src/sweep/kj_sweep_ops.c src/common/kj_yaml.c src/common/kj_num.c \
	src/common/kj_error.c "${yaml[@]}" -lm
if [ "${1:-}" = run ]; then
	cp configs/pipelines/*.yml examples/custom_phase/*.yml "$out/pipeline-corpus/"
	fuzz_run pipeline 8192
fi
