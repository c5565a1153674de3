#!/usr/bin/env bash
# GPU: a 2-rank tensor-parallel MLP (examples/tp_mlp.py) under `kjoule run -- torchrun`, then
# compare's ranks (docs/multi-gpu.md):
#  1. the run holds the launcher and two ranks, on two devices, each rank with power samples
#  2. compare finds the 'step' iterations per rank (not the whole run), and its job section has
#     two ranks, each on its own GPU, with iterations, NCCL time, busy <= wall, an energy figure
#  3. the job's time is the slowest rank's, its energy the sum of the two GPUs'
#  4. NCCL's calls recorded (libkjoule_nccl.so) for both ranks: each rank's bytes per iteration are
#     tp_mlp.py's all_reduces (one of its (batch, hidden) bf16 output per layer), its bus bandwidth
#     finite and > 0
# usage: run_tp_test.sh KJOULE SRC_DIR — exit 77 without 2 GPUs or PyTorch.
# KJ_TP_KEEP=DIR keeps the run and compare's outputs there.
set -u
kj=$1 src=$2
. "$(dirname "$0")/../lib.sh"
need_two_gpus_torch
keep=${KJ_TP_KEEP:-$dir}
run=$keep/tp.kjdb
hidden=2048 layers=4 batch=256
# each step all_reduces one (batch, hidden) bfloat16 tensor per layer (examples/tp_mlp.py)
want_bytes=$((layers * batch * hidden * 2))
tp_run "$kj" "$src" "$run" "$keep/run.log" --steps 20 --hidden $hidden --layers $layers --batch $batch
rc=$?
check "kjoule run exits 0 (got $rc; $keep/run.log)" '[ $rc = 0 ]'
check "two processes with kernels" '[ "$(q "$run" "SELECT count(DISTINCT pid) FROM kernel")" = 2 ]'
check "kernels on two devices" '[ "$(q "$run" "SELECT count(DISTINCT device_id) FROM kernel")" = 2 ]'
check "power samples of both devices" '[ "$(q "$run" "SELECT count(*) FROM (SELECT device_id FROM power_sample WHERE device_id IN (SELECT device_id FROM kernel) GROUP BY device_id)")" = 2 ]'
check "NCCL kernels traced" '[ "$(q "$run" "SELECT count(*) FROM kernel k JOIN kernel_name n ON n.id = k.name_id WHERE n.mangled LIKE \"%nccl%Kernel%\"")" -gt 0 ]'
tp_compare "$kj" "$run" "$keep/compare"
py() { compare_py "$keep/compare.json" "$1"; }
check "iterations found per rank ('step', not the whole run)" '[ "$(py "print(j[\"iterations\"][\"region\"])")" = step ]'
check "job section with two ranks" '[ "$(py "print(len(r))")" = 2 ]'
check "ranks on different GPUs" '[ "$(py "print(len({x[\"device_id\"] for x in r}))")" = 2 ]'
check "each rank measured iterations of 'step'" '[ "$(py "print(all(x[\"region\"] == \"step\" and x[\"measured\"] >= 10 for x in r))")" = True ]'
check "each rank has NCCL time" '[ "$(py "print(all(x[\"nccl_us\"] > 0 and 0 <= x[\"nccl_exposed_us\"] <= x[\"nccl_us\"] for x in r))")" = True ]'
check "busy <= wall per rank" '[ "$(py "print(all(0 < x[\"busy_us\"] <= x[\"wall_us\"] * 1.001 for x in r))")" = True ]'
check "energy per GPU" '[ "$(py "print(all(x[\"energy_mj\"] is not None and x[\"energy_mj\"] > 0 for x in r))")" = True ]'
check "job time = slowest rank" '[ "$(py "print(abs(job[\"time_per_iteration_us\"] - max(x[\"wall_us\"] for x in r)) < 1e-6)")" = True ]'
# (each figure is rounded to 0.001 mJ in the JSON: the sum of the rounded ones may differ by that per rank)
check "job energy = sum of GPUs" '[ "$(py "print(abs(job[\"energy_per_iteration_mj\"] - sum(x[\"energy_mj\"] for x in r)) <= 0.0005 * (len(r) + 1))")" = True ]'
check "text names the ranks" 'grep -q "rank 1 (GPU" "$keep/compare.txt"'
check "NCCL calls were recorded (meta nccl_calls on)" '[ "$(q "$run" "SELECT value FROM meta WHERE key = \"nccl_calls\"")" = on ]'
check "nccl_call rows for both ranks" '[ "$(q "$run" "SELECT count(DISTINCT pid) FROM nccl_call WHERE pid IN (SELECT pid FROM kernel)")" = 2 ]'
check "each rank's all_reduces are bf16 (batch x hidden) on 2 ranks" '[ "$(q "$run" "SELECT count(*) FROM nccl_call WHERE op = \"all_reduce\" AND count = $((batch * hidden)) AND datatype = 9 AND bytes = $((batch * hidden * 2)) AND nranks = 2")" -ge $((2 * 19 * layers)) ]'
check "NCCL bytes per iteration = $want_bytes per rank" '[ "$(py "print(all(x[\"nccl_bytes_per_iteration\"] == $want_bytes for x in r))")" = True ]'
check "bus bandwidth finite and > 0 per rank" '[ "$(py "import math; print(all(isinstance(x[\"nccl_bus_bandwidth_gbps\"], float) and math.isfinite(x[\"nccl_bus_bandwidth_gbps\"]) and x[\"nccl_bus_bandwidth_gbps\"] > 0 for x in r))")" = True ]'
check "ops per iteration: all_reduce x$layers" '[ "$(py "print(all(x[\"nccl_ops\"] == \"all_reduce \u00d7$layers\" for x in r))")" = True ]'
sed -n '/^Ranks:/,$p' "$keep/compare.txt"
exit 0
