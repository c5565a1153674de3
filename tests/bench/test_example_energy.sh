# examples/nvml_energy.py: the examples' NVML energy per call is a figure or null with a reason,
# never a silent 0 (a loop shorter than the counter's update period reads no advance).
set -u
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
python3 - "$SRC/examples" <<'P' || fail "per_call"
import sys
sys.path.insert(0, sys.argv[1])
from nvml_energy import per_call
e, why = per_call(5000, 5000, 0.03, 30)          # 30 short steps: the counter did not move
assert e is None and "too short" in why, (e, why)
e, why = per_call(5000, 5100, 0.2, 30)           # moved once in 0.2 s: one update is no figure
assert e is None and why, (e, why)
e, why = per_call(1000, 201000, 2.0, 1000)       # 200 J over 2 s, 1000 calls
assert why is None and abs(e - 0.2) < 1e-12, (e, why)
e, why = per_call(None, None, 2.0, 10, False)
assert e is None and "NVML" in why, (e, why)
P
# every example that reads NVML's counter reports through it
for f in "$SRC"/examples/*.py; do
	grep -q "nvmlDeviceGetTotalEnergyConsumption" "$f" || continue
	case "$f" in */nvml_energy.py) continue ;; esac
	grep -q "per_call(" "$f" || fail "$(basename "$f") reads NVML energy without nvml_energy.per_call"
done
finish
