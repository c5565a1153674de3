#!/usr/bin/env python3
"""A whole training step: `kjoule predict --model` against the same step measured under `kjoule run`.

On the GPU machine, for the GPT-style model of examples/gpt_train.py (its shape arguments):
 1. MODEL.yml of that shape (gpt_train.py --model-yml) and the operators `kjoule predict --model`
    needs for it, with their shapes and columns (predict --json on an empty models folder);
 2. the step traced: kjoule run --iteration-range step -- python3 examples/gpt_train.py ... and
    kjoule compare --json --skip WARMUP -o DIR (per-step wall, busy, idle, energy, tiers, top
    kernels; iterations.csv for the medians);
 3. per operator, a small sweep grid around the model's shape that does not hold it (b and l
    at the model's -+ a quarter, b = 1 at 1 and 3; encoders at the model's -3, -1, +1, +3 steps of
    layers/8; mp, h and dim at the model's value: 4 shapes each): kjoule sweep --energy
    --precision P (energy window KJ_SWEEP_ENERGY_S, default 0.5 s per direction). The step's
    shapes are in no grid, so the models predict shapes they were not fitted on (the sum of
    in-grid shapes judged the summation, not the regressor); each operator records whether its
    grid or its fitted rows hold the step's shape (grid_holds_step_shape,
    fit_rows_hold_step_shape; step_shapes.off_grid for all);
 4. kjoule fit, then kjoule predict --models DIR --model MODEL.yml --json; then each operator's
    step shape swept alone (a one-point grid into OUT/at_shape, never fitted): the prediction
    against the measurement there (error_at_shape_pct);
 5. the result: predicted step time and energy against the measured mean step wall and mean
    energy per step, errors in %, every operator's prediction next to the sweep's own measurement
    at the model's shape, predicted against measured time per kernel tier, and compare's top
    kernels, so what the sum of operators misses can be named. Written atomically to -o; a short
    table is printed last.

Batch 8 by default: the operator sum predicts the GPU's work, so the step must be GPU-bound to test
it. At batch 4 a step holds ~28 ms of kernels and PyTorch's host spends ~30 ms launching them on
some hosts (an H100 measured 2026-11-25: 34 ms a step untraced), which the sum cannot see; at batch 8 the
GPU's ~50 ms hides the host's launches (traced/untraced 1.00x).

Every subprocess is bounded by a timeout inside an overall --budget-s (default 540 s); a step that
fails or runs out of time is recorded under "skipped" and the rest still runs. Errors are null
(never 0) when the step was not measured.

usage: run.py --kjoule KJOULE [--layers 24 --hidden 1024 --heads 16 --seq 1024 --batch 8]
              [--precision bf16] [--norm layernorm] [--steps 20] [--warmup 3] [--out-dir DIR]
              [-o RESULT.json] [--no-trace | --run RUN.kjdb | --no-sweep] [--compile] [--cuda-graph]
              [--gpu-name NAME] [--energy-s 0.5] [--budget-s 540] [--python python3]
--no-trace: sweep, fit and predict only (the CPU test, with the stand-in worker);
--no-sweep: the measured step only (untraced and traced, compare; no sweep, fit or predict), for
bench/predict_step/programs.py to judge against a --no-trace result of the same machine;
--compile: the program under torch.compile (gpt_train.py --compile) instead of eager;
--cuda-graph: the whole step captured into one CUDA graph and replayed (gpt_train.py --cuda-graph),
eager or with --compile;
--run RUN.kjdb: compare an existing database instead of tracing (its iteration range as compare
chooses it, --warmup instances skipped)."""
import argparse
import csv
import datetime
import glob
import itertools
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRAIN = os.path.join(SRC, "examples", "gpt_train.py")


class Runner:
    """Subprocesses with timeouts inside one deadline; every command and its outcome is kept."""

    def __init__(self, budget_s):
        self.t0 = time.monotonic()
        self.deadline = self.t0 + budget_s
        self.commands = []
        self.skipped = []

    def left(self, reserve=0.0):
        return self.deadline - time.monotonic() - reserve

    def run(self, what, cmd, cap_s, reserve=0.0, env=None):
        """Runs cmd for at most min(cap_s, time left - reserve); None (recorded) when no time is
        left, else the CompletedProcess (returncode 124 on a timeout)."""
        limit = min(cap_s, self.left(reserve))
        rec = {"what": what, "command": " ".join(cmd), "timeout_s": round(max(limit, 0), 1)}
        self.commands.append(rec)
        if limit < 5:
            rec.update(rc=None, seconds=0.0, note="not started: the time budget is spent")
            self.skipped.append(f"{what}: not started, the time budget is spent")
            return None
        t = time.monotonic()
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=limit, env=env)
        except subprocess.TimeoutExpired as e:
            rec.update(rc=124, seconds=round(time.monotonic() - t, 2), timed_out=True)
            self.skipped.append(f"{what}: timed out after {limit:.0f} s")
            out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
            return subprocess.CompletedProcess(cmd, 124, out, err)
        except OSError as e:
            rec.update(rc=127, seconds=0.0, error=str(e))
            self.skipped.append(f"{what}: {e}")
            return subprocess.CompletedProcess(cmd, 127, "", str(e))
        rec.update(rc=r.returncode, seconds=round(time.monotonic() - t, 2))
        if r.returncode:
            tail = (r.stderr or r.stdout or "").strip().splitlines()[-8:]
            rec["stderr_tail"] = tail
            self.skipped.append(f"{what}: exit {r.returncode}: {' | '.join(tail)[-300:]}")
        return r


def num(x):
    """A finite float, else None (never NaN or inf in the result)."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def err_pct(pred, meas):
    pred, meas = num(pred), num(meas)
    if pred is None or meas is None or meas <= 0:
        return None
    return 100.0 * (pred - meas) / meas


def off(v, s):
    """start, step, end of points around v but not on it: v - s and v + s; where v - s < 1
    nothing lies below v, and the points are v and v + 2 s (the shape then leaves the grid by its
    other columns)."""
    return (v - s, 2 * s, v + s) if v - s >= 1 else (v, 2 * s, v + 2 * s)


def grid(columns, shape):
    """starts, steps, ends, operators of a small grid around the model's shape that does not hold
    it: b and l at points either side of the model's (b -+ b/4, l -+ l/4), encoders at 4 points
    2 steps of layers/8 apart around it, so the regressor predicts the step's shapes rather than
    recalling them; mp, h and dim, which pick the kernels, at the model's value."""
    st, sp, en, ops = [], [], [], []
    for c, v in zip(columns, shape):
        if c in ("b", "l"):               # v - v/4, v + v/4
            a, step, b = off(v, max(v // 4, 1))
            st.append(a), sp.append(step), en.append(b), ops.append("add")
        elif c == "encoders":             # v -3s, -s, +s, +3s (s = layers/8)
            s = max(v // 8, 1)
            a = v - 3 * s if v - 3 * s >= 1 else v - s if v - s >= 1 else v
            st.append(a), sp.append(2 * s), en.append(a + 6 * s), ops.append("add")
        else:                             # mp, h, dim, ...: the model's value
            st.append(v), sp.append(1), en.append(v), ops.append("add")
    return st, sp, en, ops


def grid_points(g):
    """Every point of a grid as a tuple (add: start, start + step, ...; mul: start, start x step,
    ...; each <= end), as kjoule sweep walks it."""
    axes = []
    for a, s, b, op in zip(g["starts"], g["steps"], g["ends"], g["operators"]):
        if op == "mul":
            pts = [a]
            while pts[-1] * s <= b:
                pts.append(pts[-1] * s)
            axes.append(pts)
        else:
            axes.append(range(a, b + 1, s))
    return set(itertools.product(*axes))


def config(op, columns, shape, single=False):
    """The sweep config of op's grid around shape (single: of shape alone)."""
    if single:
        st, sp, en, ops = list(shape), [1] * len(shape), list(shape), ["add"] * len(shape)
    else:
        st, sp, en, ops = grid(columns, shape)
    q = lambda xs: "[" + ", ".join("'%s'" % x for x in xs) + "]"
    n = lambda xs: "[" + ", ".join(str(x) for x in xs) + "]"
    text = ("{\n  \"kernel_name\": \"%s\",\n  \"columns_name\": %s,\n  \"first_n_column\": %d,\n"
            "  \"starts\": %s,\n  \"steps\": %s,\n  \"ends\": %s,\n  \"operators\": %s,\n"
            "  \"warmup_shapes\": %s,\n  \"run\": \"get_all\"\n}\n"
            % (op, q(list(columns) + ["F_dur(us)", "B_dur(us)"]), len(columns), n(st), n(sp), n(en),
               q(ops), n(shape)))
    return text, {"starts": st, "steps": sp, "ends": en, "operators": ops}


def fit_rows_hold(data_dir, op, precision, columns, shape):
    """Whether any measured row of the fit's CSVs for op is the model's shape (None: no CSV read)."""
    want, seen = [str(v) for v in shape], None
    for f in sorted(glob.glob(os.path.join(data_dir, f"*_{op}_{precision}_*.csv"))):
        try:
            rows = list(csv.DictReader(open(f)))
        except (OSError, csv.Error):
            continue
        seen = seen or False
        if any([r.get(c) for c in columns] == want for r in rows):
            return True
    return seen


def log_figures(data_dir, op, precision, shape_text):
    """What kjoule sweep logged for one shape (sampling_log beside sampling_data), read in one pass:
    fwd_mhz, bwd_mhz, the SM clock of its forward and backward energy windows; fwd_uj_warm,
    fwd_uj_cold, bwd_uj_warm, bwd_uj_cold, the energies (uJ) with warm and with cold L2 whose mean
    the CSV holds. None for each figure the worker gave none of."""
    logs = os.path.join(os.path.dirname(os.path.normpath(data_dir)), "sampling_log")
    head = r"^shape " + re.escape(shape_text) + r": "
    clock = re.compile(head + r"SM clock (\S+) MHz forward, (\S+) MHz backward")
    energy = re.compile(head + r"energy with warm/cold L2 (\S+)/(\S+) uJ forward, (\S+)/(\S+) uJ backward")
    wanted = {clock: ("fwd_mhz", "bwd_mhz"), energy: ("fwd_uj_warm", "fwd_uj_cold", "bwd_uj_warm", "bwd_uj_cold")}
    out = {k: None for keys in wanted.values() for k in keys}
    for f in sorted(glob.glob(os.path.join(logs, f"*_{op}_{precision}_*.txt"))):
        try:
            for line in open(f):
                for pat, keys in list(wanted.items()):  # each line's first match counts
                    m = pat.match(line)
                    if m:
                        out.update(zip(keys, map(num, m.groups())))
                        del wanted[pat]
        except OSError:
            pass
    return out


def measured_at(data_dir, op, precision, columns, shape):
    """The sweep's own row at the model's shape: fwd/bwd time (us), energy (uJ), their power (W),
    and from the sweep's log the SM clock the energy windows ran at (MHz) and the energies with
    warm and cold L2 whose mean the row holds (uJ), else None. A GEMM that
    holds the GPU at its power limit in the sweep runs at a lower clock than between the step's
    other kernels (docs/sweep.md)."""
    want = [str(v) for v in shape]
    for f in sorted(glob.glob(os.path.join(data_dir, f"*_{op}_{precision}_*.csv"))):
        try:
            rows = list(csv.DictReader(open(f)))
        except (OSError, csv.Error):
            continue
        for r in rows:
            if [r.get(c) for c in columns] == want and r.get("status", "ok") == "ok":
                m = {"fwd_us": num(r.get("F_dur(us)")), "bwd_us": num(r.get("B_dur(us)")),
                     "fwd_uj": num(r.get("F_energy(uJ)")), "bwd_uj": num(r.get("B_energy(uJ)"))}
                for d in ("fwd", "bwd"):
                    t, e = m[d + "_us"], m[d + "_uj"]
                    m[d + "_w"] = e / t if t and e else None
                # the clock and the two energies the CSV's is the mean of
                m.update(log_figures(data_dir, op, precision, ",".join(want)))
                return m
    return None


def rows_in(data_dir, op, precision):
    n = 0
    for f in glob.glob(os.path.join(data_dir, f"*_{op}_{precision}_*.csv")):
        try:
            n += sum(1 for r in csv.DictReader(open(f)) if r.get("status", "ok") == "ok")
        except (OSError, csv.Error):
            pass
    return n


def load_json(text):
    """JSON from a command's stdout (None when it is not JSON)."""
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


def program_line(stdout):
    """gpt_train.py's closing JSON line."""
    for line in reversed((stdout or "").splitlines()):
        line = line.strip()
        if line.startswith("{") and "\"program\"" in line:
            j = load_json(line)
            if isinstance(j, dict) and j.get("program") == "gpt_train":
                return j
    return None


def iterations(path):
    """Measured (not skipped) iterations of compare's iterations.csv: walls (us), energies (J)."""
    walls, energies = [], []
    try:
        for r in csv.DictReader(open(path)):
            if r.get("skipped") == "1":
                continue
            w, e = num(r.get("wall_us")), num(r.get("energy_measured_j"))
            if w is not None:
                walls.append(w)
            if e is not None:
                energies.append(e)
    except (OSError, csv.Error):
        pass
    return walls, energies


def device_name():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout.strip().splitlines()
        if out:
            return out[0]
    except (OSError, subprocess.SubprocessError):
        pass
    return os.environ.get("KJ_BENCH_DEVICE", "unknown")


def git_commit():
    try:
        r = subprocess.run(["git", "-C", SRC, "rev-parse", "HEAD"], capture_output=True, text=True,
                           timeout=10)
        if r.returncode == 0 and r.stdout.strip():
            return r.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return os.environ.get("KJ_GIT_COMMIT") or None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kjoule", required=True)
    for k, v in (("layers", 24), ("hidden", 1024), ("heads", 16), ("seq", 1024), ("batch", 8),
                 ("steps", 20), ("warmup", 3)):
        ap.add_argument("--" + k, type=int, default=v)
    ap.add_argument("--precision", choices=["bf16", "fp16"], default="bf16")
    ap.add_argument("--norm", choices=["layernorm", "rms"], default="layernorm")
    ap.add_argument("--out-dir", default="/tmp/kj_predict_step")
    ap.add_argument("-o", "--output", default="bench/results/predict_step.json")
    ap.add_argument("--no-trace", action="store_true", help="sweep, fit and predict only")
    ap.add_argument("--no-sweep", action="store_true", help="the measured step only")
    ap.add_argument("--compile", action="store_true", help="gpt_train.py --compile")
    ap.add_argument("--cuda-graph", action="store_true", help="gpt_train.py --cuda-graph")
    ap.add_argument("--run", metavar="RUN.kjdb", help="compare this database instead of tracing")
    ap.add_argument("--gpu-name", default=None)
    ap.add_argument("--energy-s", default="0.5")
    ap.add_argument("--budget-s", type=float, default=540.0)
    ap.add_argument("--python", default=sys.executable or "python3")
    ap.add_argument("--untraced-seconds", type=float, default=3.0,
                    help="the program run once without kjoule first, its measured steps repeated for "
                         "this long (its own CUDA-event time and NVML energy per step); 0: not run")
    a = ap.parse_args()
    for k in ("layers", "hidden", "heads", "seq", "batch", "steps"):
        if getattr(a, k) < 1:
            ap.error(f"--{k} must be a positive integer, not {getattr(a, k)}")
    if a.warmup < 0:
        ap.error(f"--warmup must be 0 or more, not {a.warmup}")
    if a.no_sweep and a.no_trace:
        ap.error("--no-sweep and --no-trace leave nothing to do")
    os.environ.setdefault("KJ_SWEEP_ENERGY_S", a.energy_s)
    kj, out = os.path.abspath(a.kjoule), os.path.abspath(a.out_dir)
    for sub in ("sweep", "at_shape", "models", "compare", "configs", "empty_models"):
        shutil.rmtree(os.path.join(out, sub), ignore_errors=True)
    os.makedirs(os.path.join(out, "configs"), exist_ok=True)
    R = Runner(a.budget_s)
    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    shape_args = ["--layers", str(a.layers), "--hidden", str(a.hidden), "--heads", str(a.heads),
                  "--seq", str(a.seq), "--batch", str(a.batch), "--precision", a.precision,
                  "--norm", a.norm]
    trace = not a.no_trace
    program_args = (["--compile"] if a.compile else []) + (["--cuda-graph"] if a.cuda_graph else [])
    program_name = ("torch.compile" if a.compile else "eager") + (" + CUDA graph" if a.cuda_graph else "")
    # time kept back after the untraced run and after the trace
    reserve_untraced, reserve_trace = (100, 20) if a.no_sweep else (330, 200)
    # time kept back for fit and predict (the trace runs first)
    after_sweeps = 30
    result = {"benchmark": "predict_step", "device": device_name(), "date": date,
              "git_commit": git_commit(), "command": " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:]),
              "model": {"layers": a.layers, "hidden": a.hidden, "heads": a.heads, "seq": a.seq,
                        "batch": a.batch, "precision": a.precision, "norm": a.norm},
              "settings": {"steps": a.steps, "warmup": a.warmup, "budget_s": a.budget_s,
                           "energy_window_s": os.environ["KJ_SWEEP_ENERGY_S"],
                           "trace": "no" if not trace else ("existing run" if a.run else "kjoule run"),
                           "program": None if not trace else program_name,
                           "sweeps": not a.no_sweep},
              "operators": [], "predicted": None, "measured": None,
              "errors": {"time_pct": None, "energy_pct": None}, "gap": None}

    # 1. the model and the operators predict needs for it
    yml = os.path.join(out, "model.yml")
    r = R.run("model.yml", [a.python, TRAIN] + shape_args + ["--model-yml", yml], 30)
    terms = None
    if r is not None and r.returncode == 0:
        result["model"]["yml"] = open(yml).read()
        os.makedirs(os.path.join(out, "empty_models"), exist_ok=True)
        with open(os.path.join(out, "empty_models", "models.json"), "w") as f:
            f.write('{"models": []}\n')
        r = R.run("operators of the model", [kj, "predict", "--models", os.path.join(out, "empty_models"),
                                             "--model", yml, "--gpu", "none", "--json"], 30)
        j = load_json(r.stdout) if r is not None and r.returncode == 0 else None
        terms = j["operators"] if isinstance(j, dict) else None

    # 2a. the same program without kjoule: the step as users run it, and what tracing costs
    result["untraced"] = None
    if trace and not a.run and a.untraced_seconds > 0:
        r = R.run("untraced program", [a.python, TRAIN] + shape_args + program_args +
                  ["--steps", str(a.steps), "--warmup", str(a.warmup), "--min-seconds", str(a.untraced_seconds)],
                  180 if a.compile else 120, reserve=reserve_untraced)
        result["untraced"] = program_line(r.stdout) if r is not None and r.returncode == 0 else None

    # 2b. the measured step
    run_db = None
    if trace:
        run_db = a.run
        if not run_db:
            run_db = os.path.join(out, "step.kjdb")
            r = R.run("kjoule run", [kj, "run", "--iteration-range", "step", "--force", "-o", run_db, "--",
                                     a.python, TRAIN] + shape_args + program_args +
                      ["--steps", str(a.steps), "--warmup", str(a.warmup)], 240, reserve=reserve_trace)
            program = program_line(r.stdout) if r is not None else None
            if r is not None:  # the program's own output and kjoule's, whole
                with open(os.path.join(out, "trace.log"), "w") as f:
                    f.write(f"$ {' '.join(r.args)}\n== stdout\n{r.stdout or ''}\n== stderr\n{r.stderr or ''}")
            if r is None or r.returncode or not os.path.exists(run_db):
                run_db = None
        else:
            program = None
        comp = None
        if run_db:
            cdir = os.path.join(out, "compare")
            r = R.run("kjoule compare", [kj, "compare", run_db, "--json", "--quiet", "--top", "15",
                                         "--skip", str(a.warmup), "-o", cdir], 90,
                      reserve=10 if a.no_sweep else 150)
            comp = load_json(r.stdout) if r is not None and r.returncode == 0 else None
        if isinstance(comp, dict):
            walls, energies = iterations(os.path.join(out, "compare", "iterations.csv"))
            result["measured"] = {
                "run": os.path.abspath(run_db), "iterations": comp.get("iterations"),
                "step_time_us_median": statistics.median(walls) if walls else None,
                "step_time_us_mean": num(comp.get("wall_us")),
                "step_time_us_min": min(walls) if walls else None,
                "step_energy_j_mean": num(comp.get("energy_measured_j")),
                "step_energy_j_median": statistics.median(energies) if energies else None,
                "step_energy_j_unc_one_window": num(comp.get("energy_measured_unc_j")),
                "step_energy_j_unc_of_mean": num(comp.get("energy_measured_mean_unc_j")),
                "walls_us": walls, "energies_j": energies,
                "power_avg_w": num(comp.get("power_avg_w")),
                "decomposition_us": {k: num(comp.get(k + "_us")) for k in
                                     ("wall", "span", "busy", "kernel_busy", "kernel_sum", "copy_sum",
                                      "overlap", "idle", "host_only", "outside", "inherited")},
                "kernels_per_iteration": num(comp.get("kernels_per_iteration")),
                "shared_gpu": comp.get("shared_gpu"), "missing": comp.get("missing"),
                "program": program}
            result["compare"] = {"tiers": comp.get("tiers"), "top_kernels": comp.get("top_kernels")}
        else:
            result["skipped_trace"] = "no measured step: see skipped"

    # 3. sweeps around the model's shape
    data = os.path.join(out, "sweep", "sampling_data")
    name_args = ["--gpu-name", a.gpu_name] if a.gpu_name else []
    for t in (terms or []) if not a.no_sweep else []:
        op, columns = t["op"], t["columns"]
        shape = [int(x) for x in t["shape"].split(",")]
        text, g = config(op, columns, shape)
        path = os.path.join(out, "configs", op + ".yml")
        with open(path, "w") as f:
            f.write(text)
        r = R.run("sweep " + op, [kj, "sweep", path, "--precision", a.precision, "--energy", "--out",
                                  os.path.join(out, "sweep"), "--timeout", "60"] + name_args,
                  120, reserve=after_sweeps)
        entry = {"op": op, "count": t["count"], "shape": t["shape"], "columns": columns,
                 "backward": t["backward"], "tier": t["tier"], "grid": g,
                 "grid_holds_step_shape": tuple(shape) in grid_points(g),
                 "sweep": {"rc": None if r is None else r.returncode,
                           "seconds": R.commands[-1].get("seconds"),
                           "rows_measured": rows_in(data, op, a.precision)},
                 "measured_at_shape": None, "predicted": None}
        result["operators"].append(entry)

    # 4. fit and predict
    pred = None
    if os.path.isdir(data):
        r = R.run("kjoule fit", [kj, "fit", data, "-o", os.path.join(out, "models")], 90, reserve=10)
        if r is not None and r.returncode == 0:
            r = R.run("kjoule predict", [kj, "predict", "--models", os.path.join(out, "models"), "--model",
                                         yml, "--json"], 30)
            pred = load_json(r.stdout) if r is not None and r.returncode == 0 else None
            # the product's own judging of the same step (kjoule predict --run), kept beside the bench's
            if isinstance(pred, dict) and run_db:
                r = R.run("kjoule predict --run", [kj, "predict", "--models", os.path.join(out, "models"),
                                                   "--model", yml, "--run", run_db, "--skip", str(a.warmup),
                                                   "--json"], 60)
                j = load_json(r.stdout) if r is not None and r.returncode == 0 else None
                result["predict_against_run"] = j.get("against") if isinstance(j, dict) else None
    # 4b. the step's own shapes measured alone, after the fit (so no model saw them): each
    #     operator's prediction of a shape off its grid against its measurement there
    at_data = os.path.join(out, "at_shape", "sampling_data")
    # the operators that weigh most in the predicted step first, so a spent budget leaves out the
    # checks that matter least (the order of the model's terms otherwise)
    weight = {}
    if isinstance(pred, dict):
        for p in pred.get("operators", []):
            t = [num(p.get(k)) for k in ("fwd_us", "bwd_us")]
            weight[(p["op"], p["shape"])] = sum(x for x in t if x is not None)
    order = sorted(result["operators"], key=lambda e: -e["count"] * weight.get((e["op"], e["shape"]), 0.0))
    for e in order:
        shape = [int(x) for x in e["shape"].split(",")]
        # the check that the regressor, not the sum, is judged: the step's shape is in no row fitted
        e["fit_rows_hold_step_shape"] = fit_rows_hold(data, e["op"], a.precision, e["columns"], shape)
        text, _ = config(e["op"], e["columns"], shape, single=True)
        path = os.path.join(out, "configs", e["op"] + "_at_shape.yml")
        with open(path, "w") as f:
            f.write(text)
        R.run("sweep at shape " + e["op"], [kj, "sweep", path, "--precision", a.precision, "--energy", "--out",
                                            os.path.join(out, "at_shape"), "--timeout", "60"] + name_args, 60)
        e["measured_at_shape"] = measured_at(at_data, e["op"], a.precision, e["columns"], shape)
    if isinstance(pred, dict):
        rows = {(p["op"], p["shape"]): p for p in pred.get("operators", [])}
        for e in result["operators"]:
            p = rows.get((e["op"], e["shape"]))
            if p is None:
                continue
            e["predicted_in_grid"] = p.get("in_grid")  # each column inside the range fit saw
            e["predicted"] = {k: num(p.get(k)) for k in ("fwd_us", "bwd_us", "fwd_uj", "bwd_uj")}
            m = e["measured_at_shape"] or {}
            e["error_at_shape_pct"] = {k: err_pct(e["predicted"][k], m.get(k))
                                       for k in ("fwd_us", "bwd_us", "fwd_uj", "bwd_uj")}
            pt = [e["predicted"]["fwd_us"]] + ([e["predicted"]["bwd_us"]] if e["backward"] else [])
            pe = [e["predicted"]["fwd_uj"]] + ([e["predicted"]["bwd_uj"]] if e["backward"] else [])
            e["step_time_us"] = e["count"] * sum(pt) if None not in pt else None
            e["step_energy_uj"] = e["count"] * sum(pe) if None not in pe else None
        result["predicted"] = {"gpu": pred.get("gpu"), "time_us": num(pred.get("time_us")),
                               "energy_uj": num(pred.get("energy_uj")),
                               "time_us_partial": num(pred.get("time_us_partial")),
                               "energy_uj_partial": num(pred.get("energy_uj_partial")),
                               "missing_models": pred.get("missing_models") or ""}
    ops = result["operators"]
    result["step_shapes"] = {
        "off_grid": bool(ops) and not any(e["grid_holds_step_shape"] or e.get("fit_rows_hold_step_shape")
                                          for e in ops),
        "in_a_grid": [e["op"] for e in ops if e["grid_holds_step_shape"] or e.get("fit_rows_hold_step_shape")],
        "outside_a_range": [e["op"] for e in ops if e.get("predicted_in_grid") is False],
        "note": "each operator's grid lies around the step's shape, not on it (b and l either side, "
                "encoders 4 points around; mp, h and dim at the step's value), so the models predict "
                "shapes they were not fitted on; the step's shapes are then measured alone "
                "(measured_at_shape, configs/OP_at_shape.yml) after the fit"}
    # the same sum from the sweep's own measurements at the model's shape (no regressor)
    st = se = 0.0
    complete = bool(result["operators"])
    for e in result["operators"]:
        m = e["measured_at_shape"]
        keys = ("fwd_us", "bwd_us") if e["backward"] else ("fwd_us",)
        ekeys = ("fwd_uj", "bwd_uj") if e["backward"] else ("fwd_uj",)
        if m is None or any(m[k] is None for k in keys + ekeys):
            complete = False
            continue
        st += e["count"] * sum(m[k] for k in keys)
        se += e["count"] * sum(m[k] for k in ekeys)
    result["sum_of_sweep_measurements"] = {"time_us": st if complete else None,
                                           "energy_uj": se if complete else None,
                                           "complete": complete}

    # 5. errors and the gap, by tier
    meas, p = result["measured"], result["predicted"]
    if meas and p:
        e_mean, e_med = meas["step_energy_j_mean"], meas["step_energy_j_median"]
        pe = p["energy_uj"] / 1e6 if p["energy_uj"] is not None else None
        prog = meas.get("program") or {}
        unt = result.get("untraced") or {}
        result["errors"] = {
            "time_pct": err_pct(p["time_us"], meas["step_time_us_mean"]),
            "energy_pct": err_pct(pe, e_mean),
            "time_pct_vs_median_wall": err_pct(p["time_us"], meas["step_time_us_median"]),
            "time_pct_vs_cuda_events": err_pct(p["time_us"], num(prog.get("ms_per_step_median")) * 1e3
                                               if num(prog.get("ms_per_step_median")) else None),
            "energy_pct_vs_median_window": err_pct(pe, e_med),
            "time_pct_vs_kernel_sum": err_pct(p["time_us"], meas["decomposition_us"]["kernel_sum"]),
            "time_pct_vs_untraced": err_pct(p["time_us"], num(unt.get("ms_per_step_median")) * 1e3
                                            if num(unt.get("ms_per_step_median")) else None),
            "energy_pct_vs_untraced": err_pct(pe, num(unt.get("energy_j_per_step_nvml"))),
            "traced_over_untraced_step_time": (num(prog.get("ms_per_step_median")) / num(unt.get("ms_per_step_median"))
                                               if num(prog.get("ms_per_step_median")) and num(unt.get("ms_per_step_median"))
                                               else None),
            "sweep_sum_time_pct": err_pct(result["sum_of_sweep_measurements"]["time_us"],
                                          meas["step_time_us_mean"]),
            "basis": "time: mean step wall (compare's iterations); energy: mean energy per step. "
                     "Both are means of consecutive windows of one run: their mean is the run's "
                     "time and energy over the steps, while one window alone is not known (a step "
                     "launched back to back with the next closes its range before its GPU work ends, "
                     "so its wall may be shorter than its own kernels; one energy window is under the "
                     "counter's ~100 ms period); *_vs_median_wall: the median of the walls; "
                     "*_vs_untraced: the program's own CUDA-event median and NVML energy per step, "
                     "run without kjoule (the step as users run it)"}
    if meas and result["operators"]:
        by = {}
        for e in result["operators"]:
            d = by.setdefault(e["tier"], {"tier": e["tier"], "operators": [], "predicted_us": 0.0,
                                          "predicted_complete": True})
            d["operators"].append(e["op"])
            if e.get("step_time_us") is None:
                d["predicted_complete"] = False
            else:
                d["predicted_us"] += e["step_time_us"]
        for tr in (result.get("compare") or {}).get("tiers") or []:
            d = by.setdefault(tr.get("tier"), {"tier": tr.get("tier"), "operators": [], "predicted_us": 0.0,
                                               "predicted_complete": True})
            d["measured_us"] = num(tr.get("measured_us"))
            d["launches_per_iteration"] = num(tr.get("launches_per_iteration"))
        have_tiers = isinstance((result.get("compare") or {}).get("tiers"), list)
        for d in by.values():
            # a tier compare does not list ran no kernel in the step
            d.setdefault("measured_us", 0.0 if have_tiers else None)
            d["predicted_minus_measured_us"] = (d["predicted_us"] - d["measured_us"]
                                                if d["measured_us"] is not None and d["predicted_complete"]
                                                else None)
        dec = meas["decomposition_us"]
        result["gap"] = {
            "by_tier": sorted(by.values(), key=lambda d: -(d["measured_us"] or 0)),
            "note": "tiers as kjoule names PyTorch's kernels (src/common/kj_kernel_class.c); each "
                    "operator is put where its PyTorch kernels land, so a tier's measured time minus "
                    "its operators' predicted time is what the operator sum misses there (bias "
                    "gradients are reductions, the master-weight copies and fused AdamW 'other'); "
                    "wall - kernel_busy is GPU idle and host time no operator holds",
            "wall_minus_kernel_busy_us": (dec["wall"] - dec["kernel_busy"]
                                          if dec["wall"] is not None and dec["kernel_busy"] is not None
                                          else None)}
    result["commands"] = R.commands
    result["skipped"] = R.skipped
    result["seconds"] = round(time.monotonic() - R.t0, 1)

    out_path = os.path.abspath(a.output)
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    tmp = out_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1, allow_nan=False)
    os.replace(tmp, out_path)

    # the short table, last
    f = lambda x, s=1.0, d=2: "-" if x is None else f"{x / s:.{d}f}"
    print(f"{'operator':<28} {'count':>5} {'shape':<18} {'pred ms':>8} {'pred J':>8} {'sweep ms':>8}")
    for e in result["operators"]:
        m = e["measured_at_shape"]
        sw = None
        if m and m["fwd_us"] is not None and (not e["backward"] or m["bwd_us"] is not None):
            sw = e["count"] * (m["fwd_us"] + (m["bwd_us"] if e["backward"] else 0.0))
        print(f"{e['op'][:28]:<28} {e['count']:>5} {e['shape']:<18} {f(e.get('step_time_us'), 1e3):>8} "
              f"{f(e.get('step_energy_uj'), 1e6, 3):>8} {f(sw, 1e3):>8}")
    ms = result["measured"] or {}
    print(f"step: predicted {f(p and p['time_us'], 1e3)} ms, {f(p and p['energy_uj'], 1e6, 3)} J; "
          f"measured {f(ms.get('step_time_us_mean'), 1e3)} ms (mean), "
          f"{f(ms.get('step_energy_j_mean'), 1, 3)} J (mean); "
          f"error time {f(result['errors'].get('time_pct'), 1, 1)} %, "
          f"energy {f(result['errors'].get('energy_pct'), 1, 1)} %")
    un = result.get("untraced") or {}
    if un:
        print(f"untraced: {f(num(un.get('ms_per_step_median')))} ms, {f(num(un.get('energy_j_per_step_nvml')), 1, 3)} J "
              f"per step; error time {f(result['errors'].get('time_pct_vs_untraced'), 1, 1)} %, "
              f"energy {f(result['errors'].get('energy_pct_vs_untraced'), 1, 1)} %; traced/untraced "
              f"{f(result['errors'].get('traced_over_untraced_step_time'), 1, 2)}x")
    if result["skipped"]:
        print(f"skipped: {len(result['skipped'])} (first: {result['skipped'][0][:150]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
