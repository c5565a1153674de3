#!/usr/bin/env bash
# GPU test of `kjoule replay`: record the test kernels, replay them (original addresses, then
# forced relocation), check statuses, timings and the clear messages. Exit 77 without a GPU.
# usage: run_replay_gpu_test.sh KJ_REPLAY_RECORD CUBIN KJOULE WORKDIR
set -u
rec=$1 cubin=$2 kjoule=$3 dir=$4
db=$dir/replay_test.kjdb
# no driver, no GPU: the recorder (linked to libcuda) cannot even load
if ! nvidia-smi -L >/dev/null 2>&1; then echo "no GPU: skipped"; exit 77; fi
"$rec" "$db" "$cubin"
rc=$?
[ $rc -eq 77 ] && exit 77
[ $rc -ne 0 ] && { echo "FAIL: recording the test run (exit $rc)"; exit 1; }
fail=0
"$kjoule" replay "$db" --runs 30 --warmup 3 --json >"$dir/replay.json" 2>"$dir/replay.err" || {
	echo "FAIL: kjoule replay exited $?"; cat "$dir/replay.err"; exit 1; }
"$kjoule" replay "$db" --runs 10 --warmup 2 --relocate --json >"$dir/replay_reloc.json" \
	2>"$dir/replay_reloc.err" || { echo "FAIL: kjoule replay --relocate exited $?"; cat "$dir/replay_reloc.err"; exit 1; }
python3 - "$dir/replay.json" "$dir/replay_reloc.json" <<'PY' || fail=1
import json, sys
exact = json.load(open(sys.argv[1])); reloc = json.load(open(sys.argv[2]))
def by(doc): return {k["mangled"]: k for k in doc["kernels"]}
e, r = by(exact), by(reloc)
bad = 0
def check(cond, what):
    global bad
    print(("ok   " if cond else "FAIL ") + what)
    bad += not cond
runnable = ["kj_axpy_struct", "kj_iter_add", "kj_cluster_scale", "kj_big_smem", "kj_async_scale", "kj_tma_copy"]
runnable += [m for m in e if "kj_templ" in m]
for m in runnable:
    k = e.get(m)
    check(k is not None and k["status"] in ("ok", "relocated") and k["warm"] and k["cold"] and k["warm"]["median_ns"] > 0
          and k["cold"]["median_ns"] > 0, f"{m}: exact replay, warm and cold timed ({k and k['status']} {k and k['error']})")
for m in runnable:
    k = r.get(m)
    want = ("relocated", "failed") if m == "kj_tma_copy" else ("relocated",)
    check(k is not None and k["status"] in want, f"{m}: --relocate gives {want} ({k and k['status']}: {k and k['error']})")
check(e["kj_fault"]["status"] == "failed" and "ILLEGAL" in (e["kj_fault"]["error"] or "").upper(),
      f"kj_fault: failed with its CUDA error ({e['kj_fault']['error']})")
check(e["kj_stripped_kernel"]["status"] == "skipped" and "stripped" in e["kj_stripped_kernel"]["error"],
      "stripped module named")
check(e["kj_missing_kernel"]["status"] == "skipped" and "unknown function" in e["kj_missing_kernel"]["error"],
      "unknown function named")
c = exact["coverage"]
check(c["unique_exact"] + c["unique_relocated"] == len(runnable) and c["unique_not_replayed"] == 3, f"coverage {c}")
print(f"original addresses re-created for {c['unique_exact']} of {len(runnable)} kernels (the rest relocated)")
print("%-40s %10s %10s %10s %8s" % ("kernel", "traced_us", "warm_us", "cold_us", "timer"))
for k in exact["kernels"]:
    if k["warm"]:
        print("%-40s %10.2f %10.2f %10.2f %8s" % (k["mangled"][:40], k["traced_ns"] / max(k["launches"], 1) / 1e3,
              k["warm"]["median_ns"] / 1e3, k["cold"]["median_ns"] / 1e3, k["timer"]))
sys.exit(1 if bad else 0)
PY
# clear messages: wrong architecture, no parameters
cp "$db" "$dir/arch.kjdb"
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('UPDATE device SET cc_major=7, cc_minor=5'); c.commit()" "$dir/arch.kjdb"
if "$kjoule" replay "$dir/arch.kjdb" --runs 2 >/dev/null 2>"$dir/arch.err" || ! grep -q "sm_75" "$dir/arch.err"; then
	echo "FAIL: architecture mismatch not refused clearly"; cat "$dir/arch.err"; fail=1
else
	echo "ok   architecture mismatch: $(head -c 160 "$dir/arch.err")"
fi
cp "$db" "$dir/noparams.kjdb"
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('DELETE FROM launch_params'); c.commit()" "$dir/noparams.kjdb"
if "$kjoule" replay "$dir/noparams.kjdb" 2>"$dir/noparams.err" || ! grep -q "without --no-params" "$dir/noparams.err"; then
	echo "FAIL: --no-params run not explained"; fail=1
else
	echo "ok   no parameters: $(head -c 160 "$dir/noparams.err")"
fi
# one captured iteration: eager and as one CUDA graph
if "$kjoule" replay "$db" --sequence --graph --runs 20 --warmup 3 --json >"$dir/seq.json" 2>"$dir/seq.err"; then
	python3 - "$dir/seq.json" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
m = {x["mode"]: x for x in d["modes"]}
ok = all(m.get(k) and m[k]["status"] in ("ok", "relocated") and m[k]["median_ns"] > 0 and m[k]["launches"] == 5 for k in ("eager", "graph"))
print(("ok   " if ok else "FAIL ") + "sequence replay: " + ", ".join(
    f"{k} {v['status']} {v['median_ns']/1e3:.1f} us {v.get('error') or ''}" for k, v in m.items()))
sys.exit(0 if ok else 1)
PY
else
	echo "FAIL: kjoule replay --sequence exited $?"; cat "$dir/seq.err"; fail=1
fi
# results stored
n=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM replay_kernel').fetchone()[0])" "$db")
[ "$n" -ge 14 ] && echo "ok   $n replay_kernel rows stored" || { echo "FAIL: $n replay_kernel rows"; fail=1; }
exit $fail
