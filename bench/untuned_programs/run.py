#!/usr/bin/env python3
"""kjoule on programs it was never tuned for, end to end, as a user runs it: `kjoule run`,
`kjoule replay --energy` (defaults), `kjoule compare --json`. One JSON result file with the device,
date, command and raw numbers: per program its iteration, replay coverage and time, the replay
sums against in situ, explained fractions, energy measured against predicted (and whether compare
judged it), the kernels that did not replay with their reasons, and any inf or NaN in compare.

usage (device): python3 bench/untuned_programs/run.py --kjoule KJ --programs triton hf_decode [--spine] -o OUT.json
--spine also runs info, kernels, timeline (Chrome and ASCII), api and report on each run, with
their exit statuses in the result.
"""
import argparse
import datetime
import json
import os
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "gpu"))
from graphs_bench import bad_numbers, timed  # noqa: E402  (one copy each)

PROGRAMS = {
    # Triton kernels of its own (a tiled matmul with ReLU and a row softmax): 1500 steps, 0.3 s
    "triton": ["python3", "examples/triton_ops.py", "--iters", "1500"],
    # a Llama-shaped model answering requests through transformers' generate(), static cache
    # (compiled: CUDA graphs), saving its buffers so whole iterations replay on the program's data
    "hf_decode": ["python3", "examples/hf_decode.py", "--requests", "6", "--warmup", "2"],
    # FP8 GEMMs (torch._scaled_mm, cuBLASLt), FlexAttention (compiled Triton, forward
    # and backward), max-autotune (Triton GEMM templates benchmarked while compiling, CUDA graphs)
    # and two streams whose kernels overlap
    # (loops of 1-2 s: the energy counter updates every ~100 ms)
    "fp8_mlp": ["python3", "examples/fp8_mlp.py", "--iters", "2000"],
    "flex_attention": ["python3", "examples/flex_attention.py", "--iters", "2000"],
    "flex_attention_snapshot": ["python3", "examples/flex_attention.py", "--iters", "2000"],
    "compile_autotune": ["python3", "examples/compile_autotune.py", "--iters", "6000"],
    "two_streams": ["python3", "examples/two_streams.py", "--iters", "3000"],
    # training steps (a jitted JAX step with value_and_grad and Adam, donated state; a
    # torch.compile step, Inductor forward and backward) and a CUDA graph with parallel branches
    "jax_train": ["python3", "examples/jax_train.py", "--steps", "300"],
    "compile_train": ["python3", "examples/compile_train.py", "--steps", "150"],
    "graph_branches": ["python3", "examples/graph_branches.py", "--iters", "1500"],
    # a ResNet-50 training step (cuDNN convolution backward, cudnn.benchmark) and a whole training
    # step captured in one CUDA graph (forward, backward, capturable Adam)
    "cnn_train": ["python3", "examples/cnn_train.py", "--steps", "60"],
    "graph_train": ["python3", "examples/graph_train.py", "--steps", "300"],
    # the issue's own programs again (for energy with cold L2), long enough for the energy
    # counter to judge: a GPT-2-medium-shaped forward in torch.cuda.graph, eager BLOOM-560M, the
    # jitted JAX transformer block, a cuDNN ResNet-50 and a CNN with SDPA
    "gpt_graph": ["python3", "examples/gpt_graph.py", "--mode", "graph", "--iters", "1500"],
    "bloom": ["python3", "examples/bloom560m.py", "--iters", "400"],
    "jax_step": ["python3", "examples/jax_step.py", "--steps", "3000"],
    "resnet": ["python3", "examples/resnet_cudnn.py", "--iters", "700"],
    "convattn": ["python3", "examples/convattn.py", "--iters", "1000"],
    # a hand-written CUDA program (examples/cuda_heat: two streams joined by events, a
    # kernel over 48 KiB of dynamic shared memory, a cooperative launch, a kernel compiled by NVRTC
    # and launched through the driver API, stream-ordered allocation, host functions and syncs),
    # eager and captured in a CUDA graph; {build} is the folder of --kjoule
    "cuda_heat": ["{build}/examples/cuda_heat/cuda_heat", "--steps", "3000"],
    "cuda_heat_graph": ["{build}/examples/cuda_heat/cuda_heat", "--steps", "3000", "--graph"],
}
# FlexAttention's kernels read block lists: on stand-in data they do other work (compare says so);
# with the program's buffers saved they replay as they ran
RUN_FLAGS = {"hf_decode": ["--snapshot-graphs"], "flex_attention_snapshot": ["--snapshot"],
             "jax_step": ["--iteration-range", "step"]}
# its 678 unique kernels take longer than one bounded device run allows with defaults: a user's budget
REPLAY_FLAGS = {"hf_decode": ["--budget", "300"], "jax_train": ["--budget", "140"]}
# --spine: the rest of the commands a user runs on the same database (result key, command,
# arguments), each with its exit status
SPINE = [("info", "info", []), ("kernels", "kernels", ["--top", "25"]),
         ("timeline_chrome", "timeline", ["--format", "chrome", "-o", "{db}.trace.json"]),
         ("timeline_ascii", "timeline", ["--format", "ascii"]), ("api", "api", []), ("report", "report", ["-o", "{db}.html"])]


def compare_anomalies(cj):
    """What must never appear in compare's JSON beyond inf/NaN: a replayed sum more than 3x off the
    in-situ sum, an explained fraction outside [1/3, 3], no kernels per iteration, an energy error
    past 200 %."""
    out = []
    insitu = cj.get("insitu_sum_replayed_us")
    for k in ("replay_sum_warm_us", "replay_sum_cold_us", "replay_sum_sequence_us"):
        v = cj.get(k)
        if v is not None and insitu and not insitu / 3 <= v <= insitu * 3:
            out.append(f"{k} {v:.1f} against in-situ {insitu:.1f}")
    for k in ("explained_fraction", "explained_fraction_sequence"):
        v = cj.get(k)
        if isinstance(v, (int, float)) and not 1 / 3 <= v <= 3:
            out.append(f"{k} = {v}")
    if not cj.get("kernels_per_iteration"):
        out.append(f"kernels_per_iteration = {cj.get('kernels_per_iteration')}")
    e = cj.get("energy_error_pct")
    if isinstance(e, (int, float)) and abs(e) > 200:
        out.append(f"energy_error_pct = {e}")
    return out


def energy_errors(cj):
    """The predicted energy's error with each kernel at its warm, its cold-L2 and the mean of the
    two replayed energies (compare's prediction), idle power over the rest as compare adds it."""
    m, idle = cj.get("energy_measured_j"), cj.get("energy_idle_j")
    out = {}
    for k, key in (("warm", "energy_kernels_warm_j"), ("cold", "energy_kernels_cold_j"), ("mean", "energy_kernels_j")):
        v = cj.get(key)
        out[k] = round(100 * (v + idle - m) / m, 2) if None not in (v, idle, m) and m else None
    return out


def spine(kj, db, logs, name):
    """Exit status of each SPINE command on db (and whether the Chrome trace parses)."""
    rc = {}
    for key, cmd, args in SPINE:
        args = [x.format(db=os.path.join(logs, name)) for x in args]
        rc[key], _ = timed([kj, cmd, db, *args], os.path.join(logs, f"{name}_{key}.log"), 120)
    try:
        json.load(open(os.path.join(logs, name + ".trace.json")))
        rc["chrome_trace_parses"] = True
    except (OSError, ValueError):
        rc["chrome_trace_parses"] = False
    return rc


def last_json_line(log):
    """The program's own summary: the last line of its log that parses as a JSON object."""
    try:
        lines = open(log, errors="replace").read().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                pass
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kjoule", required=True)
    ap.add_argument("--programs", nargs="+", default=list(PROGRAMS))
    ap.add_argument("--logs", default="/tmp/untuned")
    ap.add_argument("--budget", type=float, help="replay --budget for programs without their own")
    ap.add_argument("--spine", action="store_true", help="also info, kernels, timeline, api, report")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    unknown = [n for n in a.programs if n not in PROGRAMS]
    if unknown:
        ap.error(f"unknown programs: {' '.join(unknown)} (known: {' '.join(PROGRAMS)})")
    os.makedirs(a.logs, exist_ok=True)
    dev = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    res = {"benchmark": "untuned_programs", "device": dev,
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
           "command": " ".join(sys.argv), "programs": {}}
    build = os.path.dirname(os.path.abspath(a.kjoule))
    for name in a.programs:
        db = os.path.join(a.logs, name + ".kjdb")
        program = [x.format(build=build) for x in PROGRAMS[name]]
        cmd = [a.kjoule, "run", "--force", *RUN_FLAGS.get(name, []), "-o", db, "--", *program]
        p = {"program": " ".join(program), "run_flags": RUN_FLAGS.get(name, [])}
        p["run_rc"], p["run_s"] = timed(cmd, os.path.join(a.logs, name + "_run.log"), 300)
        p["program_output"] = last_json_line(os.path.join(a.logs, name + "_run.log"))
        p["replay_flags"] = REPLAY_FLAGS.get(name, ["--budget", str(a.budget)] if a.budget else [])
        p["replay_rc"], p["replay_s"] = timed([a.kjoule, "replay", db, "--energy", *p["replay_flags"]],
                                              os.path.join(a.logs, name + "_replay.log"), 420)
        out = subprocess.run([a.kjoule, "compare", db, "--json"], capture_output=True, text=True)
        try:
            cj = json.loads(out.stdout)
        except ValueError:
            cj = {}
        p["compare_rc"] = out.returncode
        p["compare_bad_numbers"] = bad_numbers(cj)
        p["compare_anomalies"] = compare_anomalies(cj)
        if a.spine:
            p["spine_rc"] = spine(a.kjoule, db, a.logs, name)
        keep = ["iterations", "wall_us", "busy_us", "kernels_per_iteration",
                "replay_coverage_warm", "insitu_sum_replayed_us", "replay_sum_warm_us",
                "replay_sum_cold_us", "replay_sum_sequence_us", "replay_sum_isolated_us", "replay_coverage_cold",
                "kernel_overlap_fraction", "explained_fraction_warm", "explained_fraction",
                "explained_fraction_sequence", "energy_measured_j", "energy_measured_basis",
                "energy_measured_too_short", "energy_measured_mean_unc_pct", "energy_predicted_j",
                "energy_error_pct", "energy_error_judgeable", "energy_predicted_sequence_j",
                "energy_error_sequence_pct", "energy_sequence_mode", "energy_sequence_data",
                "sequence_eager_us", "sequence_graph_us", "sequence_topology_us", "energy_standin_share",
                "sequence_kernels_overlapped", "not_replayable_alone", "energy_kernels_j",
                "energy_kernels_warm_j", "energy_kernels_cold_j", "energy_cold_time_coverage",
                "energy_cold_ratio", "energy_idle_j", "energy_kernels_time_coverage"]
        p["compare"] = {k: cj.get(k) for k in keep if k in cj}
        p["energy_errors_pct"] = energy_errors(cj)
        c = sqlite3.connect(db)
        p["unique_kernels"] = c.execute("SELECT count(*) FROM unique_kernel").fetchone()[0]
        p["replay_status"] = dict(c.execute("SELECT status, count(*) FROM replay_kernel WHERE cache = 'warm'"
                                            " GROUP BY status").fetchall())
        p["not_replayed"] = [list(r) for r in c.execute(
            "SELECT r.unique_id, r.status, substr(r.error, 1, 300) FROM replay_kernel r WHERE r.cache = 'warm'"
            " AND r.status NOT IN ('ok', 'relocated') LIMIT 20")]
        p["sequence"] = [list(r) for r in c.execute(
            "SELECT mode, median_ns, energy_mj, data FROM replay_sequence ORDER BY id")]
        res["programs"][name] = p
        with open(a.output, "w") as f:
            json.dump(res, f, indent=1)
    for name, p in res["programs"].items():
        cm = p["compare"]
        print(f"{name:10s} run {p['run_rc']} {p['run_s']}s  replay {p['replay_rc']} {p['replay_s']}s"
              f"  uniques {p['unique_kernels']} status {p['replay_status']}  explained {cm.get('explained_fraction')}"
              f" seq {cm.get('explained_fraction_sequence')}  energy err {cm.get('energy_error_pct')}"
              f" (judged {cm.get('energy_error_judgeable')}; warm/cold/mean {p['energy_errors_pct']},"
              f" cold covers {cm.get('energy_cold_time_coverage')}) seq err {cm.get('energy_error_sequence_pct')}"
              f" bad numbers {len(p['compare_bad_numbers'])} anomalies {p['compare_anomalies']}"
              f"{' spine ' + str(p['spine_rc']) if 'spine_rc' in p else ''}")


if __name__ == "__main__":
    main()
