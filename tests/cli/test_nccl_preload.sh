#!/usr/bin/env bash
# libkjoule_nccl.so (src/trace/nccl) preloaded into programs built against a stand-in libnccl.so.2
# (tests/tools/nccl): (a) a program linked to it, (b) a library linked to it that a program
# dlopen()s RTLD_LOCAL (out of RTLD_NEXT's reach, as PyTorch loads NCCL), (c) a program without
# NCCL, (d) that library with the stand-in linked into it (no libnccl object to find). Each real call is made exactly once and its result passes through; p<pid>.nccl holds one
# line per call with its bytes, communicator size, peer and group depth; a forked child writes its
# own file; nothing is written without NCCL calls or without KJOULE_SPOOL.
# usage: test_nccl_preload.sh KJOULE SRC_DIR BUILD_DIR
set -u
build=$(cd "$3" && pwd)
. "$(dirname "$0")/lib.sh"
lib=$build/src/trace/nccl/libkjoule_nccl.so
bin=$build/tests/nccl
[ -e "$lib" ] && [ -x "$bin/kj_nccl_direct" ] || { echo "libkjoule_nccl.so or its test programs not built: skipped"; exit 77; }
sp=$dir/spool
mkdir -p "$sp"

# (a) linked directly
KJOULE_SPOOL=$sp LD_PRELOAD=$lib "$bin/kj_nccl_direct" >"$dir/a.out" 2>"$dir/a.err"; rc=$?
check "(a) runs, every result passed through" '[ $rc -eq 0 ] && grep -qx "results ok" "$dir/a.out"'
check "(a) the fake got each of the 311 calls exactly once" 'grep -qx "calls 311" "$dir/a.out"'
check "(a) nothing on stderr (the real functions were found)" '[ ! -s "$dir/a.err" ]'
ls "$sp"/p*.nccl >"$dir/files" 2>/dev/null
check "(a) two files: the program's and its forked child's" '[ "$(wc -l <"$dir/files")" = 2 ]'
# the program's file is the long one
pa=$(wc -l "$sp"/p*.nccl | sort -n | sed -n 2p | awk '{print $2}')
pc=$(wc -l "$sp"/p*.nccl | sort -n | sed -n 1p | awk '{print $2}')
for f in "$pa" "$pc"; do
	[ "$(grep -c 'kjoule-nccl 1 pid' "$f")" = 1 ] || fail "$f: not one header line"
done
check "(a) header names its pid" 'head -1 "$pa" | grep -qx "kjoule-nccl 1 pid $(basename "$pa" .nccl | tr -d p)"'
check "(a) 309 call lines, 256 of them written before exit" '[ "$(tail -n +2 "$pa" | wc -l)" = 309 ]'
# fields 3..9: op count datatype bytes nranks peer group_depth
tail -n +2 "$pa" | head -9 | cut -d" " -f3- >"$dir/a.fields"
cat >"$dir/a.want" <<'W'
all_reduce 1000 7 4000 2 -1 0
send 10 9 20 2 1 1
recv 10 9 20 2 1 1
all_gather 100 4 800 2 -1 0
reduce_scatter 50 6 100 2 -1 0
broadcast 8 1 8 2 0 0
reduce 3 8 24 2 1 0
all_reduce 5 42 -1 2 -1 0
broadcast 1 0 1 2 7 0
W
check "(a) op, count, datatype, bytes, nranks, peer and group depth of each call" 'diff "$dir/a.want" "$dir/a.fields"'
check "(a) times rise and tids are the process's" 'tail -n +2 "$pa" | awk -v p="$(basename "$pa" .nccl | tr -d p)" "NR>1 && \$1<t {bad=1} {t=\$1} \$2!=p {bad=1} END {exit bad}"'
check "(a) the forked child's one call is in its own file only" '[ "$(tail -n +2 "$pc" | cut -d" " -f3-)" = "all_reduce 77 2 308 2 -1 0" ] && ! grep -q "all_reduce 77 2 308" "$pa"'

# (a') a process that ends without its exit handlers (_exit, or a signal): lines go out at a call
# 200 ms or more after the last write, so three calls, a pause and a fourth are all in the file
mkdir -p "$dir/abrupt"
KJOULE_SPOOL=$dir/abrupt LD_PRELOAD=$lib "$bin/kj_nccl_direct" abrupt >/dev/null 2>&1
check "(a') _exit after a pause: the 4 calls are in the file" '[ "$(tail -n +2 "$dir"/abrupt/p*.nccl 2>/dev/null | wc -l)" = 4 ]'
rm -rf "$dir/abrupt"

# (b) NCCL loaded RTLD_LOCAL under a dlopen'ed library
rm -f "$sp"/*
KJOULE_SPOOL=$sp LD_PRELOAD=$lib "$bin/kj_nccl_dlopen" "$bin/libkj_nccl_mid.so" >"$dir/b.out" 2>"$dir/b.err"; rc=$?
check "(b) runs; the fake got its 5 calls once each, results passed through" '[ $rc -eq 0 ] && grep -qx "calls 5" "$dir/b.out"'
check "(b) nothing on stderr (found through the loaded libnccl)" '[ ! -s "$dir/b.err" ]'
check "(b) the grouped calls at depth 1, the broadcast outside" '[ "$(tail -n +2 "$sp"/p*.nccl | cut -d" " -f3- | tr "\n" ";")" = "all_reduce 256 7 1024 2 -1 1;all_reduce 128 9 256 2 -1 1;broadcast 1 0 1 2 7 0;" ]'

# (d) NCCL linked into the dlopen'ed library itself (no libnccl object; its functions exported)
rm -f "$sp"/*
KJOULE_SPOOL=$sp LD_PRELOAD=$lib "$bin/kj_nccl_dlopen" "$bin/libkj_nccl_static.so" >"$dir/s.out" 2>"$dir/s.err"; rc=$?
check "(d) NCCL inside the library: its 5 calls once each, results passed through" '[ $rc -eq 0 ] && grep -qx "calls 5" "$dir/s.out" && [ ! -s "$dir/s.err" ]'
check "(d) its 3 calls recorded" '[ "$(tail -n +2 "$sp"/p*.nccl | wc -l)" = 3 ]'

# (c) no NCCL: runs normally, writes nothing
rm -f "$sp"/*
KJOULE_SPOOL=$sp LD_PRELOAD=$lib "$bin/kj_nccl_none" >"$dir/c.out" 2>"$dir/c.err"; rc=$?
check "(c) a program without NCCL runs as it would" '[ $rc -eq 0 ] && grep -qx "no nccl here" "$dir/c.out" && [ ! -s "$dir/c.err" ]'
check "(c) and writes nothing" '[ -z "$(ls -A "$sp")" ]'

# without KJOULE_SPOOL (the library outside kjoule run): calls pass through, nothing recorded
(cd "$dir" && env -u KJOULE_SPOOL LD_PRELOAD=$lib "$bin/kj_nccl_direct" >"$dir/d.out" 2>"$dir/d.err"); rc=$?
check "no KJOULE_SPOOL: runs, all 311 calls passed through" '[ $rc -eq 0 ] && grep -qx "calls 311" "$dir/d.out" && [ ! -s "$dir/d.err" ]'
check "no KJOULE_SPOOL: no file anywhere" '[ -z "$(find "$dir" -name "p*.nccl")" ]'
exit 0
