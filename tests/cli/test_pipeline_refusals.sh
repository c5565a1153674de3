#!/usr/bin/env bash
# kjoule pipeline refuses bad input before anything runs: every number on the command line is
# parsed whole and range-checked (exit 2, the option and the value named), an unknown --set name,
# files beside --from and --layers without it are usage errors (exit 2); a file that does not
# parse, an unknown layer type or key, a size given as 0 (repeat, N), a --set value that breaks an
# expression, two pipelines of one name are bad files (exit 1, the file, line and field named).
# Every refusal starts no worker (the stand-in notes each start) and writes no output directory.
# usage: test_pipeline_refusals.sh KJOULE_BIN SRC_DIR BUILD_DIR
set -u
K=$1 S=$2
. "$S/tests/cli/lib.sh"
cd "$T"
cfg=$S/configs/pipelines
run=$S/examples/runs/bloom560m.kjdb
cat > worker.sh <<'W'
#!/usr/bin/env bash
echo $$ >> "$0.started"
while read -r line; do
	case $line in
	type=ceiling*) echo "KJ_CEILING tflops=800 gbs=3000"; echo "KJ_PHASE status=ok error=";;
	*) echo "KJ_PHASE status=ok latency_ns=1000000 power_w=400 energy_mj=400 unc_mj=2 launches=1000 has_energy=1 error=";;
	esac
done
W
chmod +x worker.sh
export KJ_PIPELINE_WORKER=$T/worker.sh
cat > ok.yml <<'Y'
pipelines:
  - name: ok
    params: {batch: 1, tp: 2}
    phases:
      - {name: fc, type: matmul, M: 64/tp, K: 64, N: batch}
Y
run_args=(--idle-w 100 --peak-tflops 1 --peak-gbs 1)

# refused CODE PATTERN ARGS...: `kjoule pipeline --out res ARGS` exits CODE, says PATTERN on
# stderr, starts no worker and writes no output directory
refused() {
	local code=$1 pat=$2
	shift 2
	rm -rf res worker.sh.started
	expect "$code" "$K" pipeline --out res "$@"
	grep -q -- "$pat" "$T/err" || fail "pipeline $*: stderr lacks '$pat': $(head -c 300 "$T/err")"
	if [ -e res ]; then fail "pipeline $*: refused, yet wrote res/"; fi
	if [ -e worker.sh.started ]; then fail "pipeline $*: refused, yet started the worker"; fi
}

# the control: the same good input runs, starts the worker and writes its output
rm -rf res worker.sh.started
expect 0 "$K" pipeline ok.yml --set tp=4 --batch 2 --out res "${run_args[@]}"
check "a good input starts the worker once" '[ "$(wc -l < worker.sh.started 2>/dev/null)" = 1 ]'
check "a good input writes its summary" 'grep -q "^ok,2,fp16,ok," res/summary.csv'
expect 0 "$K" pipeline ok.yml --list --set tp=4
has "M=16 K=64"

# numbers on the command line: the whole value, in range
refused 2 "pipeline: --batch: '3x' is not an integer" ok.yml --batch 3x
refused 2 "pipeline: --batch: '0' is not in 1\.\.2147483647" ok.yml --batch 0
refused 2 "pipeline: --batch: '' is not an integer" ok.yml --batch ''
refused 2 "pipeline: --set tp: 'abc' is not an integer" ok.yml --set tp=abc
refused 2 "pipeline: --set tp: '2.5' is not an integer" ok.yml --set tp=2.5
refused 2 "pipeline: --idle-w: 'abc' is not a number" ok.yml --idle-w abc
refused 2 "pipeline: --idle-w: '-5' is not in 0\.\.100000" ok.yml --idle-w -5
refused 2 "pipeline: --energy-seconds: '0' is not above 0" ok.yml --energy-seconds 0
refused 2 "pipeline: --peak-tflops: 'nan' is not a number" ok.yml --peak-tflops nan
refused 2 "pipeline: --peak-gbs: 'inf' is not a number" ok.yml --peak-gbs inf
refused 2 "pipeline: --timeout: '1.5' is not an integer" ok.yml --timeout 1.5
refused 2 "pipeline: --unroll: '100k' is not an integer" ok.yml --unroll 100k
refused 2 "pipeline: --iters: '1e3' is not an integer" ok.yml --iters 1e3
refused 2 "pipeline: --device: '-1' is not in 0\.\.1023" ok.yml --device -1
refused 2 "pipeline: --runs: '0' is not in 1\.\.1000000" --from "$run" --runs 0
refused 2 "pipeline: --layers: 'abc' is not an integer" --from "$run" --layers abc
refused 2 "pipeline: --layers: ' 1' is not an integer" --from "$run" --layers ' 1'
refused 2 "pipeline: --batch needs a value" ok.yml --batch
# --set names a parameter that a pipeline given declares
refused 2 "pipeline: --set foo: no pipeline given declares a parameter 'foo'" ok.yml --set foo=2
refused 2 "pipeline: --set tp: no pipeline given declares a parameter 'tp'" "$cfg/resnet18.yml" --set tp=2
refused 2 "pipeline: --set tp given twice" ok.yml --set tp=2 --set tp=4
refused 2 "pipeline: --set =4: NAME=VALUE" ok.yml --set =4
# --from goes alone
refused 2 "pipeline: --from .* takes no pipeline file (ok.yml given beside it)" --from "$run" ok.yml
refused 2 "pipeline: --batch is for pipeline files, not --from" --from "$run" --batch 4
refused 2 "pipeline: --layers goes with --from" ok.yml --layers 2
refused 2 "pipeline: --region goes with --from" ok.yml --region x

# bad files: named with their line and field, nothing run
cat > fft.yml <<'Y'
pipelines:
  - name: f
    phases:
      - {name: x, type: fft, C: 8}
Y
refused 1 "fft.yml: pipeline 'f': phase 'x' (line 4): field 'type': unknown layer type 'fft'" fft.yml "${run_args[@]}"
expect 1 "$K" pipeline fft.yml --list
has "^f: ERROR fft.yml: pipeline 'f': phase 'x' (line 4): field 'type': unknown layer type 'fft'"
refused 1 "opt66b_decode.yml: pipeline 'opt66b_decode': phase 'self_attn.qkv_proj' (line 9): field 'M': '3\*9216/tp': division by zero" \
	"$cfg/opt66b_decode.yml" --set tp=0 "${run_args[@]}"
expect 1 "$K" pipeline "$cfg/opt66b_decode.yml" --set tp=0 --list
grep -q "division by zero" "$T/err" || fail "--list --set tp=0 does not say why it failed"
printf 'pipelines: [\n  - {name: a\n' > syntax.yml
refused 1 "syntax.yml:2:.*YAML error" syntax.yml "${run_args[@]}"
refused 1 "syntax.yml:2:.*YAML error" ok.yml syntax.yml "${run_args[@]}" # the good file beside it does not run
cat > zero.yml <<'Y'
pipelines:
  - name: rep0
    phases:
      - {name: fc, type: matmul, M: 8, K: 8, N: 8, repeat: 0}
  - name: n0
    phases:
      - {name: r, type: act, C: 8, N: 0}
Y
refused 1 "zero.yml: pipeline 'rep0': phase 'fc' (line 4): field 'repeat': '0': must be > 0" zero.yml "${run_args[@]}"
grep -q "zero.yml: pipeline 'n0': phase 'r' (line 7): field 'N': '0': must be > 0" "$T/err" || fail "N: 0 not refused: $(cat "$T/err")"
refused 1 "field 'N': '0': must be > 0" zero.yml --only n0 "${run_args[@]}"
cat > keys.yml <<'Y'
pipelines:
  - name: k
    batch: 4
    phases:
      - {name: r, type: act, C: 8}
Y
refused 1 "keys.yml: pipeline 'k' (line 3): field 'batch': unknown" keys.yml "${run_args[@]}"
printf 'pipelines:\n  - name: t\n    phases:\n      - {name: r, type: act, C: 8}\npipeline: []\n' > top.yml
refused 1 "top.yml:5: field 'pipeline': unknown" top.yml "${run_args[@]}"
printf 'pipelines:\n  - name: k\n    phases:\n      - {name: r, type: act, C: 8, C: 16}\n' > dup.yml
refused 1 "dup.yml: pipeline 'k': phase 'r' (line 4): field 'C': given twice" dup.yml "${run_args[@]}"
printf 'pipelines:\n  - name: k\n    phases:\n      - {name: r, type: act, C: 8x}\n' > num.yml
refused 1 "num.yml: pipeline 'k': phase 'r' (line 4): field 'C': '8x': unexpected text after the expression" num.yml "${run_args[@]}"
sed 's/name: ok/name: ok/' ok.yml > ok2.yml
refused 1 "ok2.yml: pipeline 'ok': the name is taken (ok.yml)" ok.yml ok2.yml "${run_args[@]}"
# a missing worker: said before any output is written
KJ_PIPELINE_WORKER=/nonexistent/worker refused 1 "pipeline worker not found" ok.yml "${run_args[@]}"

# no file is dropped: 40 files, 40 pipelines listed
mkdir many
for i in $(seq 1 40); do printf 'pipelines:\n  - name: p%d\n    phases:\n      - {name: r, type: act, C: 8}\n' "$i" > "many/$i.yml"; done
expect 0 "$K" pipeline many/*.yml --list
check "40 files, 40 pipelines listed" '[ "$(grep -c "^p[0-9]* (fp16, nchw, 1 phases)" "$T/out")" = 40 ] && grep -q "^p40 " "$T/out"'
finish
