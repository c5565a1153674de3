# The "how to add" guides name the files a change touches: every repository path a guide names in
# backquotes exists, and every symbol it says lives in a file is there (docs/sweep.md's "Adding an
# operator", docs/architecture.md's "Adding a command" and "Adding a pipeline phase"). A guide that drifts from the code fails here.
set -u
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
python3 - "$SRC" <<'P' || fail "a guide names a file or symbol the tree does not have"
import os, re, sys
root = sys.argv[1]
guides = [("docs/sweep.md", "## Adding an operator", "## "), ("docs/architecture.md", "## Adding a command", "## "),
          ("docs/architecture.md", "## Adding a pipeline phase", "## ")]
bad = []
for doc, start, stop in guides:
    text = open(os.path.join(root, doc)).read()
    i = text.find(start)
    if i < 0:
        bad.append(f"{doc}: no section '{start}'")
        continue
    j = text.find("\n" + stop, i + len(start))
    sec = text[i:j if j > 0 else len(text)]
    paths = set(re.findall(r"`((?:src|tests|configs|docs|scripts)/[A-Za-z0-9_./-]+\.(?:c|h|cu|cuh|sh|py|md|txt))`", sec))
    if not paths:
        bad.append(f"{doc}: '{start}' names no file")
    for p in sorted(paths):
        if "swiglu" in p or "<name>" in p or "NAME" in p:
            continue  # the example's own new files
        if not os.path.exists(os.path.join(root, p)):
            bad.append(f"{doc}: '{start}' names {p}, which does not exist")
    # symbols the sweep guide says live in a file
    for sym, path in (("g_ops", "src/sweep/worker/kj_sweep_worker.c"), ("g_small", "src/sweep/worker/kj_sweep_worker.c"),
                      ("sw_op_res_add", "src/sweep/worker/sweep_worker.h"), ("kj_sweep_op_count(), 28", "tests/unit/test_sweep.c")):
        if doc == "docs/sweep.md" and sym.split("(")[0] in sec and sym not in open(os.path.join(root, path)).read():
            bad.append(f"{doc}: {sym} is not in {path}")
    # symbols the pipeline phase guide says live in a file
    for sym, path in (("enum kj_phase_kind", "src/pipeline/kj_pipeline.h"), ("kind_names[]", "src/pipeline/kj_pipeline_phase.c"),
                      ("kj_phase_check(", "src/pipeline/kj_pipeline_phase.c"), ("kj_phase_cost(", "src/pipeline/kj_pipeline_phase.c"),
                      ("unknown layer type", "src/pipeline/kj_pipeline_yaml.c"), ("kj_gpu_fill(", "src/gpu/kj_gpu_fill.h"),
                      ("simple_setup(", "src/pipeline/worker/worker_ops.c"), ("simple_capture(", "src/pipeline/worker/worker_ops.c"),
                      ("kjw_conv_ops", "src/pipeline/worker/worker_ops.h"), ("switch", "src/pipeline/worker/kj_pipeline_worker.c")):
        if start == "## Adding a pipeline phase" and sym.rstrip("(") in sec and sym not in open(os.path.join(root, path)).read():
            bad.append(f"{doc}: {sym} is not in {path}")
print("\n".join(bad) or "ok")
sys.exit(1 if bad else 0)
P
finish
