#!/usr/bin/env python3
"""Accuracy of `kjoule fit` + `kjoule predict` on a GPU, from measured numbers only.

For each operator: a training sweep with --energy over a grid, a time-only sweep over the same
range at half its 'add' steps (dense: time is cheap to sample, energy is not), a held-out sweep
with --energy of shapes INSIDE the range but on neither grid (midpoints of the dense 'add' axes,
every P-th shape), and a time-only one BEYOND the grid (the 'add' axes from one step past the end
up to twice the end). Fits models on the two training CSVs (time models learn from both, energy
models from the energy grid), predicts every held-out row with `kjoule predict --json`, and
writes MAPE of time and energy per operator and direction, the sweep speed (seconds per sample
with --energy from the energy grid, without from the dense one) and every raw (measured,
predicted) pair to the output JSON with the device, date and commands.

--from-csv DIR measures nothing: it fits and predicts again from CSVs an earlier run left
(DIR/{op}/{train,dense,inside,beyond}/sampling_data/, as scripts/gpu/sweep.sh returns them in
sweep_csv.tar.gz), so a change to the fit is judged on measured data without a GPU. The result
names the device the CSVs were measured on: from DIR/measured.json when the folder has one
({"device": ..., "date": ..., "ops": {OP: {"date": ..., "s_per_sample_energy": ...}}}), else from
an earlier result given to --merge, else from the GPU tag of the CSV file names; with the features
version of the fitted models, the git commit and the command.

usage: run.py --kjoule KJOULE [--ops linear1,...] [--out-dir DIR] [-o RESULT.json]
              [--heldout N] [--heldout-offset F] [--energy-every third|all] [--precision fp16]
              [--merge EARLIER.json] [--energy-s S] [--from-csv DIR | --train-from-csv DIR]
              [--deadline-s S] [--extra-train-offset F ...] [--extra-energy]
--train-from-csv DIR (repeatable) fits on earlier runs' CSVs: every set under DIR/{op}/ but
'beyond' (train, dense, extra*, and an earlier held-out 'inside', which becomes training once it
has been scored), and measures only a fresh held-out set, shifted by --heldout-offset of the dense
step (0.5, the midpoints, by default); an operator with CSVs in none of the DIRs gets its grids
measured now. A fresh check of models whose features were chosen while looking at earlier sets.
--extra-train-offset F adds a training sweep of the dense grid shifted by F of its step
(F = 0.625: dims 64 past a 128-multiple, which GEMM tiles quantize on); time only, or with
--extra-energy a second sweep with energy on about --heldout of its shapes (the energy models then
see lengths and dims off the 128-multiples too); refused when F is the held-out offset.
--merge keeps the operators of an earlier result that this run does not measure (each operator's
entry carries its own device and date), so the set can be measured over several shorter runs.
--energy-s sets the worker's energy window per direction (KJ_SWEEP_ENERGY_S; default 0.5 s).
Runs on the GPU machine (needs the real kjoule-sweep-worker); the stand-in worker
(KJ_SWEEP_WORKER=tests/tools/sweep_worker_standin.py) exercises it on the CPU."""
import argparse
import csv
import datetime
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time

# operator: columns, start, step, end, kind ('mul' axes are kept, 'add' axes are probed)
GRIDS = {
    "linear1": (["mp", "b", "l", "dim"], [1, 1, 512, 1024], [2, 4, 512, 1024], [2, 4, 2048, 4096], "mmaa"),
    "linear2": (["mp", "b", "l", "dim"], [1, 1, 512, 1024], [2, 4, 512, 1024], [2, 4, 2048, 4096], "mmaa"),
    "linear3": (["mp", "b", "l", "dim"], [1, 1, 512, 1024], [2, 4, 512, 1024], [2, 4, 2048, 4096], "mmaa"),
    "linear4": (["mp", "b", "l", "dim"], [1, 1, 512, 1024], [2, 4, 512, 1024], [2, 4, 2048, 4096], "mmaa"),
    # dim is a kept axis: its midpoints would be head sizes the fused kernel does not build (80, 112).
    # l in steps of 256 (dense 128): cuDNN's fused attention times step every 128 of the length and
    # run faster at 256-multiples (scripts/gpu/sdpa_tiles.sh), so a grid of 256-multiples alone
    # never shows the model the other lengths (held-out lengths 128 past one were predicted 9 % fast)
    "flash_atten": (["mp", "b", "h", "l", "dim"], [1, 2, 16, 512, 1024], [2, 2, 2, 256, 2],
                    [2, 2, 32, 2048, 2048], "mmmam"),
    "layernorm": (["b", "l", "dim"], [1, 512, 1024], [2, 512, 1024], [4, 2048, 4096], "maa"),
    "softmax": (["mp", "b", "h", "l"], [1, 1, 16, 512], [2, 4, 2, 512], [2, 4, 32, 2048], "mmma"),
}


SHORT_US = 20  # the held-out time error is also reported under and over this measured time


def config(op, starts, steps, ends, kinds):
    cols = GRIDS[op][0]
    ops = ["mul" if k == "m" else "add" for k in kinds]
    q = lambda xs: "[" + ", ".join("'%s'" % x for x in xs) + "]"
    n = lambda xs: "[" + ", ".join(str(x) for x in xs) + "]"
    return ("{\n  \"kernel_name\": \"%s\",\n  \"columns_name\": %s,\n  \"first_n_column\": %d,\n"
            "  \"starts\": %s,\n  \"steps\": %s,\n  \"ends\": %s,\n  \"operators\": %s,\n"
            "  \"warmup_shapes\": %s,\n  \"run\": \"get_all\"\n}\n"
            % (op, q(cols + ["F_dur(us)", "B_dur(us)"]), len(cols), n(starts), n(steps), n(ends),
               q(ops), n(GRIDS[op][1])))


def coprime_parts(n, counts, want):
    """Every P-th of n shapes leaves about `want`; P shares no factor with any axis's count, so the
    chosen shapes do not all fall on one value of the fastest axes."""
    if n <= 2 * want:
        return 1
    p = max(1, round(n / want))
    while p > 1 and any(math.gcd(p, c) > 1 for c in counts if c > 1):
        p += 1
    return p


def axis_count(s, p, e, k):
    if k == "m":
        n, x = 0, s
        while x <= e:
            n, x = n + 1, x * p
        return n
    return (e - s) // p + 1


def sets(op, heldout=24, energy_third=True, offset=0.5):
    cols, st, sp, en, kinds = GRIDS[op]
    # dense: the add axes at half their step (time only)
    dsp = [p if k == "m" else max(1, p // 2) for p, k in zip(sp, kinds)]
    # inside: the dense add axes shifted by `offset` of their step (0.5: the midpoints), on neither grid
    off = [0 if k == "m" else max(1, int(round(p * offset))) for p, k in zip(dsp, kinds)]
    ist = [s + o for s, o in zip(st, off)]
    ien = [e if k == "m" else e - p + o for e, p, o, k in zip(en, dsp, off, kinds)]
    counts = [axis_count(s, p, e, k) for s, p, e, k in zip(ist, dsp, ien, kinds)]
    n = math.prod(counts)
    # the energy grid: every P-th shape of the training grid, about a third but at least 20 shapes
    # (power varies slowly with the shape; the dense time-only grid covers every point of it)
    tcounts = [axis_count(s, p, e, k) for s, p, e, k in zip(st, sp, en, kinds)]
    tn = math.prod(tcounts)
    ep = coprime_parts(tn, tcounts, max(24, tn // 3)) if energy_third else 1
    ep = ep if tn // ep >= 20 else 1
    # beyond: add axes from end + step to 2 * end, mul axes at their start
    bst = [s if k == "m" else e + p for s, p, e, k in zip(st, sp, en, kinds)]
    ben = [s if k == "m" else 2 * e for s, e, k in zip(st, en, kinds)]
    return {"train": (st, sp, en, True, ep), "dense": (st, dsp, en, False, 1),
            "inside": (ist, dsp, ien, True, coprime_parts(n, counts, heldout)),
            "beyond": (bst, sp, ben, False, 1)}


def extra_set(op, offset, energy_shapes=0):
    """A further training sweep: the dense add axes shifted by `offset` of their step (shapes off
    the 128-multiples a GEMM's tiles quantize on, when the offset is odd eighths); time only, or with
    energy on every P-th shape (about energy_shapes of them) when energy_shapes > 0."""
    st, sp, en, _, parts = sets(op, energy_shapes or 24, offset=offset)["inside"]
    return (st, sp, en, True, parts) if energy_shapes else (st, sp, en, False, 1)


SKIP = ("inside", "beyond", "fit", "models")


def copy_training(dirs, op, opdir):
    """Copies every set of each DIR/op except its 'beyond' (earlier held-out sets included) into
    opdir as TAG_SET (TAG: the folder's name); returns the names of the sets copied."""
    found = []
    for d in dirs:
        src = os.path.join(d, op)
        if not os.path.isdir(src):
            continue
        tag = os.path.basename(os.path.normpath(d))
        for sub in sorted(os.listdir(src)):
            if sub in ("beyond", "fit", "models") or not os.path.isdir(os.path.join(src, sub, "sampling_data")):
                continue
            shutil.copytree(os.path.join(src, sub), os.path.join(opdir, f"{tag}_{sub}"))
            found.append(f"{tag}_{sub}")
    return found


def training_sets(opdir, names=None):
    """The sets of opdir a fit learns from: those named (the ones this run measured or copied), or
    with names None (an earlier run's folder, --from-csv) every one with sampling data but the
    held-out ones."""
    have = [s for s in os.listdir(opdir) if os.path.isdir(os.path.join(opdir, s, "sampling_data"))]
    return tuple(sorted(s for s in have if s not in SKIP and (names is None or s in names)))


def sh(cmd, log):
    log.append(" ".join(cmd))
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stderr[-2000:])
    return r


def speed_of(logfile):
    speed = None
    try:
        for line in open(logfile):
            m = re.search(r"Speed: ([0-9.]+)s/sample", line)
            if m:
                speed = float(m.group(1))
    except OSError:
        pass
    return speed


def write(result, earlier, a, device, date, cmds):
    """Writes the result so far, atomically: this run's operators, then the earlier file's others;
    returns what it wrote."""
    doc = dict(result)
    doc["ops"] = dict(result["ops"])
    for op, e in earlier.items():
        doc["ops"].setdefault(op, e)
    ops = list(doc["ops"].values())
    if device is None:  # a refit: the devices the operators' CSVs were measured on
        device = "; ".join(sorted({e["device"] for e in ops if e.get("device")})) or None
    versions = sorted({v for e in ops for v in (e.get("features_version") if isinstance(e.get("features_version"), list)
                                               else [e.get("features_version")]) if v is not None})
    doc.update({"benchmark": "predict_accuracy", "device": device, "date": date,
                "command": " ".join(sys.argv), "precision": a.precision,
                "features_version": versions[0] if len(versions) == 1 else versions,
                "git_commit": git_commit(), "commands_run": len(cmds), "first_commands": cmds[:8]})
    os.makedirs(os.path.dirname(os.path.abspath(a.output)), exist_ok=True)
    tmp = a.output + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, a.output)
    return doc


def gpu_name():
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True).stdout.strip().splitlines()[0]
    except (OSError, IndexError):
        return os.environ.get("KJ_BENCH_DEVICE", "unknown")


def csv_facts(from_dir, op, earlier_entry):
    """Where and when DIR/op's CSVs were measured, for a refit that measures nothing: DIR's
    measured.json (the folder's device and date, and per operator its date and sweep speeds) first,
    then the entry of an earlier result (--merge), then the GPU tag of the CSV file names. Returns a
    dict of device, date and speed (keys absent where nothing says)."""
    facts = {}
    try:
        meta = json.load(open(os.path.join(from_dir, "measured.json")))
    except OSError:
        meta = None
    except ValueError as e:
        sys.exit(f"run.py: {os.path.join(from_dir, 'measured.json')}: not JSON ({e})")
    if meta is not None:
        per_op = meta.get("ops", {}).get(op, {})
        for k in ("device", "date"):
            v = per_op.get(k, meta.get(k))
            if v:
                facts[k] = v
        speed = {k: per_op[k] for k in ("s_per_sample_energy", "s_per_sample_no_energy") if k in per_op}
        if speed:
            facts["speed"] = speed
    if meta is not None and meta.get("energy_window_s"):
        facts["energy_window_s"] = str(meta["energy_window_s"])
    for k in ("device", "date", "energy_window_s", "speed", "seconds"):
        if k not in facts and k in earlier_entry:
            facts[k] = earlier_entry[k]
    if "device" not in facts:
        tags = sorted({f.split("_")[0] for root, _, files in os.walk(os.path.join(from_dir, op))
                       for f in files if f.endswith(".csv") and f"_{op}_" in f})
        if tags:
            facts["device"] = " ".join(tags) + " (the CSV files' GPU tag; no measured.json in " + from_dir + ")"
    return facts


def git_commit():
    """The checkout's commit, '+dirty' when its tracked files differ from it; None outside git."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        r = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True, text=True)
        d = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True)
    except OSError:
        return None
    return (r.stdout.strip() + ("+dirty" if d.stdout.strip() else "")) or None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kjoule", required=True)
    ap.add_argument("--ops", default=",".join(GRIDS))
    ap.add_argument("--out-dir", default="/tmp/kj_predict_accuracy")
    ap.add_argument("-o", "--output", default="bench/results/predict_accuracy.json")
    ap.add_argument("--heldout", type=int, default=24, help="about this many held-out shapes inside the grid")
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--from-csv", default=None, help="fit and predict again from an earlier run's CSVs")
    src.add_argument("--train-from-csv", action="append", default=[],
                     help="fit on an earlier run's training CSVs and measure only a fresh held-out set")
    ap.add_argument("--heldout-offset", type=float, default=0.5,
                    help="held-out shapes at this fraction of the dense step past each point (0.5: midpoints)")
    ap.add_argument("--extra-train-offset", type=float, action="append", default=[],
                    help="also train on a time-only sweep at this fraction of the dense step (repeatable)")
    ap.add_argument("--extra-energy", action="store_true",
                    help="measure energy on every P-th shape of each --extra-train-offset sweep "
                         "(about --heldout of them); time only without")
    ap.add_argument("--precision", default="fp16")
    ap.add_argument("--gpu-name", default=None)
    ap.add_argument("--merge", default=None)
    ap.add_argument("--energy-s", default="0.5")
    ap.add_argument("--deadline-s", type=float, default=0,
                    help="start no operator that the pace so far says would end past this many seconds")
    ap.add_argument("--energy-every", choices=("third", "all"), default="third",
                    help="energy on a third of the training grid (default) or all of it")
    a = ap.parse_args()
    os.environ.setdefault("KJ_SWEEP_ENERGY_S", a.energy_s)
    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    # a refit measures nothing here: the device is the CSVs' (per operator, below), not this machine's
    device = None if a.from_csv else gpu_name()
    kj, out = a.kjoule, a.out_dir
    os.makedirs(out, exist_ok=True)
    cmds, result = [], {"ops": {}}
    earlier = {}
    if a.merge and os.path.exists(a.merge):
        earlier = json.load(open(a.merge)).get("ops", {})
    name_args = ["--gpu-name", a.gpu_name] if a.gpu_name else []
    t_start = time.monotonic()
    ops = a.ops.split(",")
    for k, op in enumerate(ops):
        if a.deadline_s and k and time.monotonic() - t_start > a.deadline_s * (k / (k + 1)):
            # the ops done so far took (elapsed / k) each: one more would pass the deadline
            print(f"deadline: {op} and later not measured ({time.monotonic() - t_start:.0f} s used)", flush=True)
            result.setdefault("not_measured", []).extend(ops[k:])
            break
        opdir = os.path.join(out, op)
        grids = sets(op, a.heldout, a.energy_every == "third", a.heldout_offset)
        extras = {f"extra{i + 1}": extra_set(op, f) for i, f in enumerate(a.extra_train_offset)}
        if a.extra_energy:  # energy on a subset of each extra's shapes, beside its time on all
            extras.update({f"extra{i + 1}_energy": extra_set(op, f, a.heldout)
                           for i, f in enumerate(a.extra_train_offset)})
        clash = [f for f in a.extra_train_offset if abs(f - a.heldout_offset) < 1e-9]
        if clash:
            sys.exit(f"run.py: --extra-train-offset {clash[0]} is the held-out offset: those shapes would be trained on")
        if a.from_csv:
            src = os.path.join(a.from_csv, op)
            if not os.path.isdir(src):
                print(f"{op}: no CSVs under {src}; not measured", flush=True)
                result.setdefault("not_measured", []).append(op)
                continue
            shutil.rmtree(opdir, ignore_errors=True)
            shutil.copytree(src, opdir, ignore=shutil.ignore_patterns("models", "fit"))
        else:
            print(f"== {op}: sweeps", flush=True)
            measure = dict(grids, **extras)
            if a.train_from_csv:  # a fresh folder: earlier runs' sets and a held-out set measured now
                shutil.rmtree(opdir, ignore_errors=True)
            copied = copy_training(a.train_from_csv, op, opdir)
            if copied:
                # the training sets of earlier runs (their held-out sets too, now as training);
                # a fresh held-out set now
                measure = dict({"inside": grids["inside"]}, **extras)
            elif a.train_from_csv:
                print(f"{op}: no CSVs under {', '.join(a.train_from_csv)}: its grids measured now", flush=True)
            for which, (st, sp, en, energy, parts) in measure.items():
                path = os.path.join(opdir, f"{op}_{which}.yml")
                os.makedirs(opdir, exist_ok=True)
                open(path, "w").write(config(op, st, sp, en, GRIDS[op][4]))
                args = ["--parts", str(parts), "--part", "1"] if parts > 1 else []
                sh([kj, "sweep", path, "--precision", a.precision, "--out", os.path.join(opdir, which)]
                   + (["--energy"] if energy else []) + args + name_args, cmds)
        # the fit learns from both training sweeps: time from both, energy from the energy grid
        fitdir = os.path.join(opdir, "fit")
        shutil.rmtree(fitdir, ignore_errors=True)
        os.makedirs(fitdir)
        training = training_sets(opdir, None if a.from_csv else set(copied) | (set(measure) - {"inside", "beyond"}))
        for i, which in enumerate(training):
            d = os.path.join(opdir, which, "sampling_data")
            for f in (os.listdir(d) if os.path.isdir(d) else []):
                if f.endswith(".csv"):
                    gpu = f.split("_")[0]
                    shutil.copy(os.path.join(d, f),
                                os.path.join(fitdir, f"{gpu}_{op}_{a.precision}_{len(training)}_{i + 1}.csv"))
        models_dir = os.path.join(opdir, "models")
        shutil.rmtree(models_dir, ignore_errors=True)
        sh([kj, "fit", fitdir, "-o", models_dir], cmds)
        try:
            models = json.load(open(os.path.join(models_dir, "models.json")))["models"]
        except (OSError, ValueError, KeyError) as e:
            print(f"{op}: no models ({e}); not measured", flush=True)
            result.setdefault("not_measured", []).append(op)
            continue
        entry = {"grid": dict(zip(["starts", "steps", "ends"], grids["train"][:3])),
                 "dense_grid": dict(zip(["starts", "steps", "ends"], grids["dense"][:3])),
                 "heldout_grid": dict(zip(["starts", "steps", "ends", "energy", "every"], grids["inside"])),
                 "columns": GRIDS[op][0]}
        if extras:
            entry["extra_training"] = [{"offset": f, "energy_every": extras[f"{k}_energy"][4] if a.extra_energy else None,
                                        **dict(zip(["starts", "steps", "ends"], extras[k][:3]))}
                                       for f, k in zip(a.extra_train_offset, extras)]
        for which in ("inside", "beyond"):
            d = os.path.join(opdir, which, "sampling_data")
            files = [f for f in os.listdir(d) if f"_{op}_{a.precision}_" in f] if os.path.isdir(d) else []
            rows = []
            for f in files:
                gpu = f.split("_")[0]
                for r in csv.DictReader(open(os.path.join(d, f))):
                    if r.get("status") != "ok":
                        continue
                    shape = ",".join(r[c] for c in GRIDS[op][0])
                    for prop, p in (("fwd", "F"), ("bwd", "B")):
                        pr = sh([kj, "predict", "--models", models_dir, "--gpu", gpu,
                                 "--op", op, "--precision", a.precision, "--prop", prop, "--shape",
                                 shape, "--json"], cmds)
                        if pr.returncode:
                            continue
                        pj = json.loads(pr.stdout)
                        rows.append({"shape": shape, "prop": prop,
                                     "time_us": float(r[f"{p}_dur(us)"]) if r.get(f"{p}_dur(us)", "-") != "-" else None,
                                     "time_us_pred": pj["time_us"],
                                     "energy_uj": float(r[f"{p}_energy(uJ)"]) if r.get(f"{p}_energy(uJ)", "-") != "-" else None,
                                     "energy_uj_pred": pj["energy_uj"],
                                     # the error fit measured on figures of this size, as predict quotes it
                                     "time_quoted_mape_pct": pj.get("time_mape_at_size_pct"),
                                     "energy_quoted_mape_pct": pj.get("energy_mape_at_size_pct")})
            summ = {}
            for prop in ("fwd", "bwd"):
                for t in ("time_us", "energy_uj"):
                    errs = [abs(x[t + "_pred"] - x[t]) / x[t] * 100 for x in rows
                            if x["prop"] == prop and x[t] and x[t + "_pred"]]
                    summ[f"{prop}_{t.split('_')[0]}_mape_pct"] = sum(errs) / len(errs) if errs else None
                    summ[f"{prop}_{t.split('_')[0]}_n"] = len(errs)
                # short kernels miss by more: the time error under and over SHORT_US of measured time
                for side, keep in (("under", lambda v: v < SHORT_US), ("over", lambda v: v >= SHORT_US)):
                    errs = [abs(x["time_us_pred"] - x["time_us"]) / x["time_us"] * 100 for x in rows
                            if x["prop"] == prop and x["time_us"] and x["time_us_pred"] and keep(x["time_us"])]
                    summ[f"{prop}_time_mape_pct_{side}_{SHORT_US}us"] = sum(errs) / len(errs) if errs else None
                    summ[f"{prop}_time_n_{side}_{SHORT_US}us"] = len(errs)
            entry[which] = {"summary": summ, "rows": rows}
        entry["models"] = [m for m in models if m["op"] == op]
        speeds = {}
        for key, sub in (("energy", "train"), ("no_energy", "dense")):
            logs = os.path.join(opdir, sub, "sampling_log")
            fs = [f for f in os.listdir(logs) if f"_{op}_" in f] if os.path.isdir(logs) else []
            speeds[f"s_per_sample_{key}"] = speed_of(os.path.join(logs, fs[0])) if fs else None
        entry["speed"] = speeds
        entry.update({"device": device, "date": date, "energy_window_s": os.environ["KJ_SWEEP_ENERGY_S"],
                      "seconds": round(time.monotonic() - t_start, 1)})
        versions = sorted({m["features"] for m in entry["models"] if "features" in m})
        entry.update({"features_version": versions[0] if len(versions) == 1 else versions,
                      "command": " ".join(sys.argv), "git_commit": git_commit()})
        if a.from_csv:  # the measurements are the CSVs': their device and date, not this machine's
            for k in ("device", "date", "seconds", "energy_window_s"):  # this refit's, not the measurement's
                entry.pop(k)
            facts = csv_facts(a.from_csv, op, earlier.get(op, {}))
            entry["speed"].update(facts.pop("speed", {}))  # the measurement's speeds over the logs' (if any)
            entry.update(facts)
            if not entry.get("device"):
                sys.exit(f"run.py: {a.from_csv}/{op}: no measured.json, no --merge entry and no GPU tag in "
                         "the CSV file names: the device these CSVs were measured on is unknown")
            entry["refit_from_csv"] = {"dir": a.from_csv, "date": date}
        if a.train_from_csv:
            entry["trained_on_csv"] = {"dirs": a.train_from_csv, "heldout_offset": a.heldout_offset,
                                       "training_sets": list(training),
                                       "note": "training rows from those earlier runs (their held-out "
                                               "sets included, as training); held-out shapes measured now"}
        result["ops"][op] = entry
        write(result, earlier, a, device, date, cmds)
        print(f"{op}: done at {time.monotonic() - t_start:.0f} s", flush=True)
    doc = write(result, earlier, a, device, date, cmds)
    # the short table, last
    print(f"{'op':<12} {'in fwd t%':>9} {'in bwd t%':>9} {'in fwd E%':>9} {'in bwd E%':>9} "
          f"{'out fwd t%':>10} {'out bwd t%':>10} {'s/sample':>8} {'s/s+E':>7}")
    fmt = lambda x: "-" if x is None else f"{x:.1f}"
    for op, e in doc["ops"].items():
        i, b = e["inside"]["summary"], e["beyond"]["summary"]
        print(f"{op:<12} {fmt(i['fwd_time_mape_pct']):>9} {fmt(i['bwd_time_mape_pct']):>9} "
              f"{fmt(i['fwd_energy_mape_pct']):>9} {fmt(i['bwd_energy_mape_pct']):>9} "
              f"{fmt(b['fwd_time_mape_pct']):>10} {fmt(b['bwd_time_mape_pct']):>10} "
              f"{fmt(e['speed']['s_per_sample_no_energy']):>8} {fmt(e['speed']['s_per_sample_energy']):>7}")


main()
