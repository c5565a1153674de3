#!/usr/bin/env bash
# kjoule run on a machine with or without a GPU: exit codes pass through, the database is always
# complete and valid, bad invocations are refused clearly, nothing is left behind.
# usage: test_run.sh KJOULE SRC_DIR BUILD_DIR
set -u
kj=$1
. "$(dirname "$0")/lib.sh"

"$kj" run -o "$dir/ok.kjdb" -- true 2>"$dir/err"; rc=$?
check "exit code of a successful command" '[ $rc -eq 0 ]'
check "database written" '[ -s "$dir/ok.kjdb" ]'
check "command recorded" '[ "$(q "$dir/ok.kjdb" "SELECT value FROM meta WHERE key=\"command\"")" = "[\"true\"]" ]'
check "exit recorded" '[ "$(q "$dir/ok.kjdb" "SELECT value FROM meta WHERE key=\"end_status\"")" = "exited" ]'
check "kjoule info reads it" '"$kj" info "$dir/ok.kjdb" >/dev/null'

# NVLink multicast off in the program unless the user chose
(unset NCCL_NVLS_ENABLE TORCH_SYMM_MEM_DISABLE_MULTICAST NVSHMEM_DISABLE_NVLS
 "$kj" run -o "$dir/env.kjdb" -- sh -c 'echo "nvls=$NCCL_NVLS_ENABLE symm=$TORCH_SYMM_MEM_DISABLE_MULTICAST shmem=$NVSHMEM_DISABLE_NVLS"' >"$dir/env.out" 2>/dev/null)
check "multicast off in the traced program" 'grep -q "^nvls=0 symm=1 shmem=1$" "$dir/env.out"'
NCCL_NVLS_ENABLE=1 "$kj" run -o "$dir/env1.kjdb" -- sh -c 'echo "nvls=$NCCL_NVLS_ENABLE"' >"$dir/env1.out" 2>/dev/null
check "a value the user set is kept" 'grep -q "^nvls=1$" "$dir/env1.out"'
rm -f "$dir/env.out" "$dir/env1.out"
"$kj" run -o "$dir/three.kjdb" -- sh -c 'exit 3' 2>/dev/null; rc=$?
check "exit code passes through (3)" '[ $rc -eq 3 ]'

"$kj" run -o "$dir/killed.kjdb" -- sh -c 'kill -9 $$' 2>/dev/null; rc=$?
check "killed command exits 128+9" '[ $rc -eq 137 ]'
check "killed run recorded as signaled" '[ "$(q "$dir/killed.kjdb" "SELECT value FROM meta WHERE key=\"end_status\"")" = "signaled" ]'
check "info says the run ended abnormally" '"$kj" info "$dir/killed.kjdb" | grep -qi "abnormal\|signal"'

"$kj" run -o "$dir/nf.kjdb" -- /nonexistent/cmd 2>"$dir/err"; rc=$?
check "missing command exits 127" '[ $rc -eq 127 ]'
check "missing command named" 'grep -q "/nonexistent/cmd" "$dir/err"'
check "no database for a command that never ran" '[ ! -e "$dir/nf.kjdb" ]'

"$kj" run -o "$dir/ok.kjdb" -- true 2>"$dir/err"; rc=$?
check "existing output refused" '[ $rc -ne 0 ] && grep -q "exists" "$dir/err"'
"$kj" run --force -o "$dir/ok.kjdb" -- sh -c 'exit 0' 2>/dev/null; rc=$?
check "--force replaces it" '[ $rc -eq 0 ] && [ "$(q "$dir/ok.kjdb" "SELECT value FROM meta WHERE key=\"command\"")" = "[\"sh\",\"-c\",\"exit 0\"]" ]'

"$kj" run --snapshot=0 -o "$dir/s0.kjdb" -- true 2>"$dir/err"; rc=$?
check "--snapshot=0 refused, naming the option" '[ $rc -eq 2 ] && grep -q -- "--snapshot=MB" "$dir/err" && [ ! -e "$dir/s0.kjdb" ]'
"$kj" run --snapshot --no-params -o "$dir/s1.kjdb" -- true 2>"$dir/err"; rc=$?
check "--snapshot without parameters refused" '[ $rc -eq 2 ] && grep -q "needs launch parameters" "$dir/err" && [ ! -e "$dir/s1.kjdb" ]'
"$kj" run --snapshot=64 -o "$dir/s2.kjdb" -- true 2>/dev/null; rc=$?
check "--snapshot=64 accepted" '[ $rc -eq 0 ] && [ -s "$dir/s2.kjdb" ]'
check "info: a snapshot run without buffers says so" '"$kj" info "$dir/s2.kjdb" | grep -q "found no device buffer"'
"$kj" run --snapshot-graphs=abc -o "$dir/s3.kjdb" -- true 2>"$dir/err"; rc=$?
check "--snapshot-graphs=abc refused, naming the option" '[ $rc -eq 2 ] && grep -q -- "--snapshot-graphs=MB" "$dir/err" && [ ! -e "$dir/s3.kjdb" ]'
"$kj" run --snapshot-graphs --no-params -o "$dir/s4.kjdb" -- true 2>"$dir/err"; rc=$?
check "--snapshot-graphs without parameters refused, naming it" '[ $rc -eq 2 ] && grep -q -- "--snapshot-graphs needs launch parameters" "$dir/err"'
"$kj" run --snapshot-graphs=32 -o "$dir/s5.kjdb" -- true 2>/dev/null; rc=$?
check "--snapshot-graphs=32 accepted, the capture options say graphs only" \
	'[ $rc -eq 0 ] && python3 -c "import sqlite3,sys,json; v=sqlite3.connect(sys.argv[1]).execute(\"SELECT value FROM meta WHERE key = \x27capture\x27\").fetchone()[0]; d=json.loads(v); sys.exit(not (d[\"snapshot_mb\"] == 32 and d[\"snapshot_graphs_only\"] == 1))" "$dir/s5.kjdb"'
"$kj" run --no-params -o "$dir/np.kjdb" -- true 2>/dev/null
check "info: missing parameters blamed on --no-params only when it was given" \
	'"$kj" info "$dir/np.kjdb" | grep -q "traced with --no-params" && "$kj" info "$dir/s2.kjdb" | grep -q "no launch parameters (no kernels)"'

ln -s /etc/passwd "$dir/link.kjdb"
"$kj" run --force -o "$dir/link.kjdb" -- true 2>"$dir/err"; rc=$?
check "a symlink at the output is not followed or replaced" '[ $rc -ne 0 ] && [ -L "$dir/link.kjdb" ]'

mkdir "$dir/real" && ln -s "$dir/real" "$dir/viadir"
"$kj" run -o "$dir/viadir/x.kjdb" -- true 2>"$dir/err"; rc=$?
check "a run database is created through a symlinked folder" '[ $rc -eq 0 ] && [ -s "$dir/real/x.kjdb" ] && [ ! -L "$dir/real/x.kjdb" ]'
"$kj" info "$dir/viadir/x.kjdb" >/dev/null 2>&1; rc=$?
check "and opens through it" '[ $rc -eq 0 ]'
rm -rf "$dir/real" "$dir/viadir"

out=$("$kj" run -o "$dir/echo.kjdb" -- printf 'a b\n' 2>/dev/null)
check "the command's output is unchanged" '[ "$out" = "a b" ]'
check "arguments reach the command without a shell" '"$kj" run -o "$dir/arg.kjdb" -- test "a;b" = "a;b" 2>/dev/null'

"$kj" run 2>"$dir/err"; rc=$?
check "no command: usage, exit 2" '[ $rc -eq 2 ] && grep -q usage "$dir/err"'
"$kj" run --params x -- true 2>"$dir/err"; rc=$?
check "bad --params: exit 2 naming the option" '[ $rc -eq 2 ] && grep -q -- "--params" "$dir/err"'

left=$(ls -A "$dir" | grep -v '\.kjdb$\|^err$' || true)
check "no temporary files left behind" '[ -z "$left" ]'
exit $fail
