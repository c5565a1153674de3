#!/usr/bin/env python3
"""Energy fidelity on every program kind: each program traced with `kjoule run`, replayed with
`kjoule replay --energy` (a bounded budget, as a user would), and judged by `kjoule compare --json`:
the measured energy per iteration with its uncertainty, the prediction from the parts, its error,
and whether compare judged it. One JSON result (device, date, command, raw numbers per program).

On the GPU machine:
  python3 bench/energy_fidelity/run.py --kjoule $KJ_BUILD/kjoule -o $OUT/energy_fidelity.json \
      [--programs NAME ...] [--slim DIR]
--slim DIR keeps a copy of each run database without module images (for analysis elsewhere).
A program named NAME+snapshot is NAME traced with `kjoule run --snapshot`: its kernels replayed on
the buffers the program had rather than on kjoule's random fill (docs/replay.md, "Data"); such
programs are summed apart (summary_snapshot). --merge OLD.json keeps OLD's programs that were not
run now, so a few programs can be measured again into the current result.

Anywhere (no GPU), after a change to compare: the same result recomputed from kept databases,
the GPU part (trace and replay facts) carried over from the earlier result:
  python3 bench/energy_fidelity/run.py --kjoule build/kjoule --reanalyze OLD.json --dbs DIR -o NEW.json
"""
import argparse
import datetime
import json
import math
import os
import sqlite3
import statistics
import subprocess
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "gpu"))
from graphs_bench import bad_numbers, timed  # noqa: E402  (one copy each)

# The program kinds (name: command; {build} is the folder of --kjoule). Loops long enough for the
# energy counter (updates every ~100 ms) to measure the loop's window to well under 1 %.
PROGRAMS = {
    "gpt_eager": ["python3", "examples/gpt_graph.py", "--mode", "eager", "--iters", "600"],  # 300: ±0.56-0.82 %
    "gpt_graph": ["python3", "examples/gpt_graph.py", "--mode", "graph", "--iters", "1500"],  # 1000: ±0.8-1.2 %
    # the traced decode loop's requests take 250-315 ms until about the tenth, then 64-70 ms with
    # the same 6,148 kernels (17.1 ms busy): ten warm-up requests leave the steady ones measured
    "decode_compiled": ["python3", "examples/hf_decode.py", "--requests", "16", "--warmup", "10"],
    "resnet_cudnn": ["python3", "examples/resnet_cudnn.py", "--iters", "320"],  # 150: ±1.7 % on saved buffers
    "jax_step": ["python3", "examples/jax_step.py", "--steps", "4500"],  # 3000: ±0.9-1.2 %
    "cuda_heat": ["{build}/examples/cuda_heat/cuda_heat", "--steps", "3000"],
    "cuda_heat_graph": ["{build}/examples/cuda_heat/cuda_heat", "--steps", "6000", "--graph"],  # 3000: ±0.5-1.7 %
    "triton": ["python3", "examples/triton_ops.py", "--iters", "12000"],  # 6000: a 1.2 s loop, ±0.6-1.1 %
}
KIND = {"gpt_eager": "eager HF-style transformer", "gpt_graph": "the same in torch.cuda.graph",
        "decode_compiled": "torch.compile reduce-overhead decode loop", "resnet_cudnn": "cuDNN CNN",
        "jax_step": "jitted JAX step", "cuda_heat": "hand-written CUDA solver, eager",
        "cuda_heat_graph": "hand-written CUDA solver, CUDA graph", "triton": "Triton kernels"}
RUN_FLAGS = {"jax_step": ["--iteration-range", "step"]}
# traced with --snapshot: XLA reserves most of the GPU as one arena, which a launch group's saved
# buffers would then be; grown as needed, the arena holds what the step uses (docs/energy.md)
SNAPSHOT_ENV = {"jax_step": ["XLA_PYTHON_CLIENT_PREALLOCATE=false"]}
# a replay with energy must take at most two minutes: the defaults do, except where a program's
# many unique kernels (compile-time autotuning) need a budget
REPLAY_FLAGS = {"decode_compiled": ["--budget", "110"], "resnet_cudnn": ["--budget", "110"],
                "jax_step": ["--budget", "110"]}
REPLAY_TIMEOUT_S = 180
# what compare says, kept per program
KEEP = ["iterations", "wall_us", "busy_us", "kernels_per_iteration", "explained_fraction",
        "explained_fraction_sequence", "energy_measured_j", "energy_measured_basis",
        "energy_measured_mean_unc_pct", "energy_measured_loop_j", "energy_measured_too_short",
        "energy_predicted_j", "energy_error_pct", "energy_error_judgeable",
        "energy_prediction_method", "energy_kernels_j", "energy_kernels_warm_j",
        "energy_kernels_cold_j", "energy_kernels_predicted_j", "energy_idle_j",
        "energy_predicted_insitu_time_j", "energy_error_insitu_time_pct", "energy_predicted_sequence_j",
        "energy_error_sequence_pct", "energy_sequence_data", "energy_kernels_time_coverage",
        "energy_clock_state", "energy_candidates", "energy_predicted_parts_j", "energy_error_parts_pct",
        "energy_parts_method", "energy_replay_data", "energy_replay_data_shares", "explained_program_capped",
        "explained_fraction_program_clocks", "explained_program_clocks_kernel_share"]


def children(pid):
    """Every process below pid (from /proc), for a kill that must reach process groups of their own."""
    kids, out = {}, []
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            kids.setdefault(ppid, []).append(int(d))
        except (OSError, ValueError, IndexError):
            continue
    todo = [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


def timed_stamped(cmd, log, timeout):
    """timed(), each output line prefixed by the seconds since the start ("[  12.3] "), so a log
    shows where a replay's time went: (exit status, seconds), 124 past timeout."""
    t = time.monotonic()
    rc = 124
    with open(log, "w") as f:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                             start_new_session=True)

        def kill():  # the command and what it started (workers hold the pipe too)
            for pg in {p.pid} | set(children(p.pid)):
                try:
                    os.killpg(pg, signal.SIGKILL)
                except OSError:
                    pass
        killer = threading.Timer(timeout, kill)
        killer.start()
        try:
            for line in p.stdout:
                f.write(f"[{time.monotonic() - t:7.1f}] {line}")
            rc = p.wait()
        finally:
            killer.cancel()
        if time.monotonic() - t >= timeout:
            rc = 124
    return rc, round(time.monotonic() - t, 1)


def analyze(kj, db):
    """compare --json on db: (exit status, the kept fields, inf/NaN paths)."""
    out = subprocess.run([kj, "compare", db, "--json"], capture_output=True, text=True)
    try:
        cj = json.loads(out.stdout, parse_constant=lambda c: float(c.lower().replace("infinity", "inf")))
    except ValueError:
        cj = {}
    return out.returncode, {k: cj[k] for k in KEEP if k in cj}, bad_numbers(cj)


def slim_copy(db, dst):
    """A copy of db without module images or snapshots (analysis needs neither)."""
    tmp = dst + ".tmp"
    subprocess.run(["cp", db, tmp], check=True)
    c = sqlite3.connect(tmp)
    for sql in ("UPDATE module SET data = NULL", "DELETE FROM snapshot"):
        try:
            c.execute(sql)
        except sqlite3.OperationalError:
            pass
    c.commit()
    c.execute("VACUUM")
    c.close()
    os.replace(tmp, dst)


def base_and_data(name):
    """(the program's name in PROGRAMS, the replay data: "fill" or "snapshot") of a bench name."""
    base, _, data = name.partition("+")
    return base, data or "fill"


def summary(res):
    """Per data kind, |error| and judged; median |error| over the judged ones: summary for the
    programs replayed on kjoule's fill (the product's default), summary_snapshot for NAME+snapshot."""
    for key, data in (("summary", "fill"), ("summary_snapshot", "snapshot")):
        progs = [p for n, p in res["programs"].items() if base_and_data(n)[1] == data]
        if not progs:
            res.pop(key, None)
            continue
        errs = [abs(p["compare"]["energy_error_pct"]) for p in progs
                if p.get("compare", {}).get("energy_error_judgeable") and p["compare"].get("energy_error_pct") is not None]
        res[key] = {"programs": len(progs), "judged": len(errs),
                    "median_abs_error_pct": round(statistics.median(errs), 2) if errs else None,
                    "max_abs_error_pct": round(max(errs), 2) if errs else None,
                    "within_5pct": sum(e <= 5 for e in errs)}


def this_gpu():
    """name, driver and serial of the GPU this bench runs on: CUDA_VISIBLE_DEVICES's first entry
    (an index or a UUID, as nvidia-smi -i takes them), else every GPU listed."""
    vis = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    cmd = ["nvidia-smi", "--query-gpu=name,driver_version,serial,uuid", "--format=csv,noheader"]
    return subprocess.run(cmd + (["-i", vis] if vis else []), capture_output=True, text=True).stdout.strip()


def repeat(res, other_path):
    """The same programs measured on another card (other_path, a result of this bench): per program
    both errors and their difference in points, judged only where both are; the largest
    difference in summary_repeat."""
    other = json.load(open(other_path))
    rows, diffs = {}, []
    for name, p in res["programs"].items():
        q = other["programs"].get(name)
        if not q or q.get("run_flags") != p.get("run_flags") or q.get("program") != p.get("program"):
            continue  # not the same measurement
        a, b = p.get("compare", {}), q.get("compare", {})
        ea, eb = a.get("energy_error_pct"), b.get("energy_error_pct")
        both = bool(a.get("energy_error_judgeable") and b.get("energy_error_judgeable")) and None not in (ea, eb)
        row = {"device": q.get("device", other.get("device")), "error_pct": eb, "judged": b.get("energy_error_judgeable"),
               "measured_j": b.get("energy_measured_j"), "predicted_j": b.get("energy_predicted_j"),
               "explained_fraction": b.get("explained_fraction"), "replay_s": q.get("replay_s"),
               "diff_points": round(eb - ea, 2) if both else None}
        if both:
            diffs.append(abs(eb - ea))
        rows[name] = row
    res["repeat"] = {"source": os.path.basename(other_path), "device": other.get("device"), "programs": rows}
    res["summary_repeat"] = {"programs": len(rows), "both_judged": len(diffs),
                             "max_abs_diff_points": round(max(diffs), 2) if diffs else None,
                             "within_2_points": sum(d <= 2 for d in diffs)}


def table(res):
    print(f"{'program':16s} {'measured J':>11s} {'±%':>6s} {'pred J':>10s} {'err %':>7s} judged  explained  replay_s")
    for name, p in res["programs"].items():
        c = p.get("compare", {})
        def f(k, fmt):
            v = c.get(k)
            return format(v, fmt) if isinstance(v, (int, float)) else "-"
        print(f"{name:16s} {f('energy_measured_j', '11.5f')} {f('energy_measured_mean_unc_pct', '6.2f')}"
              f" {f('energy_predicted_j', '10.5f')} {f('energy_error_pct', '+7.2f')}"
              f" {str(c.get('energy_error_judgeable')):6s} {f('explained_fraction', '9.4f')} {p.get('replay_s', '-')}")
    for name, r in res.get("repeat", {}).get("programs", {}).items():
        print(f"repeat {name:16s} err {r['error_pct']} judged {r['judged']} diff {r['diff_points']} points")
    for key in ("summary", "summary_snapshot", "summary_repeat"):
        if key in res:
            print(key, json.dumps(res[key]))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kjoule", required=True)
    ap.add_argument("--programs", nargs="+")
    ap.add_argument("--logs", default="/tmp/energy_fidelity")
    ap.add_argument("--slim", help="folder for copies of the run databases without module images")
    ap.add_argument("--reanalyze", help="an earlier result: recompute its compare part from --dbs")
    ap.add_argument("--dbs", help="with --reanalyze: the folder of PROGRAM.kjdb files")
    ap.add_argument("--merge", help="an earlier result whose programs not run now are kept")
    ap.add_argument("--combine", nargs="+", metavar="RESULT",
                    help="no GPU: one result from several (their programs, later files winning), each program"
                         " keeping the device, date and command it was measured with")
    ap.add_argument("--repeat", help="a result of the same programs on another card: compared per program")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    kj = os.path.abspath(a.kjoule)
    if a.combine:
        res = {"benchmark": "energy_fidelity", "programs": {}, "calls": []}
        for path in a.combine:
            r = json.load(open(path))
            for n, p in r["programs"].items():
                for k in ("device", "date", "command"):
                    p.setdefault(k, r.get(k))
                res["programs"][n] = p
            res["calls"] += r.get("calls") or [{"date": r.get("date"), "command": r.get("command"), "device": r.get("device")}]
        # the last measured file's (a reanalyzed part may carry no device of its own)
        last = {}
        for path in a.combine:
            r = json.load(open(path))
            if r.get("device"):
                last = r
        res.update({k: last.get(k) for k in ("device", "date", "command")})
    elif a.reanalyze:
        if not a.dbs:
            ap.error("--reanalyze needs --dbs")
        res = json.load(open(a.reanalyze))
        res["analysis_command"] = " ".join(sys.argv)
        res["analysis_date"] = datetime.datetime.now(datetime.timezone.utc).isoformat()
        res["analysis_version"] = subprocess.run([kj, "--version"], capture_output=True, text=True).stdout.strip()
        for name, p in res["programs"].items():
            db = os.path.join(a.dbs, name + ".kjdb")
            if not os.path.exists(db):
                sys.exit(f"{a.reanalyze}: program {name}: no {db}")
            p["compare_rc"], p["compare"], p["compare_bad_numbers"] = analyze(kj, db)
            # the row says its compare part is newer than its GPU part (kept through --combine)
            p["reanalyzed"] = {k: res[k] for k in ("analysis_command", "analysis_date", "analysis_version")}
    else:
        names = a.programs or list(PROGRAMS)
        unknown = [n for n in names if base_and_data(n)[0] not in PROGRAMS or base_and_data(n)[1] not in ("fill", "snapshot")]
        if unknown:
            ap.error(f"unknown programs: {' '.join(unknown)} (known: {' '.join(PROGRAMS)})")
        os.makedirs(a.logs, exist_ok=True)
        if a.slim:
            os.makedirs(a.slim, exist_ok=True)
        dev = this_gpu()
        date = datetime.datetime.now(datetime.timezone.utc).isoformat()
        res = {"benchmark": "energy_fidelity", "device": dev, "date": date,
               "command": " ".join(sys.argv), "programs": {}}
        if a.merge:  # the earlier programs first, each with the device and date it was measured on
            old = json.load(open(a.merge))
            for n, p in old["programs"].items():
                if n not in names:
                    p.setdefault("device", old.get("device"))
                    p.setdefault("date", old.get("date"))
                    p.setdefault("command", old.get("command"))
                    res["programs"][n] = p
        build = os.path.dirname(kj)
        for name in names:
            db = os.path.join(a.logs, name + ".kjdb")
            base, data = base_and_data(name)
            program = [x.format(build=build) for x in PROGRAMS[base]]
            if data == "snapshot" and base in SNAPSHOT_ENV:
                program = ["env", *SNAPSHOT_ENV[base], *program]
            p = {"kind": KIND[base] + (", replayed on its saved buffers" if data == "snapshot" else ""),
                 "data": data, "device": dev, "date": date, "command": res["command"],
                 "program": " ".join(program),
                 "run_flags": RUN_FLAGS.get(base, []) + (["--snapshot=8192"] if data == "snapshot" else [])}
            p["run_rc"], p["run_s"] = timed([kj, "run", "--force", *p["run_flags"], "-o", db, "--", *program],
                                            os.path.join(a.logs, name + "_run.log"), 240)
            p["replay_flags"] = REPLAY_FLAGS.get(base, [])
            p["replay_rc"], p["replay_s"] = timed_stamped([kj, "replay", db, "--energy", *p["replay_flags"]],
                                                  os.path.join(a.logs, name + "_replay.log"), REPLAY_TIMEOUT_S)
            p["compare_rc"], p["compare"], p["compare_bad_numbers"] = analyze(kj, db)
            with open(os.path.join(a.logs, name + "_compare.txt"), "w") as f:
                subprocess.run([kj, "compare", db], stdout=f, stderr=subprocess.STDOUT)
            if a.slim and os.path.exists(db):
                slim_copy(db, os.path.join(a.slim, name + ".kjdb"))
            res["programs"][name] = p
            summary(res)
            with open(a.output + ".tmp", "w") as f:
                json.dump(res, f, indent=1)
            os.replace(a.output + ".tmp", a.output)
    summary(res)
    if a.repeat:
        repeat(res, a.repeat)
    with open(a.output + ".tmp", "w") as f:
        json.dump(res, f, indent=1)
    os.replace(a.output + ".tmp", a.output)
    table(res)


if __name__ == "__main__":
    main()
