#!/usr/bin/env bash
# Every reader's fuzz target (fuzz/*/build.sh) built and run for a short while from its seeds: the
# spool reader (a damaged spool that crashes the ingest, leaks or asks for gigabytes), module images
# (cubins, fatbins, stored zstd images), meter logs, pipeline files and sweep configs. Any failing
# fails it. Skipped (77) where clang or its libFuzzer runtime is missing.
SRC=$2 BUILD=$3
command -v clang >/dev/null || { echo "clang not found: skipped"; exit 77; }
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }' >"$BUILD/fuzz_probe.c"
clang -fsanitize=fuzzer "$BUILD/fuzz_probe.c" -o "$BUILD/fuzz_probe" 2>/dev/null || { echo "no libFuzzer runtime: skipped"; exit 77; }
cd "$BUILD" || exit 1
for target in spool cubin meter pipeline sweep; do
	OUT_DIR="$BUILD/fuzz" SECONDS_TO_RUN=${KJ_FUZZ_SECONDS:-10} bash "$SRC/fuzz/$target/build.sh" run 2>&1 | tail -3
	rc=${PIPESTATUS[0]}
	[ "$rc" -eq 0 ] || { echo "FAIL: the $target fuzz target exited $rc (its crash-*, leak-* or oom-* input is in $BUILD/fuzz)"; exit 1; }
done
echo "PASS"
