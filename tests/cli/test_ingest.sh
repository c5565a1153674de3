#!/usr/bin/env bash
# kjoule ingest on synthetic spool files: unique kernels split by size words only (not pointers or
# stack junk), NVTX iterations, cut files kept up to their last whole record, clear refusals.
# usage: test_ingest.sh KJOULE SRC_DIR BUILD_DIR
set -u
kj=$1 src=$2
. "$(dirname "$0")/lib.sh"

python3 "$src/tests/tools/mkspool.py" "$dir/s" --launches 1200 --functions 40 --per-iter 600
"$kj" ingest "$dir/s" -o "$dir/a.kjdb" 2>/dev/null; rc=$?
check "ingest succeeds" '[ $rc -eq 0 ]'
check "all kernels" '[ "$(q "$dir/a.kjdb" "SELECT count(*) FROM kernel")" = 1200 ]'
check "40 functions x 2 sizes = 80 unique kernels" '[ "$(q "$dir/a.kjdb" "SELECT count(*) FROM unique_kernel")" = 80 ]'
check "each unique kernel keyed by parameters" '[ "$(q "$dir/a.kjdb" "SELECT count(*) FROM unique_kernel WHERE keyed_by = \"params\"")" = 80 ]'
check "one parameter block per unique kernel" '[ "$(q "$dir/a.kjdb" "SELECT count(*) FROM launch_params WHERE iteration IS NULL")" = 80 ]'
check "by default the middle iteration (2 of 2) is kept whole" \
	'[ "$(q "$dir/a.kjdb" "SELECT count(*) FROM sequence_op WHERE iteration = 2 AND op = \"kernel\"")" = 600 ]'
"$kj" ingest "$dir/s" -o "$dir/none.kjdb" --params-iteration none 2>/dev/null
check "--params-iteration none keeps no iteration" '[ "$(q "$dir/none.kjdb" "SELECT count(*) FROM sequence_op")" = 0 ]'
check "info names the kept iteration and its process" '"$kj" info "$dir/a.kjdb" | grep -q "kept_iteration *forward#2 of pid"'
check "info says when no iteration was kept" '"$kj" info "$dir/none.kjdb" | grep -q "no whole iteration"'
"$kj" ingest "$dir/s" -o "$dir/bad.kjdb" --params-iteration soon 2>"$dir/bad.err"; rc=$?
check "--params-iteration soon refused, exit 2" '[ $rc -eq 2 ] && grep -q "auto, none or an instance" "$dir/bad.err" && [ ! -e "$dir/bad.kjdb" ]'
check "two closed iterations" '[ "$(q "$dir/a.kjdb" "SELECT count(*) FROM nvtx_range WHERE name = \"forward\" AND end_ns IS NOT NULL")" = 2 ]'
check "kernels command reads it" '"$kj" kernels "$dir/a.kjdb" --format csv | python3 -c "import sys,csv; r=list(csv.reader(sys.stdin)); sys.exit(len(r) != 81)"'
check "a run whose unique kernels each ran one function has no register warning" \
	'[ "$(q "$dir/a.kjdb" "SELECT count(*) FROM problem WHERE what LIKE \"%register counts%\"")" = 0 ]'
python3 "$src/tests/tools/mkspool.py" "$dir/mixed" --launches 400 --functions 10 --per-iter 100 --mixed-registers
"$kj" ingest "$dir/mixed" -o "$dir/mixed.kjdb" 2>/dev/null
check "two functions grouped as one unique kernel are named (both of function 0's sizes, 32 and 40 registers)" \
	'q "$dir/mixed.kjdb" "SELECT what FROM problem WHERE severity = \"warning\"" | grep -q "^2 unique kernel(s) hold kernels of different register counts (_Z9kj_kernel0Pfi: 32 and 40)"'
check "info lists it" '"$kj" info "$dir/mixed.kjdb" | grep -q "different register counts"'

python3 "$src/tests/tools/mkspool.py" "$dir/mod" --launches 300 --functions 10 --per-iter 100 --modules
"$kj" ingest "$dir/mod" -o "$dir/mod.kjdb" 2>/dev/null
check "each launch's parameters name the module its function came from (tracer's module id -> module_load)" \
	'[ "$(q "$dir/mod.kjdb" "SELECT count(*) FROM launch_params p JOIN module_load l ON l.pid = p.pid AND l.cupti_module_id = p.module_id")" = "$(q "$dir/mod.kjdb" "SELECT count(*) FROM launch_params")" ] &&
	 [ "$(q "$dir/mod.kjdb" "SELECT count(DISTINCT l.hash) FROM launch_params p JOIN module_load l ON l.pid = p.pid AND l.cupti_module_id = p.module_id")" = 10 ]'
check "two functions of one name from two modules stay two unique kernels, each with its module" \
	'[ "$(q "$dir/mod.kjdb" "SELECT count(DISTINCT p.module_id) || \",\" || count(DISTINCT u.id) FROM unique_kernel u JOIN kernel_name n ON n.id = u.name_id JOIN launch_params p ON p.unique_id = u.id WHERE n.mangled = \"_Z9kj_kernel0Pfi\"")" = "2,4" ]'
check "a run traced without module ids leaves the column empty" \
	'[ "$(q "$dir/a.kjdb" "SELECT count(*) FROM launch_params WHERE module_id IS NOT NULL")" = 0 ]'

python3 "$src/tests/tools/mkspool.py" "$dir/cp" --launches 300 --functions 10 --per-iter 100 --copies
"$kj" ingest "$dir/cp" -o "$dir/cp.kjdb" 2>/dev/null
dst=$((0x7F0000200000))
check "each copy row holds its call's device addresses (none for a host side)" \
	'[ "$(q "$dir/cp.kjdb" "SELECT count(*) FROM memcpy WHERE kind = \"HtoD\" AND src_address IS NULL AND dst_address IN ($dst, $dst + 1048576)")" = 6 ] && [ "$(q "$dir/cp.kjdb" "SELECT count(*) FROM memcpy WHERE kind = \"DtoD\" AND src_address = $dst AND dst_address = $dst + 4096")" = 3 ]'
check "a small host-to-device copy keeps the bytes it carried, beside its row; the 1 MiB one none" \
	'[ "$(q "$dir/cp.kjdb" "SELECT group_concat(hex(d.data), \",\") FROM copy_data d JOIN memcpy m ON m.id = d.memcpy_id AND m.correlation_id = d.correlation_id ORDER BY m.id")" = "0000000000000000,0100000000000000,0200000000000000" ]'
check "info names the kept iteration's host-to-device copy that kept no bytes (the 1 MiB one)" \
	'"$kj" info "$dir/cp.kjdb" | grep -q "1 of the kept iteration.s 2 host-to-device copies kept no bytes" &&
	 "$kj" info "$dir/cp.kjdb" --json | python3 -c "import json,sys; c=json.load(sys.stdin)[\"kept_iteration_htod_copies\"]; sys.exit(c != {\"copies\": 2, \"with_bytes\": 1})"'
check "the kept iteration holds its three copies in order" \
	'[ "$(q "$dir/cp.kjdb" "SELECT group_concat(m.kind || m.bytes, \" \") FROM sequence_op s JOIN memcpy m ON m.correlation_id = s.correlation_id WHERE s.iteration = 2 AND s.op = \"memcpy\" ORDER BY s.ordinal")" = "HtoD8 DtoD4096 HtoD1048576" ]'

"$kj" ingest "$dir/s" -o "$dir/it.kjdb" --params 0 --params-iteration 2 2>/dev/null
check "--params-iteration keeps the 2nd iteration's 600 launches in order" \
	'[ "$(q "$dir/it.kjdb" "SELECT count(*) FROM sequence_op WHERE iteration = 2 AND op = \"kernel\"")" = 600 ]'

"$kj" ingest "$dir/s" -o "$dir/a.kjdb" 2>"$dir/err"; rc=$?
check "existing output refused" '[ $rc -eq 1 ] && grep -q exists "$dir/err"'
"$kj" ingest "$dir/nothere" -o "$dir/b.kjdb" 2>"$dir/err"; rc=$?
check "missing directory named, exit 1" '[ $rc -eq 1 ] && grep -q nothere "$dir/err" && [ ! -e "$dir/b.kjdb" ]'
"$kj" ingest 2>/dev/null; rc=$?
check "no arguments: usage, exit 2" '[ $rc -eq 2 ]'

mkdir "$dir/real" && ln -s "$dir/real" "$dir/via"
"$kj" ingest "$dir/s" -o "$dir/via/l.kjdb" 2>"$dir/err"; rc=$?
check "ingest writes through a symlinked folder" '[ $rc -eq 0 ] && [ -s "$dir/real/l.kjdb" ]'
ln -s "$dir/real/l.kjdb" "$dir/lnk.kjdb"
"$kj" ingest "$dir/s" -o "$dir/lnk.kjdb" 2>"$dir/err"; rc=$?
check "a symlink as the output file itself is refused, left as it was" '[ $rc -ne 0 ] && [ -L "$dir/lnk.kjdb" ]'
rm -rf "$dir/real" "$dir/via" "$dir/lnk.kjdb"

python3 "$src/tests/tools/mkspool.py" "$dir/cut" --launches 500 --truncate 13
"$kj" ingest "$dir/cut" -o "$dir/cut.kjdb" 2>/dev/null; rc=$?
check "a cut file still ingests" '[ $rc -eq 0 ]'
check "a cut file is reported" '[ "$(q "$dir/cut.kjdb" "SELECT count(*) FROM problem WHERE what LIKE \"%cut short%\"")" = 1 ]'
check "records before the cut kept" '[ "$(q "$dir/cut.kjdb" "SELECT count(*) FROM kernel")" = 500 ]'
mkdir "$dir/bad" && printf 'not a spool file, at all, no' > "$dir/bad/p1.spool"
"$kj" ingest "$dir/bad" -o "$dir/bad.kjdb" 2>"$dir/err"; rc=$?
check "a foreign file is named" 'grep -q "p1.spool" "$dir/err"'
exit $fail
