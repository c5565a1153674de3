#!/usr/bin/env bash
# Here (no GPU): build everything into .carry/build and gather the shared libraries the GPU
# machine's image lacks into .carry/lib, so one `device run` with carry [".carry"] can test there.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
# objects of the last prep wait in .carry-stash (outside what a device run carries): put back,
# with their times, they make this build incremental
if [ -d .carry-stash ]; then
	(cd .carry-stash && find . -type f -print0) | while IFS= read -r -d '' f; do
		mkdir -p ".carry/build/$(dirname "$f")" && mv -f ".carry-stash/$f" ".carry/build/$f"
	done
	rm -rf .carry-stash
fi
cmake -S . -B .carry/build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build .carry/build -j"$(nproc)" >/dev/null
# KJ_PREP_BASE=REV: REV's injection library too, as .carry/base/libkjoule_inject.so, for an A/B
# of the two builds on the device (scripts/gpu/inject_ab.sh, AB_BASE=.carry/base/libkjoule_inject.so)
if [ -n "${KJ_PREP_BASE:-}" ]; then
	base_tree=$(mktemp -d)
	git worktree add --detach "$base_tree" "$KJ_PREP_BASE" >/dev/null
	cmake -S "$base_tree" -B "$base_tree/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build "$base_tree/build" --target kjoule_inject -j"$(nproc)" >/dev/null
	mkdir -p .carry/base
	cp "$base_tree/build/src/trace/inject/libkjoule_inject.so" .carry/base/libkjoule_inject.so
	strip --strip-debug .carry/base/libkjoule_inject.so
	git worktree remove --force "$base_tree"
	echo "device-prep: .carry/base/libkjoule_inject.so is $(git rev-parse --short "$KJ_PREP_BASE")'s"
fi
mkdir -p .carry/lib
for lib in libjansson.so.4 libyaml-0.so.2 libcmocka.so.0 libxgboost.so.0 libdmlc.so.0; do
	src=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF}' | head -n 1 || true)
	[ -n "$src" ] && cp -L "$src" .carry/lib/
done
# a device run carries at most 64 MiB with the tree: objects, archives and the browser report's
# build and the CPU tests' executables go to the stash; the rest lose their debug info
(cd .carry/build && find . -type f \( -path '*/CMakeFiles/*.dir/*' -o -name '*.a' -o -name '*.o' -o -name '*.ii' \
	-o -name '*.cudafe1.*' -o -path './report_browser/*' -o -path './CMakeFiles/[0-9]*' -o -path './tests/test_*' \) -print0) |
	while IFS= read -r -d '' f; do
		mkdir -p ".carry-stash/$(dirname "$f")" && mv -f ".carry/build/$f" ".carry-stash/$f"
	done
find .carry/build -type f -perm -u+x -exec sh -c 'file -b "$1" | grep -q ^ELF && strip --strip-debug "$1"' _ {} \;
# tree and carry over 62 MiB together: what few device calls use (the pipeline's worker and GPU
# test, the API cost bench) waits in the stash too; KJ_CARRY_ALL=1 keeps them
tracked=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
if [ -z "${KJ_CARRY_ALL:-}" ] && [ $((tracked + $(du -sb .carry | cut -f1))) -gt $((62 << 20)) ]; then
	for f in kjoule-pipeline-worker tests/gpu/pipeline/test_pipeline_gpu bench/api_cost/api_cost; do
		[ -f ".carry/build/$f" ] && mkdir -p ".carry-stash/$(dirname "$f")" && mv -f ".carry/build/$f" ".carry-stash/$f" &&
			echo "device-prep: $f left out of .carry (over 62 MiB with the tree; KJ_CARRY_ALL=1 keeps it)"
	done
fi
du -sh .carry
