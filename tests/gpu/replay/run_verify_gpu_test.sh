#!/usr/bin/env bash
# GPU test of `kjoule run --snapshot` + `kjoule replay --verify`: trace verify_target with buffer
# snapshots, replay every kernel once on the saved inputs, and require bit-identical outputs.
# usage: run_verify_gpu_test.sh KJOULE VERIFY_TARGET WORKDIR — exit 77 where no GPU is present.
set -u
kj=$1 target=$2 dir=$3
if ! nvidia-smi -L >/dev/null 2>&1; then echo "no GPU: skipped"; exit 77; fi
db=$dir/verify.kjdb
"$kj" run --force --snapshot=1024 -o "$db" -- "$target" || { echo "FAIL: traced run exited $?"; exit 1; }
"$kj" replay "$db" --verify --runs 5 --warmup 1 --json >"$dir/verify.json" 2>"$dir/verify.err" ||
	{ echo "FAIL: kjoule replay --verify exited $?"; cat "$dir/verify.err"; exit 1; }
python3 - "$db" "$dir/verify.json" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1]); doc = json.load(open(sys.argv[2]))
q = lambda s: db.execute(s).fetchone()[0]
bad = 0
def check(cond, what):
    global bad
    print(("ok   " if cond else "FAIL ") + what)
    bad += not cond
check(q("SELECT count(*) FROM snapshot WHERE phase='before'") > 0 and q("SELECT count(*) FROM snapshot WHERE phase='after'") > 0,
      "snapshots before and after launches")
check(q("SELECT count(*) FROM memcpy WHERE kind='DtoH'") == 1,
      "the snapshot's own copies are not the program's (one DtoH copy left: %d)" % q("SELECT count(*) FROM memcpy WHERE kind='DtoH'"))
want = ["kj_axpy_struct", "kj_iter_add", "kj_cluster_scale", "kj_big_smem", "kj_async_scale", "kj_templ", "kj_tma_copy", "gemm"]
for w in want:
    ks = [k for k in doc["kernels"] if w in (k["mangled"] or "").lower() or w in k["name"].lower()]
    v = ks[0].get("verify") if ks else None
    check(bool(ks) and all(k.get("verify") and k["verify"]["result"] == "identical" and k["verify"]["bytes"] > 0 for k in ks),
          f"{w}: replayed output bit-identical to the traced one ({[(k['status'], k.get('verify')) for k in ks]})")
check(q("SELECT count(*) FROM replay_verify WHERE result='identical'") >= len(want), "results stored in replay_verify")
sys.exit(1 if bad else 0)
PY
