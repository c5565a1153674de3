#!/usr/bin/env bash
# kjoule run and NCCL's calls (docs/multi-gpu.md): libkjoule_nccl.so first in the program's
# LD_PRELOAD, before the user's value, and meta nccl_calls 'on'; --no-nccl-calls leaves LD_PRELOAD
# as it was ('off'); a library that cannot be found is said and recorded ('missing'). No CUDA here:
# an empty file stands for the injection library (the driver that would load it is absent).
# usage: test_run_nccl.sh KJOULE SRC_DIR BUILD_DIR
set -u
kj=$1
. "$(dirname "$0")/lib.sh"
: >"$dir/inject.so"
export KJ_INJECT_LIB=$dir/inject.so
show='echo "$LD_PRELOAD" >"$0"'

LD_PRELOAD=libc.so.6 "$kj" run -o "$dir/on.kjdb" -- sh -c "$show" "$dir/on.env" 2>"$dir/on.err"; rc=$?
check "on: the run succeeds" '[ $rc -eq 0 ]'
first=$(cut -d: -f1 "$dir/on.env")
check "on: libkjoule_nccl.so first in LD_PRELOAD" 'case $first in */libkjoule_nccl.so) [ -r "$first" ];; *) false;; esac'
check "on: the user's LD_PRELOAD kept after it" '[ "$(cut -d: -f2- "$dir/on.env")" = libc.so.6 ]'
check "on: meta nccl_calls on" '[ "$(q "$dir/on.kjdb" "SELECT value FROM meta WHERE key=\"nccl_calls\"")" = on ]'

"$kj" run -o "$dir/alone.kjdb" -- sh -c "$show" "$dir/alone.env" 2>/dev/null
check "no LD_PRELOAD of the user's: the library alone" 'case $(cat "$dir/alone.env") in *:*) false;; */libkjoule_nccl.so) true;; *) false;; esac'

LD_PRELOAD=libc.so.6 "$kj" run --no-nccl-calls -o "$dir/off.kjdb" -- sh -c "$show" "$dir/off.env" 2>/dev/null; rc=$?
check "--no-nccl-calls: LD_PRELOAD as the user set it" '[ $rc -eq 0 ] && [ "$(cat "$dir/off.env")" = libc.so.6 ]'
check "--no-nccl-calls: meta nccl_calls off" '[ "$(q "$dir/off.kjdb" "SELECT value FROM meta WHERE key=\"nccl_calls\"")" = off ]'

KJ_NCCL_LIB=/nonexistent/libkjoule_nccl.so "$kj" run -o "$dir/miss.kjdb" -- sh -c "$show" "$dir/miss.env" 2>"$dir/miss.err"
check "not found: said once, the program still runs" '[ "$(grep -c "libkjoule_nccl.so not found" "$dir/miss.err")" = 1 ] && [ -z "$(cat "$dir/miss.env")" ]'
check "not found: meta nccl_calls missing" '[ "$(q "$dir/miss.kjdb" "SELECT value FROM meta WHERE key=\"nccl_calls\"")" = missing ]'

check "run --help names --no-nccl-calls" '"$kj" run --help | grep -q -- "--no-nccl-calls"'
exit 0
