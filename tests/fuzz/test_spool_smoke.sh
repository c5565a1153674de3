#!/usr/bin/env bash
# The spool reader's fuzz target (fuzz/spool) built and run for a short while from its seeds: a
# damaged spool that crashes the ingest, leaks or asks for gigabytes fails it. Skipped (77) where
# clang or its libFuzzer runtime is missing.
SRC=$2 BUILD=$3
command -v clang >/dev/null || { echo "clang not found: skipped"; exit 77; }
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }' >"$BUILD/fuzz_probe.c"
clang -fsanitize=fuzzer "$BUILD/fuzz_probe.c" -o "$BUILD/fuzz_probe" 2>/dev/null || { echo "no libFuzzer runtime: skipped"; exit 77; }
cd "$BUILD" || exit 1
OUT_DIR="$BUILD/fuzz" SECONDS_TO_RUN=${KJ_FUZZ_SECONDS:-20} bash "$SRC/fuzz/spool/build.sh" run 2>&1 | tail -5
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] || { echo "FAIL: the spool fuzz target exited $rc (its crash-*, leak-* or oom-* input is in $BUILD/fuzz)"; exit 1; }
echo "PASS"
