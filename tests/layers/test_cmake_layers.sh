# The build's targets against the floors: this build's kj_layers.txt (written by the top-level
# CMakeLists.txt at configure time) passes scripts/check_cmake_layers.py, so the libraries' links
# and scripts/check_layers.py's ALLOWED cannot drift apart. Then the checker on altered copies:
# a floor that lost a link it may have, a link ALLOWED does not give, an include directory of
# another folder, a floor with no target, a worker whose program links its own folder's library
# (looked through), and the injection library's headers of common, each caught or passed.
KJ=$1 SRC=$2 BUILD=$3
. "$SRC/tests/cli/lib.sh"
C="$SRC/scripts/check_cmake_layers.py"
L="$BUILD/kj_layers.txt"
[ -f "$L" ] || { fail "$L missing: the top-level CMakeLists.txt writes it at configure time"; finish; }
run() { expect "$1" python3 "$C" "$2" --root "$SRC"; }
# edit TARGET COLUMN PYTHON-EXPR: a copy of this build's file with one field (v) of one target rewritten
edit() {
	python3 -c 'import sys, re
t, c, e, src, dst = sys.argv[1], int(sys.argv[2]) - 1, sys.argv[3], sys.argv[4], sys.argv[5]
out = []
for line in open(src).read().splitlines():
    f = line.split("\t")
    if f[0] == t:
        v = f[c]
        f[c] = eval(e)
    out.append("\t".join(f))
open(dst, "w").write("\n".join(out) + "\n")' "$1" "$2" "$3" "$L" "$T/l.txt"
}

run 0 "$L"
has "check_cmake_layers: .* targets, ok" || cat "$T/out"

# pipeline without sweep (ALLOWED lets it include sweep: the build must give it)
edit kj_pipeline 3 '";".join(x for x in v.split(";") if x != "kj_sweep")'
run 1 "$T/l.txt"
has "^kj_pipeline (src/pipeline): does not link sweep, which ALLOWED lets it include$"
# store linking report: an upward link
edit kj_store 3 'v + ";kj_report"'
run 1 "$T/l.txt"
has "^kj_store (src/store): links report, which ALLOWED does not let it include$"
# store seeing analyze's folder through an include directory of its own
edit kj_store 4 'v + ";'"$SRC"'/src/analyze"'
run 1 "$T/l.txt"
has "^kj_store (src/store): include directory src/analyze is not its own folder$"
# a floor without a target
grep -v "^kj_energy	" "$L" >"$T/l.txt"
run 1 "$T/l.txt"
has "^src/energy: no target of the build records it"
has "FAILED"

# a worker's program linking its folder's library is judged by that library's links
printf 'kj_%s\t%s\t-\t-\n' common common store store energy energy analyze analyze sweep sweep \
	pipeline pipeline predict predict replay replay run run report report trace trace >"$T/w.txt"
printf 'kjoule\tcli\tkj_common;kj_store;kj_energy;kj_analyze;kj_sweep;kj_pipeline;kj_predict;kj_replay;kj_run;kj_report\t-\n' >>"$T/w.txt"
printf 'harness\tgpu\tkj_common;kj_energy\t-\n' >>"$T/w.txt"
printf 'pipegpu\tpipeline/worker\tharness;kj_common;kj_store;kj_energy;kj_analyze;kj_sweep;kj_pipeline\t-\n' >>"$T/w.txt"
printf 'pipe-worker\tpipeline/worker\tpipegpu\t-\n' >>"$T/w.txt"
python3 - "$T/w.txt" "$SRC/scripts" <<'EOF'
import sys
sys.path.insert(0, sys.argv[2])
from check_layers import ALLOWED
lines = open(sys.argv[1]).read().splitlines()
out = []
for l in lines:
    t, f, links, incs = l.split("\t")
    if t.startswith("kj_") and links == "-" and ALLOWED[f]:
        links = ";".join("kj_" + x for x in ALLOWED[f])
    out.append("\t".join((t, f, links, incs)))
open(sys.argv[1], "w").write("\n".join(out) + "\n")
EOF
run 0 "$T/w.txt"
has "ok$"
# a worker's library linking another worker's target (what two workers share lives in gpu)
printf 'attn\tsweep/worker\tkj_common;kj_store;kj_energy;kj_analyze;kj_sweep;harness\t-\n' >>"$T/w.txt"
sed 's/^pipegpu\tpipeline\/worker\tharness;/pipegpu\tpipeline\/worker\tattn;harness;/' "$T/w.txt" >"$T/x.txt"
run 1 "$T/x.txt"
has "^pipegpu (src/pipeline/worker): links sweep/worker, which ALLOWED does not let it include$"
# the harness reaching above its floor
sed 's/^harness\tgpu\tkj_common;kj_energy/harness\tgpu\tkj_common;kj_energy;kj_store/' "$T/w.txt" >"$T/x.txt"
run 1 "$T/x.txt"
has "^harness (src/gpu): links store, which ALLOWED does not let it include$"
# a build without CUDA has no harness, and needs none (CUDA_ONLY of check_layers.py)
grep -v "^harness	\|^pipegpu	\|^pipe-worker	\|^attn	" "$T/w.txt" >"$T/x.txt"
run 0 "$T/x.txt"
lacks "src/gpu"
sed -i 's/^pipegpu\t\(.*\);kj_pipeline\t/pipegpu\t\1\t/' "$T/w.txt"
run 1 "$T/w.txt"
has "^pipe-worker (src/pipeline/worker): does not link pipeline"
# the injection library: only the headers of common ALLOWED names, through their own target
printf 'icommon\tcommon:kj_capture_spec.h,kj_map.h\t-\t-\ninject\ttrace/inject\tkj_trace;icommon\t-\n' >>"$T/w.txt"
sed -i 's/^pipegpu\t\(.*\)\t-$/pipegpu\t\1;kj_pipeline\t-/' "$T/w.txt"
run 0 "$T/w.txt"
has "ok$"
sed -i 's/^icommon\tcommon:kj_capture_spec.h,kj_map.h/icommon\tcommon:kj_error.h,kj_map.h/' "$T/w.txt"
run 1 "$T/w.txt"
has "^inject (src/trace/inject): does not link common:kj_capture_spec.h,kj_map.h"
has "^inject (src/trace/inject): links common:kj_error.h,kj_map.h, which ALLOWED does not"
finish
