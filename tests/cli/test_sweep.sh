# kjoule sweep and merge against a stand-in worker (tests/tools/sweep_worker_standin.py) whose
# answers come from a known function: dry runs of every shipped config and of the seed's own
# example, bad input, OOM skips, a killed sweep resumed, parts merged, several workers.
set -u
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
W="$SRC/tests/tools/sweep_worker_standin.py"
export KJ_SWEEP_WORKER=$W

# the seed's example config, verbatim, and every shipped config list their shapes
expect 0 "$KJ" sweep "$SRC/tests/data/sweep/seed_flash_atten.yml" --dry-run
has "^mp,b,h,l,dim$"
has "^1,4,16,1024,2048$"
[ "$(grep -c . "$T/out")" = 4861 ] || fail "seed grid: $(grep -c . "$T/out") lines, want 4861"
grep -q "10530-point grid (5670 dropped" "$T/err" || fail "dry-run summary: $(cat "$T/err")"
for f in "$SRC"/configs/sweep/collect/*.yml "$SRC"/configs/sweep/test/*.yml; do
	"$KJ" sweep "$f" --dry-run >/dev/null 2>"$T/err" || fail "$f: $(cat "$T/err")"
done
[ "$(ls "$SRC"/configs/sweep/collect/*.yml | wc -l)" = 28 ] || fail "collect/ lacks configs"
[ "$(ls "$SRC"/configs/sweep/test/*.yml | wc -l)" = 28 ] || fail "test/ lacks configs"
# parts: every 4th shape
expect 0 "$KJ" sweep "$SRC/tests/data/sweep/seed_flash_atten.yml" --dry-run --parts 4 --part 2
[ "$(sed -n 2p "$T/out")" = "$("$KJ" sweep "$SRC/tests/data/sweep/seed_flash_atten.yml" --dry-run 2>/dev/null | sed -n 3p)" ] || fail "part 2's first shape is the grid's second"

# bad input: exit 1 with file, line and key; usage errors exit 2; no worker started
cat >"$T/small.yml" <<'Y'
{
  "kernel_name": "layernorm",
  "columns_name": ['b', 'l', 'dim', 'F_dur(us)', 'B_dur(us)'],
  "first_n_column": 3,
  "starts": [1, 128, 256],
  "steps": [2, 128, 256],
  "ends": [4, 384, 768],
  "operators": ['mul', 'add', 'add'],
  "warmup_shapes": [1, 128, 256],
  "run": "get_all"
}
Y
sed 's/"ends": \[4, 384, 768\]/"ends": [4, 384]/' "$T/small.yml" >"$T/b1.yml"
expect 1 "$KJ" sweep "$T/b1.yml"
grep -q "b1.yml:7: key 'ends': 2 values, but first_n_column is 3" "$T/err" || fail "lengths: $(cat "$T/err")"
sed 's/"steps": \[2, 128, 256\]/"steps": [2, 0, 256]/' "$T/small.yml" >"$T/b2.yml"
expect 1 "$KJ" sweep "$T/b2.yml"
grep -q "b2.yml:6: key 'steps': l: step 0 with 'add' never advances" "$T/err" || fail "steps: $(cat "$T/err")"
sed 's/"ends": \[4, 384, 768\]/"ends": [4, 64, 768]/' "$T/small.yml" >"$T/b3.yml"
expect 1 "$KJ" sweep "$T/b3.yml"
grep -q "key 'ends': l ends at 64, below its start 128" "$T/err" || fail "ends: $(cat "$T/err")"
sed 's/"layernorm"/"layernrom"/' "$T/small.yml" >"$T/b4.yml"
expect 1 "$KJ" sweep "$T/b4.yml"
grep -q "b4.yml:2: key 'kernel_name': unknown operator 'layernrom'" "$T/err" || fail "op: $(cat "$T/err")"
sed 's/"run": "get_all"/"wait": 2/' "$T/small.yml" >"$T/b5.yml"
expect 1 "$KJ" sweep "$T/b5.yml"
grep -q "key 'run': missing" "$T/err" || fail "missing: $(cat "$T/err")"
expect 2 "$KJ" sweep "$T/small.yml" --precision fp8
grep -q "unknown precision 'fp8'" "$T/err" || fail "precision: $(cat "$T/err")"
expect 2 "$KJ" sweep "$T/small.yml" --parts 4 --part 5
grep -q "1 <= I <= P" "$T/err" || fail "parts: $(cat "$T/err")"
expect 2 "$KJ" sweep "$T/small.yml" --parts 0 --part 0
expect 1 "$KJ" sweep "$T/nonexistent.yml"
[ ! -e sampling_data ] || fail "a refused sweep wrote files"

# a sweep: one row per shape, OOM recorded as skipped, the log in the seed's form
export STANDIN_OOM_ABOVE=300000
expect 0 "$KJ" sweep "$T/small.yml" --out "$T/o" --gpu-name "NVIDIA H100 80GB HBM3" --energy
csv="$T/o/sampling_data/NVIDIAH10080GBHBM3_layernorm_fp16_1_1.csv"
[ -f "$csv" ] || fail "no $csv"
[ "$(head -1 "$csv")" = "b,l,dim,F_dur(us),B_dur(us),F_energy(uJ),F_energy_unc(uJ),B_energy(uJ),B_energy_unc(uJ),status" ] || fail "header: $(head -1 "$csv")"
[ "$(grep -c . "$csv")" = 28 ] || fail "rows: $(grep -c . "$csv")"
grep -q "^1,128,256,35.7680,71.5360,1788.400,17.884,3576.800,35.768,ok$" "$csv" || fail "row of 1,128,256"
grep -q "^4,384,768,-,-,-,-,-,-,oom$" "$csv" || fail "oom row: $(grep ^4,384,768 "$csv")"
log="$T/o/sampling_log/NVIDIAH10080GBHBM3_layernorm_fp16_1_1.txt"
grep -q "Kernel: layernorm_fp16 | Progress: 27/27=100.00% | Speed: [0-9.]*s/sample | Remaining: 0d0h0m0s" "$log" || fail "log: $(tail -1 "$log")"
grep -q "skipped shape 4,384,768 (oom)" "$log" || fail "log lacks the skip"
# the worker's mean SM clock over each energy window goes to the log, not the CSV
grep -q "^shape 1,128,256: SM clock 1755 MHz forward, 1980 MHz backward" "$log" || fail "log lacks the SM clock: $(grep -m1 "SM clock" "$log")"
# and the warm- and cold-L2 energies whose mean the CSV holds
grep -q "^shape 1,128,256: energy with warm/cold L2 1430.720/2146.080 uJ forward, 2861.440/4292.160 uJ backward" "$log" ||
	fail "log lacks the warm and cold energies: $(grep -m1 "warm/cold" "$log")"
# and the cuBLASLt algorithms of each pass; a word that is not ids is shown as '-'
grep -q "^shape 1,128,256: cuBLASLt algorithms 12.20.1.3.0+7.18.1.2.0 forward, - backward" "$log" || fail "log lacks the algorithms: $(grep -m1 "cuBLASLt" "$log")"
# flash_atten's answers name the implementation that ran; the log keeps it per shape
cat >"$T/fa.yml" <<'Y'
{
  "kernel_name": "flash_atten",
  "columns_name": ['mp', 'b', 'h', 'l', 'dim', 'F_dur(us)', 'B_dur(us)'],
  "first_n_column": 5,
  "starts": [1, 1, 2, 128, 128],
  "steps": [2, 2, 2, 128, 128],
  "ends": [1, 1, 2, 256, 128],
  "operators": ['mul', 'mul', 'mul', 'add', 'add'],
  "warmup_shapes": [1, 1, 2, 128, 128],
  "run": "get_all"
}
Y
expect 0 "$KJ" sweep "$T/fa.yml" --out "$T/fa" --gpu-name "NVIDIA H100 80GB HBM3"
facsv="$T/fa/sampling_data/NVIDIAH10080GBHBM3_flash_atten_fp16_1_1.csv"
[ "$(head -1 "$facsv")" = "mp,b,h,l,dim,F_dur(us),B_dur(us),status,impl" ] || fail "flash_atten header: $(head -1 "$facsv")"
grep -q "^1,1,2,256,128,[0-9.]*,[0-9.]*,ok,cudnn-sdpa.e2/kjoule-flash2$" "$facsv" || fail "impl column: $(cat "$facsv")"
falog="$T/fa/sampling_log/NVIDIAH10080GBHBM3_flash_atten_fp16_1_1.txt"
grep -q "^shape 1,1,2,256,128: implementation cudnn-sdpa.e2 forward, kjoule-flash2 backward$" "$falog" ||
	fail "log lacks the attention implementation: $(grep -m1 "^shape" "$falog")"
# run again: nothing to do, the file unchanged
cp "$csv" "$T/before.csv"
STANDIN_LOG="$T/req" expect 0 "$KJ" sweep "$T/small.yml" --out "$T/o" --gpu-name "NVIDIA H100 80GB HBM3" --energy
cmp -s "$csv" "$T/before.csv" || fail "a finished sweep run again changed its CSV"
[ ! -s "$T/req" ] || fail "a finished sweep asked the worker again"
# the same CSV without --energy: refused, not mixed
expect 1 "$KJ" sweep "$T/small.yml" --out "$T/o" --gpu-name "NVIDIA H100 80GB HBM3"
grep -q "cannot resume" "$T/err" || fail "header mismatch: $(cat "$T/err")"
unset STANDIN_OOM_ABOVE

# killed after 10 shapes (the worker dies, as under a kill), then resumed: every shape once
rm -f "$T/count"
STANDIN_DIE_AFTER=10 STANDIN_COUNT_FILE="$T/count" expect 1 "$KJ" sweep "$T/small.yml" --out "$T/k" --gpu-name G
kcsv="$T/k/sampling_data/G_layernorm_fp16_1_1.csv"
# ten answers: the warmup shape's and nine rows
[ "$(grep -c . "$kcsv")" = 10 ] || fail "killed sweep kept $(grep -c . "$kcsv") lines, want 10"
printf '4,128,2' >>"$kcsv" # a torn last line, as a kill during a write leaves
rm -f "$T/req"
STANDIN_LOG="$T/req" expect 0 "$KJ" sweep "$T/small.yml" --out "$T/k" --gpu-name G
grep -q "dropping a torn last line" "$T/err" || fail "torn line not reported"
[ "$(grep -c . "$kcsv")" = 28 ] || fail "resumed sweep: $(grep -c . "$kcsv") lines"
[ "$(tail -n +2 "$kcsv" | cut -d, -f1-3 | sort | uniq -d | wc -l)" = 0 ] || fail "resumed sweep repeated shapes"
[ "$(grep -c . "$T/req")" = 19 ] || fail "resume asked for $(grep -c . "$T/req") lines, want 18 shapes + warmup"
grep -q "^layernorm fp16 1,128,256 0 0$" "$T/req" || fail "request format: $(head -1 "$T/req")"

# parts, two workers each (CUDA_VISIBLE_DEVICES says two GPUs), merged into the whole
for p in 1 2 3; do
	CUDA_VISIBLE_DEVICES=0,1 expect 0 "$KJ" sweep "$T/small.yml" --out "$T/p" --gpu-name G --parts 3 --part $p --gpus all
done
expect 0 "$KJ" merge "$T/p/sampling_data"
has "G_layernorm_fp16.csv: 3 parts, 27 rows, 0 duplicates dropped"
merged="$T/p/sampling_data/G_layernorm_fp16.csv"
[ "$(tail -n +2 "$merged" | cut -d, -f1-5)" = "$(tail -n +2 "$kcsv" | sort -t, -k1,1n -k2,2n -k3,3n | cut -d, -f1-5)" ] || fail "merged parts differ from the whole sweep"
# duplicates dropped, junk refused with file and line
expect 0 "$KJ" merge -o "$T/m.csv" "$merged" "$T/p/sampling_data/G_layernorm_fp16_3_1.csv"
has "27 rows, 9 duplicates dropped"
printf 'b,l,dim,F_dur(us),B_dur(us),watts\n' >"$T/foreign.csv"
expect 1 "$KJ" merge -o "$T/m2.csv" "$merged" "$T/foreign.csv"
grep -q "foreign.csv:1: foreign column 'watts'" "$T/err" || fail "foreign: $(cat "$T/err")"
cp "$merged" "$T/junk.csv"; echo "1,2,three,4,5,ok" >>"$T/junk.csv"
expect 1 "$KJ" merge -o "$T/m2.csv" "$T/junk.csv"
grep -q "junk.csv:29: column 'dim': 'three' is not a positive integer" "$T/err" || fail "junk: $(cat "$T/err")"
[ ! -e "$T/m2.csv" ] || fail "a refused merge wrote its output"

# a worker that fails every shape stops the sweep after ten, with its message; nothing written
STANDIN_FAIL=1 expect 1 "$KJ" sweep "$T/small.yml" --out "$T/f" --gpu-name G
grep -q "the first 10 shapes all failed (last: broken (stand-in)); stopping" "$T/err" || fail "broken worker: $(tail -2 "$T/err")"
[ "$(grep -c . "$T/f/sampling_data/G_layernorm_fp16_1_1.csv")" = 1 ] || fail "failed shapes were written"

# a shape that hangs: its worker is killed after --timeout, the others measured, exit 1 (retry)
STANDIN_HANG_AT=2,256,512 expect 1 "$KJ" sweep "$T/small.yml" --out "$T/h" --gpu-name G --timeout 1
grep -q "killed after --timeout during shape 2,256,512" "$T/err" || fail "timeout: $(tail -3 "$T/err")"
[ "$(grep -c . "$T/h/sampling_data/G_layernorm_fp16_1_1.csv")" = 27 ] && ! grep -q "^2,256,512," "$T/h/sampling_data/G_layernorm_fp16_1_1.csv" || fail "timeout: other shapes not measured"

# run_function: the one shape with the check, printed, no CSV; get_profiler: kjoule run traces it
sed 's/"run": "get_all"/"run": "run_function"/' "$T/small.yml" >"$T/rf.yml"
expect 0 "$KJ" sweep "$T/rf.yml" --out "$T/rf"
has "^1,128,256 ok F_dur(us)=35.7680 B_dur(us)=71.5360 err_f=1e-4 err_b=2e-4"
[ ! -e "$T/rf/sampling_data" ] || fail "run_function wrote a CSV"
sed 's/"run": "get_all"/"run": "get_profiler"/' "$T/small.yml" >"$T/gp.yml"
expect 0 "$KJ" sweep "$T/gp.yml" --out "$T/gp" --gpu-name G
[ "$(cat "$T/gp/sampling_profile/G_layernorm_fp16_1_1.req")" = "layernorm fp16 1,128,256 0 0" ] || fail "profile request"
[ -s "$T/gp/sampling_profile/G_layernorm_fp16_1_1.kjdb" ] || fail "no profile run database: $(cat "$T/err")"
finish
