#!/usr/bin/env python3
"""Several GPUs of one machine: the five NCCL collectives swept over 2 GPUs (9 training sizes,
8 KiB..512 MiB in steps of 4, and 5 held-out sizes between and past them, 16 KiB..1 GiB), fitted,
the held-out sizes predicted; bus bandwidth at 1 GiB against the NVLink peak; then a tensor-parallel
LLaMA (examples/llama7b_tp.py; tp_graph: its decode steps replayed as CUDA graphs) and a DDP GPT-2
(examples/ddp_train.py) under `kjoule run` with torchrun (--programs picks them), `kjoule compare`,
the operators `kjoule predict --model` needs for each program's MODEL.yml swept on one GPU on a small
grid around its shapes (bench/predict_step's grids; --no-op-sweeps leaves them out), one fit of
those and the collectives, `kjoule predict --model ... --run` of each, and for those named by
--replay a `kjoule replay` and compare again: each rank's explained_fraction. Every step has its own
timeout and log; a failed step is recorded and the rest go on. Writes one JSON (bench/results
style: device, date, command, raw numbers).

    python3 bench/multi_gpu/run.py --kjoule $KJ_BUILD/kjoule --work /tmp/mg --log-dir $OUT -o $OUT/multi_gpu.json

--reanalyze OLD.json recomputes, on any machine, what this build's `kjoule fit` and `kjoule predict`
make of an earlier result: its training rows written back as the sweep's CSVs, fitted, the held-out
sizes predicted; the predictions, errors and their summary replaced, the GPU's measurements (rows,
held-out figures, bus bandwidth, programs) kept, analysis_command/date/version recorded:

    python3 bench/multi_gpu/run.py --kjoule build/kjoule --reanalyze bench/results/multi_gpu.json -o NEW.json
"""
import argparse
import csv
import datetime
import functools
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "trace_overhead"))
from capture_pairs import gpu_name, write_json  # noqa: E402  (one copy)

OPS = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "send_recv"]
NVLINK4_GBPS = 450.0  # H100/H200 SXM NVLink 4: 18 links x 25 GB/s, per direction
CFG = """{{"kernel_name": "{op}", "columns_name": ['gpus', 'bytes', 'F_dur(us)', 'B_dur(us)'],
 "first_n_column": 2, "starts": [{g}, {b0}], "steps": [2, {step}], "ends": [{g}, {b1}],
 "operators": ['mul', 'mul'], "warmup_shapes": [{g}, 1048576], "warmup": 5, "active": 10,
 "run": "get_all"}}
"""
# a collective's CSV columns, in the sweep's order (kjoule sweep --energy)
CSV_COLS = ["gpus", "bytes", "F_dur(us)", "B_dur(us)", "F_energy(uJ)", "F_energy_unc(uJ)", "B_energy(uJ)",
            "B_energy_unc(uJ)", "status", "algbw(GB/s)", "busbw(GB/s)"]
LOG_LOCK = threading.Lock()


def step(name, cmd, log_dir, timeout, steps, env=None):
    """Run cmd with a timeout, its output into LOG_DIR/multi_gpu.log; record the step."""
    t0 = time.time()
    rc, out = None, ""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        rc, out = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        rc = "timeout"
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
    except OSError as e:
        rc, out = "cannot start", str(e)
    dt = time.time() - t0
    with LOG_LOCK:  # steps may run side by side (operator sweeps on several GPUs)
        with open(os.path.join(log_dir, "multi_gpu.log"), "a") as f:
            f.write(f"\n===== {name} (rc {rc}, {dt:.1f} s): {' '.join(cmd)}\n{out[-20000:]}\n")
        steps.append({"step": name, "rc": rc, "seconds": round(dt, 1)})
        print(f"== {name}: rc {rc} in {dt:.1f} s", flush=True)
    return rc, out


def rows(path):
    try:
        return list(csv.DictReader(open(path)))
    except OSError:
        return []


def json_of(text):
    i = text.find("{")
    try:
        return json.loads(text[i:]) if i >= 0 else None
    except ValueError:
        return None


def predict_held(kj, models, op, g, e, log_dir, steps):
    """Held-out entry e (bytes and the measured figures) with kjoule predict's figures and errors."""
    rc, out = step(f"predict {op} {e['bytes']}", [kj, "predict", "--gpu", "G", "--op", op, "--precision", "fp16",
                                                 "--prop", "fwd", "--shape", f"{g},{e['bytes']}", "--models",
                                                 models, "--json"], log_dir, 30, steps)
    j = json_of(out) if rc == 0 else None
    e.update({"predicted_us": j.get("time_us") if j else None, "predicted_uj": j.get("energy_uj") if j else None,
              "in_grid": j.get("in_grid") if j else None})
    for k in ("us", "uj"):
        m, p = e.get(f"measured_{k}"), e[f"predicted_{k}"]
        e[f"error_{k}_pct"] = round(100 * (p - m) / m, 2) if m and p else None
    return e


def summary(preds):
    """Mean absolute errors of the held-out predictions: all of them, and those inside the grid."""
    def mape(k, inside):
        v = [abs(x[f"error_{k}_pct"]) for x in preds if x[f"error_{k}_pct"] is not None and (x["in_grid"] or not inside)]
        return round(sum(v) / len(v), 2) if v else None
    return {"n": len(preds), "n_in_grid": sum(1 for x in preds if x["in_grid"]),
            "time_mape_pct": mape("us", False), "energy_mape_pct": mape("uj", False),
            "time_mape_in_grid_pct": mape("us", True), "energy_mape_in_grid_pct": mape("uj", True)}


def model_kind(models, op):
    """The kind of model fit made of op's time (models.json 'kind'; 'regressor' for the generic one)."""
    try:
        idx = json.load(open(os.path.join(models, "models.json")))
    except (OSError, ValueError):
        return None
    for m in idx.get("models", []):
        if m.get("op") == op and m.get("target") == "time" and m.get("prop") == "fwd":
            return m.get("kind", "regressor")
    return None


def write_train_csvs(src, sweep, data):
    """The collectives' training rows of result src (its sweep section) written back into DATA as
    the sweep's CSVs; exits naming the entry where a row or a collective is missing."""
    os.makedirs(data, exist_ok=True)
    for op, s in sweep.items():
        if op not in OPS or not s.get("train_rows"):
            sys.exit(f"{src}: sweep.{op}: " + ("not a collective" if op not in OPS else "no train_rows"))
        with open(os.path.join(data, f"G_{op}_fp16_1_1.csv"), "w", newline="") as f:
            wr = csv.writer(f)
            wr.writerow(CSV_COLS)
            for i, r in enumerate(s["train_rows"]):
                miss = [c for c in CSV_COLS if c not in r]
                if miss:
                    sys.exit(f"{src}: sweep.{op}.train_rows[{i}]: no {', '.join(miss)}")
                wr.writerow([r[c] for c in CSV_COLS])


def reanalyze(a, kj):
    """The earlier result a.reanalyze refitted and re-predicted by this build; exits naming the
    problem (nothing written) where the result lacks rows or fit fails."""
    src = a.reanalyze
    try:
        res = json.load(open(src))
    except (OSError, ValueError) as e:
        sys.exit(f"{src}: {e}")
    sweep, g = res.get("sweep"), res.get("gpus")
    if not isinstance(sweep, dict) or not sweep or not isinstance(g, int):
        sys.exit(f"{src}: no 'sweep' of collectives or no 'gpus': not a multi_gpu result")
    w = tempfile.mkdtemp(prefix="kj_multi_gpu_re.")
    log_dir = a.log_dir or w
    data = os.path.join(w, "train", "sampling_data")
    write_train_csvs(src, sweep, data)
    steps = []
    models = os.path.join(w, "models")
    rc, out = step("fit", [kj, "fit", data, "-o", models, "--gpu", "G"], log_dir, 120, steps)
    if rc != 0:
        sys.exit(f"{src}: kjoule fit of its training rows failed (rc {rc}): {out.strip()[-400:]}")
    for op, s in sweep.items():
        keep = ("bytes", "measured_us", "measured_uj", "busbw_gbps")
        s["held_out"] = [predict_held(kj, models, op, g, {k: h.get(k) for k in keep}, log_dir, steps)
                         for h in s.get("held_out", [])]
        s["held_out_summary"] = summary(s["held_out"])
        s["model"] = model_kind(models, op)
    bad = [x["step"] for x in steps if x["rc"] != 0]
    if bad:
        sys.exit(f"{src}: reanalysis steps failed: {bad[:8]} (log: {os.path.join(log_dir, 'multi_gpu.log')})")
    res["analysis_command"] = " ".join(sys.argv)
    res["analysis_date"] = datetime.datetime.now(datetime.timezone.utc).isoformat()
    res["analysis_version"] = subprocess.run([kj, "--version"], capture_output=True, text=True).stdout.strip()
    res["analysis_steps"] = steps
    write_json(a.out, res)
    return res


@functools.lru_cache(maxsize=None)
def grid_config():
    """bench/predict_step/run.py's sweep config of a small grid around a model's shape (one copy),
    its module loaded once."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "predict_step", "run.py")
    spec = importlib.util.spec_from_file_location("predict_step_run", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.config


def sweep_operators(kj, w, yml, log_dir, steps, done, gpus=1):
    """Every operator `kjoule predict --model yml` needs but the collectives, swept on one GPU on a
    small grid around the model's shape (bench/predict_step's grids) at the model's precision into
    w/train beside the collectives' rows; GPUS operators at a time, each on its own GPU (--device);
    done: the (op, shape) already swept, updated. Returns one entry per operator: op, shape, count,
    sweep rc."""
    empty = os.path.join(w, "empty_models")
    os.makedirs(empty, exist_ok=True)
    with open(os.path.join(empty, "models.json"), "w") as f:
        f.write('{"models": []}\n')
    rc, out = step("operators of " + os.path.basename(yml), [kj, "predict", "--models", empty, "--model", yml,
                                                           "--gpu", "G", "--json"], log_dir, 30, steps)
    j = json_of(out) if rc == 0 else None
    precision = (j or {}).get("precision") or "fp16"
    config, entries, todo = grid_config(), [], {}
    for t in (j or {}).get("operators", []):
        if t.get("tier") == "communication":
            continue
        key = (t["op"], t["shape"])
        entries.append({"op": t["op"], "shape": t["shape"], "count": t["count"], "sweep_rc": None,
                        "csv": f"G_{t['op']}_{precision}_1_1.csv"})
        if key in done or key in todo:
            continue
        text, _ = config(t["op"], t["columns"], [int(x) for x in t["shape"].split(",")])
        todo[key] = os.path.join(w, f"op_{t['op']}_{t['shape'].replace(',', 'x')}.yml")
        open(todo[key], "w").write(text)
    free = queue.Queue()  # the GPUs no sweep holds now
    for dev in range(max(1, gpus)):
        free.put(dev)

    def one(key):
        dev = free.get()
        try:
            rc, _ = step(f"sweep {key[0]} {key[1]}", [kj, "sweep", todo[key], "--precision", precision, "--energy",
                                                     "--device", str(dev), "--gpu-name", "G", "--out",
                                                     os.path.join(w, "train"), "--timeout", "60"], log_dir, 90, steps)
        finally:
            free.put(dev)
        return key, rc

    with ThreadPoolExecutor(max_workers=max(1, gpus)) as pool:
        done.update(pool.map(one, todo))
    for e in entries:
        e["sweep_rc"] = done.get((e["op"], e["shape"]))
    return entries


def operator_rows(w, entries):
    """The sweep CSVs' rows of a program's operators ({file name: rows}), kept in the result so
    that --keep can fit them again without sweeping."""
    data = os.path.join(w, "train", "sampling_data")
    return {e["csv"]: rows(os.path.join(data, e["csv"])) for e in entries if e.get("csv")}


def restore_operators(progs, w, done):
    """The kept programs' operator rows written back into w/train/sampling_data (rows of one file
    from several programs merged, each once), and their swept (op, shape) marked done."""
    data = os.path.join(w, "train", "sampling_data")
    os.makedirs(data, exist_ok=True)
    files = {}
    for p in progs.values():
        for name, rs in (p.get("operator_rows") or {}).items():
            have = files.setdefault(name, [])
            have.extend(r for r in rs if r not in have)
        for e in p.get("operators") or []:
            if e.get("sweep_rc") == 0 and (p.get("operator_rows") or {}).get(e.get("csv")):
                done[(e["op"], e["shape"])] = 0
    for name, rs in files.items():
        if not rs:
            continue
        with open(os.path.join(data, name), "w", newline="") as f:
            wr = csv.DictWriter(f, fieldnames=list(rs[0].keys()))
            wr.writeheader()
            wr.writerows(rs)


def ranks_explained(comp):
    """Each rank's explained_fraction from compare's JSON job section (None where not computed)."""
    job = (comp or {}).get("job") or {}
    return [{"rank": r.get("rank"), "explained_fraction": r.get("explained_fraction"),
             "busy_us": r.get("busy_us"), "nccl_exposed_us": r.get("nccl_exposed_us")}
            for r in job.get("ranks") or []]


def table(sweep, progs):
    """The short table: held-out errors per collective, busbw at the largest size, the programs."""
    print("\nop              held-out time MAPE  energy MAPE  (in grid: time, energy)  busbw@largest (GB/s, % of 450)")
    f = lambda v: f"{v:6.1f} %" if v is not None else "     -"
    for op in OPS:
        if op not in sweep:
            continue
        s = sweep[op]
        m = s.get("held_out_summary") or summary(s["held_out"])
        bw = s["busbw_at_largest_gbps"]
        print(f"{op:16s} {f(m['time_mape_pct']):>18s} {f(m['energy_mape_pct']):>12s}  "
              f"({f(m['time_mape_in_grid_pct'])}, {f(m['energy_mape_in_grid_pct'])})  "
              f"{bw if bw is not None else '-'} ({s['of_nvlink_peak_pct']} %)")
    for name, p in progs.items():
        ag = ((p.get("predict") or {}).get("against") or {})
        ef = [r["explained_fraction"] for r in p.get("ranks_after_replay") or []]
        print(f"{name}: run rc {p['run_rc']}; predict errors {ag.get('errors_pct')}"
              + (f"; explained_fraction per rank after replay {ef}" if ef else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kjoule", required=True)
    ap.add_argument("--work", default="/tmp/kj_multi_gpu")
    ap.add_argument("--log-dir", help="where multi_gpu.log goes (.; with --reanalyze its work folder)")
    ap.add_argument("--gpus", type=int, default=2)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--skip-programs", action="store_true")
    ap.add_argument("--programs", nargs="+", choices=["tp", "tp_graph", "ddp"], default=["tp", "tp_graph", "ddp"],
                    help="the traced programs (tp_graph: the TP decode replayed as CUDA graphs)")
    ap.add_argument("--no-op-sweeps", action="store_true",
                    help="predict the programs from the collectives alone (no operator sweeps)")
    ap.add_argument("--replay", nargs="*", default=["tp", "tp_graph"],
                    help="programs replayed after their trace (kjoule replay --budget 100), then compared"
                         " again for each rank's explained_fraction")
    ap.add_argument("--held-ops", nargs="+", help="the collectives whose held-out sizes are swept and predicted (all)")
    ap.add_argument("--keep", metavar="OLD.json", help="an earlier result of the same kind of machine: its collectives "
                    "(rows, held-out figures, models refitted from its rows) and its programs are kept, no collective "
                    "is swept, and only --programs run (each replacing its earlier entry)")
    ap.add_argument("--op-gpus", type=int, default=1, help="operator sweeps side by side, one a GPU (1)")
    ap.add_argument("--reanalyze", help="an earlier result: refit its training rows and predict its held-out "
                    "sizes with this build, on the CPU")
    ap.add_argument("-o", "--out", required=True)
    a = ap.parse_args()
    if a.reanalyze:
        res = reanalyze(a, os.path.abspath(a.kjoule))
        table(res["sweep"], res.get("programs") or {})
        return 0
    a.log_dir = a.log_dir or "."
    kj, w, g = a.kjoule, a.work, a.gpus
    os.makedirs(w, exist_ok=True)
    os.makedirs(a.log_dir, exist_ok=True)
    steps = []
    env = dict(os.environ, KJ_NCCL_ENERGY_S=os.environ.get("KJ_NCCL_ENERGY_S", "0.5"))
    res = {"bench": "multi_gpu", "date": datetime.datetime.now().isoformat(timespec="seconds"),
           "command": " ".join(sys.argv), "gpus": g, "steps": steps,
           "nvlink_peak_gbps_per_direction": NVLINK4_GBPS}
    name = gpu_name()
    res["device"] = name.splitlines()[:g] if name else None
    kept = None
    if a.keep:
        try:
            kept = json.load(open(a.keep))
        except (OSError, ValueError) as e:
            sys.exit(f"{a.keep}: {e}")
        if not isinstance(kept.get("sweep"), dict) or kept.get("gpus") != g:
            sys.exit(f"{a.keep}: no 'sweep' of collectives over {g} GPUs: not a multi_gpu result to keep")
        write_train_csvs(a.keep, kept["sweep"], os.path.join(w, "train", "sampling_data"))
        res["kept"] = {"from": a.keep, "date": kept.get("date"), "command": kept.get("command"),
                       "device": kept.get("device"), "steps": kept.get("steps"),
                       "what": "the collectives' sweep; the programs not run by this command"}
    swept_ops = [] if kept else OPS  # the collectives this command sweeps
    # 1. sweeps: training sizes and held-out sizes, every collective
    for op in swept_ops:
        for kind, b0, stepf, b1 in (("train", 8192, 4, 512 << 20), ("held", 16384, 16, 1 << 30)):
            if kind == "held" and a.held_ops and op not in a.held_ops:
                continue
            cfg = os.path.join(w, f"{op}_{kind}.yml")
            open(cfg, "w").write(CFG.format(op=op, g=g, b0=b0, step=stepf, b1=b1))
            step(f"sweep {op} {kind}", [kj, "sweep", cfg, "--gpus", str(g), "--energy", "--gpu-name", "G",
                                        "--out", os.path.join(w, kind), "--timeout", "60"],
                 a.log_dir, 75, steps, env)
    step("fit", [kj, "fit", os.path.join(w, "train", "sampling_data"), "-o", os.path.join(w, "models"),
                 "--gpu", "G"], a.log_dir, 120, steps)
    sweep = dict(kept["sweep"]) if kept else {}
    models = os.path.join(w, "models")
    for op in swept_ops:
        train = rows(os.path.join(w, "train", "sampling_data", f"G_{op}_fp16_1_1.csv"))
        held = rows(os.path.join(w, "held", "sampling_data", f"G_{op}_fp16_1_1.csv"))
        preds = []
        for r in held:
            if r.get("status") != "ok":
                continue
            preds.append(predict_held(kj, models, op, g, {
                "bytes": int(r["bytes"]), "measured_us": float(r["F_dur(us)"]),
                "measured_uj": float(r["F_energy(uJ)"]) if r.get("F_energy(uJ)", "-") != "-" else None,
                "busbw_gbps": float(r["busbw(GB/s)"]) if r.get("busbw(GB/s)", "-") != "-" else None},
                a.log_dir, steps))
        big = [r for r in held + train if r.get("status") == "ok" and r.get("busbw(GB/s)", "-") != "-"]
        top = max(big, key=lambda r: int(r["bytes"])) if big else None
        sweep[op] = {"train_rows": train, "held_out": preds, "held_out_summary": summary(preds),
                     "model": model_kind(models, op),
                     "largest_bytes": int(top["bytes"]) if top else None,
                     "busbw_at_largest_gbps": float(top["busbw(GB/s)"]) if top else None,
                     "of_nvlink_peak_pct": round(100 * float(top["busbw(GB/s)"]) / NVLINK4_GBPS, 1) if top else None}
    res["sweep"] = sweep
    write_json(a.out, res)  # kept so far, should a later step run past the caller's limit
    # 2. the programs: tensor-parallel LLaMA and DDP GPT-2 under kjoule run + torchrun
    progs = dict((kept or {}).get("programs") or {})
    swept = {}  # (op, shape) -> the sweep's rc: one sweep serves programs of the same shapes
    restore_operators(progs, w, swept)
    decode_steps = 16
    tp_args = ["--layers", str(a.layers), "--prompt", "128", "--decode-steps", str(decode_steps), "--repeat", "3"]
    if not a.skip_programs:
        # name, script, region, its arguments, iterations compare and predict skip (tp_graph: the
        # first round's decode steps, eager before the graphs are captured); DDP at batch 16 so
        # that the GPU's work hides the host's launches (at 8 a traced step idled a third of its
        # time), as the sum of operators predicts the GPU's work
        for name, script, region, extra, skip in (
                ("tp", "examples/llama7b_tp.py", "decode", tp_args, 1),
                ("tp_graph", "examples/llama7b_tp.py", "decode", tp_args + ["--cuda-graph"], decode_steps),
                ("ddp", "examples/ddp_train.py", "step", ["--steps", "10", "--warmup", "3", "--batch", "16"], 1)):
            if name not in a.programs:
                continue
            db, yml = os.path.join(w, f"{name}.kjdb"), os.path.join(w, f"{name}.yml")
            rc, _ = step(f"run {name}", [kj, "run", "--force", "-o", db, "--", "torchrun", "--standalone",
                                         "--nproc-per-node", str(g), script, *extra, "--model-yml", yml],
                         a.log_dir, 150, steps)
            p = {"script": script, "args": extra, "region": region, "skip": skip, "run_rc": rc}
            sel = ["--region", region, "--skip", str(skip)]
            rc, out = step(f"compare {name}", [kj, "compare", db, *sel, "--json"], a.log_dir, 90, steps)
            p["compare"] = json_of(out) if rc == 0 else None
            if not a.no_op_sweeps and os.path.exists(yml):
                # the model's own operators beside the collectives, then one fit of both
                p["operators"] = sweep_operators(kj, w, yml, a.log_dir, steps, swept, a.op_gpus)
                p["operator_rows"] = operator_rows(w, p["operators"])
                step(f"fit with {name}'s operators", [kj, "fit", os.path.join(w, "train", "sampling_data"), "-o",
                                                     os.path.join(w, "models"), "--gpu", "G"], a.log_dir, 180, steps)
            rc, out = step(f"predict {name}", [kj, "predict", "--model", yml, "--gpu", "G", "--models",
                                               os.path.join(w, "models"), "--run", db, *sel, "--json"],
                           a.log_dir, 60, steps)
            p["predict"] = json_of(out)
            if name in (a.replay or []):
                rc, _ = step(f"replay {name}", [kj, "replay", db, "--budget", "100"], a.log_dir, 150, steps)
                p["replay_rc"] = rc
                rc, out = step(f"compare {name} after replay", [kj, "compare", db, *sel, "--json"], a.log_dir, 90, steps)
                p["ranks_after_replay"] = ranks_explained(json_of(out) if rc == 0 else None)
            progs[name] = p
            res["programs"] = progs
            write_json(a.out, res)
    res["programs"] = progs
    write_json(a.out, res)
    table(sweep, progs)
    bad = [s for s in steps if s["rc"] != 0]
    print(f"{len(steps) - len(bad)}/{len(steps)} steps ok" + (f"; failed: {[s['step'] for s in bad][:8]}" if bad else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
