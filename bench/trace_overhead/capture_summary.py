#!/usr/bin/env python3
"""scripts/gpu/capture.sh's result: capture_overhead.json from the files its parts left in OUT (the
GPU test's log, the turns and pairs results) and the 10,000-step databases in
TMP, with the device, date and command. Run as: capture_summary.py OUT TMP TEST_RC (TEST_RC -1: the
GPU test was not run). With CAP_KEEP naming an earlier capture_overhead.json, every part not
measured in this call (absent, or holding only an error or nothing) is taken from it, and the
result names those parts under kept_from_previous. Written aside and renamed into place; prints a
short table last."""
import datetime
import json
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_pairs import gpu_name, write_json  # noqa: E402  (one copy)

out, tmp, test_rc = sys.argv[1], sys.argv[2], int(sys.argv[3])
def load(name):
    try:
        return json.load(open(os.path.join(out, name)))
    except Exception as e:
        return {"error": str(e)}
dev = (gpu_name() or "unknown").splitlines()[0]
limits = " ".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("CAP_"))
res = {"benchmark": "capture_overhead", "device": dev,
       "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
       "command": f"{limits} bash scripts/gpu/capture.sh".strip(),
       "what": "kjoule run --capture: cost outside the window and trace size (scripts/gpu/capture.sh)",
       "gpu_test_rc": test_rc if test_rc >= 0 else None, "steps10k": {}}
try:  # the GPU test's checks, one line each ("ok ..." or "FAIL ...")
    res["gpu_test_checks"] = [l.rstrip("\n") for l in open(os.path.join(out, "capture_test.log"))
                              if l.startswith(("ok ", "FAIL "))] if test_rc >= 0 else None
except OSError:
    res["gpu_test_checks"] = None
TURNS = (("turns_gpt2m", "capture_turns_gpt2m.json"), ("turns_jax_step", "capture_turns_jax.json"),
         ("turns_decode", "capture_turns_decode.json"))
for key, name in TURNS:
    tj = load(name)
    res[key] = {"summary": tj.get("summary", tj.get("ratios", {})), "device": tj.get("device"),
                "rounds": tj.get("rounds_done", tj.get("rounds")), "copies": tj.get("copies"), "error": tj.get("error"),
                "ratio_per_round": tj.get("ratio_per_round")}  # raw: pairs of contestants (turns.paired)
for k in ("jax", "decode"):
    p = load(f"capture_pairs_{k}.json")
    res[f"pairs_{k}"] = {kk: p.get(kk) for kk in ("workload", "device", "metric", "rounds", "failed_runs", "ratios", "error")}
for mode in ("capture", "full"):
    db = os.path.join(tmp, f"steps_{mode}.kjdb")
    try:
        c = sqlite3.connect(db)
        kernels = c.execute("SELECT count(*) FROM kernel").fetchone()[0]
        meta = dict(c.execute("SELECT key, value FROM meta WHERE key LIKE 'capture_%'").fetchall())
        marks = c.execute("SELECT count(*) FROM iteration_mark").fetchone()[0] if mode == "capture" else None
        size = os.path.getsize(db)
        res["steps10k"][mode] = {"db_bytes": size, "kernels": kernels, "bytes_per_launch": size / kernels if kernels else None,
                                 "iteration_marks": marks, "meta": meta}
    except Exception as e:
        res["steps10k"][mode] = {"error": str(e)}
# compare, replay and report on the captured database: exit code and seconds each
try:
    res["steps10k"]["tools_on_capture"] = {l.split()[0]: {"rc": int(l.split()[1]), "seconds": float(l.split()[2])}
                                           for l in open(os.path.join(tmp, "steps_tools.txt")) if l.strip()}
except Exception as e:
    res["steps10k"]["tools_on_capture"] = {"error": str(e)}
# CAP_KEEP (a previous capture_overhead.json): the parts not measured in this call are kept from it
def unmeasured(v):
    if v is None or v == {} or v == []:
        return True
    if isinstance(v, dict):
        if v.get("error"):
            return True
        return all(unmeasured(x) for k, x in v.items() if k not in ("device", "rounds", "program", "capture"))
    return False
keep = os.environ.get("CAP_KEEP")
if keep and os.path.exists(keep):
    prev = json.load(open(keep))
    kept = []
    for k, v in prev.items():
        if k in ("date", "command", "device", "benchmark", "kept_from_previous", "note") or k.startswith("gpu_test"):
            continue
        if k not in res or unmeasured(res[k]):
            res[k] = v
            kept.append(k)
    for k in ("capture", "full"):  # the 10,000-step databases, as a pair
        if unmeasured(res["steps10k"].get(k)) and k in prev.get("steps10k", {}):
            res["steps10k"] = prev["steps10k"]
            kept.append("steps10k")
            break
    if test_rc < 0:  # the GPU test not run in this call
        res["gpu_test_rc"] = prev.get("gpu_test_rc")
        res["gpu_test_checks"] = prev.get("gpu_test_checks")
        res["gpu_test_rerun"] = prev.get("gpu_test_rerun")
        kept.append("gpu_test")
    res["kept_from_previous"] = {"file": keep, "date": prev.get("date"), "parts": sorted(set(kept))}
write_json(os.path.join(out, "capture_overhead.json"), res)
print("\n== capture: summary")
print(f"{'measure':44s} value")
print(f"{'GPU test exit code':44s} {test_rc}")
def ratio(d, k):
    v = (d.get("ratios") or {}).get(k, {}) if isinstance(d, dict) else {}
    return v.get("median") if isinstance(v, dict) else None
for k in ("jax", "decode"):
    d = res[f"pairs_{k}"]
    print(f"{k + ': capture (window never open) / plain':44s} {ratio(d, 'capture_late')}  rounds {d.get('rounds')}")
    print(f"{k + ': full trace / plain':44s} {ratio(d, 'full_trace')}")
for key, _ in TURNS:
    sm = res[key].get("summary") or {}
    print(f"{key + ' (ratio to plain)':44s} " + " ".join(f"{k} {v.get('ratio_to_plain'):.3f}" for k, v in sm.items()
                                                         if isinstance(v, dict) and isinstance(v.get('ratio_to_plain'), (int, float)))
          + f"  rounds {res[key].get('rounds')}")
for mode in ("capture", "full"):
    s = res["steps10k"].get(mode, {})
    print(f"{'10k steps ' + mode + ': DB bytes, kernels, B/launch':44s} {s.get('db_bytes')} {s.get('kernels')} "
          f"{s.get('bytes_per_launch')}")
print(f"{'10k steps captured: compare/replay/report':44s} {json.dumps(res['steps10k'].get('tools_on_capture'))}")
