#!/usr/bin/env bash
# kjoule pipeline: usage errors exit 2; --list on the shipped files; a bad file and a bad pipeline
# are named (file, pipeline, phase, field) and refuse the whole command (exit 1) before the worker
# starts or anything is written; a pipeline listed with errors exits 1; summary.csv, the per-phase
# CSV and the SVG, with a stand-in worker (a script that answers the worker's protocol: 1 ms and
# 0.4 J per call, a failure for one phase); --from --list on the shipped run. Every bad number,
# option and file field: tests/cli/test_pipeline_refusals.sh.
# usage: test_pipeline.sh KJOULE_BIN SRC_DIR BUILD_DIR
set -u
K=$1 S=$2
. "$S/tests/cli/lib.sh"
cd "$T"

expect 0 "$K" pipeline --help; has 'usage: kjoule pipeline'
expect 2 "$K" pipeline
expect 2 "$K" pipeline --batch 0 x.yml
expect 2 "$K" pipeline --precision fp8 x.yml
expect 2 "$K" pipeline --bogus x.yml
expect 2 "$K" pipeline "$S"/configs/pipelines/resnet18.yml --only nosuch --list

expect 0 "$K" pipeline "$S"/configs/pipelines/*.yml --list
for p in resnet18 resnet50 mobilenet_v3_small efficientnet_b0 replknet31b vit_b_16 opt66b_prefill opt66b_decode; do
	has "^$p ("
done
lacks ERROR
expect 0 "$K" pipeline "$S"/configs/pipelines/opt66b_decode.yml --list --set tp=2 --batch 8
has 'self_attn.qkv_proj .* N=8 M=13824 K=9216'
has 'self_attn.sdpa .* N=8 .*heads=36 seq_q=1 seq_kv=2048'

# layout: the pipeline's (or --layout's) holds for conv, norm, pool and act phases, not matmul
expect 0 "$K" pipeline "$S"/configs/pipelines/resnet50.yml --list --layout nhwc
has '^resnet50 (fp16, nhwc, 94 phases)'
has '^  conv1 .*type=conv .* nhwc=1$'
has '^  layer1.0.bn1 .*op=batch .* nhwc=1$'
lacks 'type=matmul .*nhwc=1'
expect 0 "$K" pipeline "$S"/configs/pipelines/resnet50.yml --list
lacks 'nhwc=1'
expect 2 "$K" pipeline --layout nhwz x.yml
cat > lay.yml <<'Y'
pipelines:
  - name: cl
    layout: nhwc
    phases:
      - {name: c, type: conv, C: 8, H: 8, W: 8, M: 8, R: 3, S: 3, pad: 1}
      - {name: c2, type: conv, C: 8, H: 8, W: 8, M: 8, R: 1, S: 1, layout: nchw}
  - name: badlayout
    phases:
      - {name: r, type: act, op: relu, C: 8, H: 8, W: 8, layout: nhwz}
  - name: badmul
    layout: nhwc
    phases:
      - {name: se, type: act, op: mul, C: 8, H: 8, W: 8}
Y
expect 1 "$K" pipeline lay.yml --list # listed, but two pipelines have errors
has '^  c .* nhwc=1$'
check "a phase's own layout wins over its pipeline's" '! grep -q "^  c2 .*nhwc=1" "$T/out"'
has "^badlayout: ERROR .*lay.yml: pipeline 'badlayout': phase 'r' (line 9): field 'layout': 'nhwz' is not nchw or nhwc"
has "^badmul: ERROR .*phase 'se' (line 13): field layout: nhwc is not built for act 'mul'"

# conv_algo: heuristic (default) | fastest, per pipeline, per phase, or --conv-algo (which wins);
# only conv phases carry it to the worker
expect 2 "$K" pipeline --conv-algo quick x.yml
check "--conv-algo's error names the value" 'grep -q "conv-algo quick: fastest or heuristic" "$T/err"'
cat > algo.yml <<'Y'
pipelines:
  - name: fast
    conv_algo: fastest
    phases:
      - {name: c, type: conv, C: 8, H: 8, W: 8, M: 8, R: 3, S: 3, pad: 1}
      - {name: c2, type: conv, C: 8, H: 8, W: 8, M: 8, R: 1, S: 1, conv_algo: heuristic}
      - {name: r, type: act, op: relu, C: 8, H: 8, W: 8}
  - name: badalgo
    phases:
      - {name: c3, type: conv, C: 8, H: 8, W: 8, M: 8, R: 1, S: 1, conv_algo: quick}
  - name: badalgo2
    conv_algo: slow
    phases:
      - {name: c4, type: conv, C: 8, H: 8, W: 8, M: 8, R: 1, S: 1}
Y
expect 1 "$K" pipeline algo.yml --list
has '^  c .*type=conv .* fastest=1$'
check "a phase's own conv_algo wins over its pipeline's" '! grep -q "^  c2 .*fastest=1" "$T/out"'
check "conv_algo reaches conv phases only" '! grep -q "^  r .*fastest=1" "$T/out"'
has "^badalgo: ERROR .*algo.yml: pipeline 'badalgo': phase 'c3' (line 10): field 'conv_algo': 'quick' is not fastest or heuristic"
has "^badalgo2: ERROR .*algo.yml: pipeline 'badalgo2': field 'conv_algo': 'slow' is not fastest or heuristic"
expect 1 "$K" pipeline algo.yml --list --conv-algo fastest # badalgo's phase is still bad
has '^  c2 .*type=conv .* fastest=1$'
expect 0 "$K" pipeline "$S"/configs/pipelines/resnet50.yml --list
lacks 'fastest=1'

# bn_kernel: vector (default) | plane, per pipeline, per phase, or --bn-kernel (which wins); the
# pipeline's reaches NCHW batch-norm phases only; a phase asking plane for anything else is refused
expect 2 "$K" pipeline --bn-kernel wide x.yml
check "--bn-kernel's error names the value" 'grep -q "bn-kernel wide: vector or plane" "$T/err"'
cat > bn.yml <<'Y'
pipelines:
  - name: plane
    bn_kernel: plane
    phases:
      - {name: b, type: norm, op: batch, C: 8, H: 8, W: 8}
      - {name: b2, type: norm, op: batch, C: 8, H: 8, W: 8, bn_kernel: vector}
      - {name: b3, type: norm, op: batch, C: 8, H: 8, W: 8, layout: nhwc}
      - {name: l, type: norm, op: layer, C: 8}
      - {name: r, type: act, op: relu, C: 8, H: 8, W: 8}
  - name: badbn
    phases:
      - {name: l2, type: norm, op: layer, C: 8, bn_kernel: plane}
  - name: badbn2
    bn_kernel: wide
    phases:
      - {name: b4, type: norm, op: batch, C: 8, H: 8, W: 8}
  - name: badbn3
    phases:
      - {name: b5, type: norm, op: batch, C: 8, H: 8, W: 8, bn_kernel: narrow}
Y
expect 1 "$K" pipeline bn.yml --list
has '^  b .*op=batch .* bn_plane=1$'
check "a phase's own bn_kernel wins over its pipeline's" '! grep -q "^  b2 .*bn_plane=1" "$T/out"'
check "the pipeline's bn_kernel leaves channels-last batch norm alone" '! grep -q "^  b3 .*bn_plane=1" "$T/out"'
check "bn_kernel reaches batch norm only" '! grep -Eq "^  (l|r) .*bn_plane=1" "$T/out"'
has "^badbn: ERROR .*bn.yml: pipeline 'badbn': phase 'l2' (line 12): field bn_kernel: plane is built for batch norm in nchw only"
has "^badbn2: ERROR .*bn.yml: pipeline 'badbn2': field 'bn_kernel': 'wide' is not vector or plane"
has "^badbn3: ERROR .*bn.yml: pipeline 'badbn3': phase 'b5' (line 19): field 'bn_kernel': 'narrow' is not vector or plane"
expect 0 "$K" pipeline bn.yml --list --only plane --bn-kernel vector
lacks 'bn_plane=1'
expect 0 "$K" pipeline "$S"/configs/pipelines/resnet50.yml --list --bn-kernel plane
has '^  layer1.0.bn1 .*op=batch .* bn_plane=1$'
lacks 'type=conv .*bn_plane=1'
expect 0 "$K" pipeline "$S"/configs/pipelines/resnet50.yml --list
lacks 'bn_plane=1'

cat > run.yml <<'Y'
pipelines:
  - name: good
    phases:
      - {name: r, type: act, op: relu, C: 64, H: 8, W: 8}
      - {name: fc, type: matmul, M: 64, K: 64, N: batch}
  - name: oom
    phases:
      - {name: huge, type: matmul, M: 65536, K: 65536, N: 65536}
      - {name: r, type: act, op: relu, C: 64}
Y
{ cat run.yml; printf '  - name: broken\n    phases:\n      - {name: c, type: conv, C: 30, H: 8, W: 8, M: 32, R: 3, S: 3, groups: 4}\n'; } > bad.yml
printf 'pipelines: [\n  - {name: a\n' > syntax.yml
# the stand-in worker: 1 ms, 400 mJ per call; "huge" fails as out of memory; each start is noted
cat > worker.sh <<'W'
#!/usr/bin/env bash
echo $$ >> "$0.started"
while read -r line; do
	case $line in
	type=ceiling*) echo "KJ_CEILING tflops=800 gbs=3000"; echo "KJ_PHASE status=ok error=";;
	*name=huge*) echo "KJ_PHASE status=failed error=out of memory: cudaMalloc(8589934592 bytes) for matmul A: cudaErrorMemoryAllocation";;
	*) echo "KJ_PHASE status=ok latency_ns=1000000 single_ns=1100000 power_w=400 sm_mhz=1755 energy_mj=400 unc_mj=2 launches=1000 has_energy=1 error=";;
	esac
done
W
chmod +x worker.sh
export KJ_PIPELINE_WORKER=$T/worker.sh
# a bad pipeline and a file that does not parse: each named, and nothing runs (no worker, no output)
expect 1 "$K" pipeline bad.yml syntax.yml --out o --idle-w 100 --batch 4
grep -q "syntax.yml:2:.*YAML error" "$T/err" || fail "no YAML error with file and line: $(cat "$T/err")"
grep -q "bad.yml: pipeline 'broken': phase 'c' (line 12): field groups: does not divide the input channels C" "$T/err" ||
	fail "bad shape not named: $(cat "$T/err")"
check "refused: 1 file unreadable, 1 pipeline with errors" 'grep -q "refused: 1 file(s) unreadable, 1 pipeline(s) with errors; nothing was run" "$T/err"'
check "refused: the worker never started" '[ ! -e "$T/worker.sh.started" ]'
check "refused: no output directory" '[ ! -e o ]'
expect 1 "$K" pipeline run.yml --out o --idle-w 100 --batch 4
check "the good file ran: the worker started once" '[ "$(wc -l < "$T/worker.sh.started")" = 1 ]'
grep -q "run.yml: pipeline 'oom': phase 'huge' (.*): out of memory" "$T/err" || fail "OOM phase not named"
[ -f o/summary.csv ] || fail "no summary.csv"
check "summary has a header and 2 rows" '[ "$(wc -l < o/summary.csv)" = 3 ]'
check "good pipeline ok" 'grep -q "^good,4,fp16,ok,2,0,2,2.000000,0.8,0.6,r,1.000000,1.000000,0.2,100.00,given (--idle-w)," o/summary.csv'
check "oom pipeline partial" 'grep -q "^oom,4,fp16,partial,2,1,1,1.000000,.*first .huge.: out of memory" o/summary.csv'
check "per-phase csv" '[ "$(wc -l < o/good.phases.csv)" = 3 ] && grep -q "^1,fc,matmul,,fp16,1,.*,ok,1.000000,1.100000,400.00,1755,0.4," o/good.phases.csv'
check "achieved rate and bound" 'grep -q "^0,r,act,relu,.*,memory," o/good.phases.csv'
check "svg marks the bottleneck" 'grep -q "(bottleneck)" o/good.svg && grep -q "</svg>" o/good.svg'
check "log per pipeline" 'grep -q "^totals: sequential_ms=2.000000" o/good.log'
# identical layers are measured once: the worker saw each request at most once
expect 0 "$K" pipeline "$S"/configs/pipelines/resnet50.yml --out o2 --idle-w 100
check "resnet50 with the stand-in" 'grep -q "^resnet50,1,fp16,ok,94,0,174,174.000000," o2/summary.csv'

# a worker that dies mid-phase: that phase fails, the next one runs in a new worker
cat > dying.sh <<'W'
#!/usr/bin/env bash
while read -r line; do
	case $line in
	*name=fc*) kill -SEGV $$;;
	*) echo "KJ_PHASE status=ok latency_ns=1000 power_w=100 energy_mj=0.1 unc_mj=0 launches=100 has_energy=1 error=";;
	esac
done
W
chmod +x dying.sh
KJ_PIPELINE_WORKER=$T/dying.sh expect 1 "$K" pipeline run.yml --only good --out o3 --idle-w 50 --peak-tflops 1 --peak-gbs 1
check "dead worker named" 'grep -q "phase .fc.*worker killed by signal 11" "$T/err"'
check "partial after a crash" 'grep -q "^good,1,fp16,partial,2,1," o3/summary.csv'

# a worker that hangs on one phase: killed after --timeout, the next phase runs in a new worker
cat > hang.sh <<'W'
#!/usr/bin/env bash
while read -r line; do
	case $line in
	*name=r*) exec sleep 30;;
	*) echo "KJ_PHASE status=ok latency_ns=1000 power_w=100 energy_mj=0.1 unc_mj=0 launches=100 has_energy=1 error=";;
	esac
done
W
chmod +x hang.sh
KJ_PIPELINE_WORKER=$T/hang.sh expect 1 "$K" pipeline run.yml --only good --out o4 --idle-w 50 --peak-tflops 1 --peak-gbs 1 --timeout 1
check "hung phase timed out" 'grep -q "phase .r. .*timed out after 1 s (worker killed)" "$T/err"'
check "the next phase ran" 'grep -q "^1,fc,matmul,.*,ok," o4/good.phases.csv'

# --from: the phases of the shipped run's kept iteration
expect 0 "$K" pipeline --from "$S"/examples/runs/bloom560m.kjdb --layers 1 --list
has '^forward#28 (n/a, 3 phases)'
has 'cub::DeviceScan::InclusiveScan .* first=6 last=7'
expect 1 "$K" pipeline --from "$S"/examples/runs/bloom560m.kjdb --layers 3 --list
grep -q "no NVTX range at depth 3" "$T/err" || fail "depth error"
finish
