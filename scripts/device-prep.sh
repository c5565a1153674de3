#!/usr/bin/env bash
# Here (no GPU): build everything into .carry/build and gather the shared libraries the GPU
# machine's image lacks into .carry/lib, so one `device run` with carry [".carry"] can test there.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B .carry/build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build .carry/build -j"$(nproc)" >/dev/null
mkdir -p .carry/lib
for lib in libjansson.so.4 libyaml-0.so.2 libcmocka.so.0 libxgboost.so.0 libdmlc.so.0; do
	src=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF}' | head -n 1 || true)
	[ -n "$src" ] && cp -L "$src" .carry/lib/
done
rm -rf .carry/build/CMakeFiles/*.dir .carry/build/src/*/*/CMakeFiles/*.dir 2>/dev/null || true
# a device run carries at most 64 MiB with the tree: no debug info, no static archives
find .carry/build \( -name '*.a' -o -name '*.o' -o -name '*.ii' -o -name '*.cudafe1.*' \) -delete
rm -rf .carry/build/report_browser
find .carry/build -type f -perm -u+x -exec sh -c 'file -b "$1" | grep -q ^ELF && strip --strip-debug "$1"' _ {} \;
du -sh .carry
