# bench/trace_overhead/capture_summary.py (scripts/gpu/capture.sh's result) on stand-in part files:
# the GPU test's checks are read from its log; a part this call measured is its own; with CAP_KEEP,
# a part this call did not measure (absent, or an error) comes from the earlier result and is named
# under kept_from_previous, the GPU test's rows among them only when the test was not run; without
# CAP_KEEP nothing is kept.
set -u
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
S="$SRC/bench/trace_overhead/capture_summary.py"
mkdir -p "$T/o1" "$T/tmp" "$T/o2"
python3 - "$T" <<'P' || fail "cannot write the stand-ins"
import json, sys
t = sys.argv[1]
turns = {"summary": {"plain": {"ratio_to_plain": 1.0}, "kjoule_default": {"ratio_to_plain": 1.18},
                     "kjoule_capture_late": {"ratio_to_plain": 1.01}}, "rounds_done": 300, "device": "stand-in"}
json.dump(turns, open(f"{t}/o1/capture_turns_gpt2m.json", "w"))
open(f"{t}/o1/capture_test.log", "w").write("ok   nvtx: a\nFAIL graph: b\nnoise\nok   never: c\n")
prev = {"benchmark": "capture_overhead", "date": "2026-01-01", "device": "old",
        "gpu_test_rc": 0, "gpu_test_checks": ["ok   old check"],
        "turns_gpt2m": {"summary": {"kjoule_default": {"ratio_to_plain": 9.9}}},
        "turns_jax_step": {"summary": {"kjoule_default": {"ratio_to_plain": 1.3}}, "rounds": 200},
        "steps10k": {"capture": {"db_bytes": 1, "kernels": 80}, "full": {"db_bytes": 2, "kernels": 40000}}}
json.dump(prev, open(f"{t}/prev.json", "w"))
P
# the test ran (rc 1), gpt2m turns measured; JAX turns, pairs, steps and energy not
CAP_KEEP="$T/prev.json" expect 0 python3 "$S" "$T/o1" "$T/tmp" 1
python3 - "$T/o1/capture_overhead.json" <<'P' || fail "kept parts wrong: $(head -c 900 "$T/o1/capture_overhead.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["gpu_test_rc"] == 1 and r["gpu_test_checks"] == ["ok   nvtx: a", "FAIL graph: b", "ok   never: c"], r["gpu_test_checks"]
assert r["turns_gpt2m"]["summary"]["kjoule_default"]["ratio_to_plain"] == 1.18, r["turns_gpt2m"]
assert r["turns_jax_step"]["rounds"] == 200, r["turns_jax_step"]
assert r["steps10k"]["full"]["kernels"] == 40000, r["steps10k"]
k = r["kept_from_previous"]["parts"]
assert "turns_jax_step" in k and "steps10k" in k and "turns_gpt2m" not in k and "gpu_test" not in k, k
assert r["date"] != "2026-01-01" and r["benchmark"] == "capture_overhead" and r["command"].endswith("capture.sh"), r
P
# the test not run: its rows kept from the earlier result
CAP_KEEP="$T/prev.json" expect 0 python3 "$S" "$T/o2" "$T/tmp" -1
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["gpu_test_checks"] == ["ok   old check"] and "gpu_test" in r["kept_from_previous"]["parts"], r' \
	"$T/o2/capture_overhead.json" || fail "the GPU test's rows not kept"
# without CAP_KEEP: nothing kept, the unmeasured parts say so
rm -f "$T/o2/capture_overhead.json"
expect 0 python3 "$S" "$T/o2" "$T/tmp" -1
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert "kept_from_previous" not in r and r["gpu_test_checks"] is None and r["gpu_test_rc"] is None and r["turns_jax_step"]["error"], r' \
	"$T/o2/capture_overhead.json" || fail "kept without CAP_KEEP"
finish
