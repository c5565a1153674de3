#!/usr/bin/env python3
"""Writes the numbers README.md and docs/*.md quote from benchmark results, from the results.

Every figure the docs take from a result lives in a generated block:

    <!-- kj:gen NAME -->
    ...text this script writes...
    <!-- kj:end -->

NAME names one generator below (GENERATORS); it reads bench/results/*.json, or runs the built
`kjoule` on a run shipped in examples/runs/, and returns the block's text. Text outside the
blocks is left alone, so prose around a block should not repeat its numbers.

Without --check the blocks are rewritten in place (each file renamed into place). With --check
nothing is written: every block is regenerated in memory, and the script exits 1, naming the file
and the block, where a block differs from what the results say, where a block names no generator
or has no end, or where a generator needs a result file or key that is missing (or null: not
measured). After a new result lands, run it without --check and commit the docs with the result.

usage: scripts/docs_numbers.py [--check] [--kjoule build/kjoule] [--root DIR] [--results DIR]
                               [FILE.md ...]       (default: README.md and docs/*.md under --root)
"""
import argparse
import difflib
import glob
import json
import math
import os
import random
import re
import subprocess
import sys
import textwrap

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench", "trace_overhead"))
from turns import paired  # noqa: E402  (the one estimator the turns use)

BEGIN = re.compile(r"<!-- kj:gen ([A-Za-z0-9_.-]+) -->\n")
END = "<!-- kj:end -->"
MINUS = "\u2212"


class Missing(Exception):
    """A result file or key a block needs is not there (or is null)."""


class Results:
    """The committed results, read on demand; get() names the file and key it could not find."""

    def __init__(self, results_dir, kjoule, root):
        self.dir, self.kjoule, self.root = results_dir, kjoule, root
        self.cache = {}

    def load(self, name):
        if name not in self.cache:
            path = os.path.join(self.dir, name)
            try:
                with open(path) as f:
                    self.cache[name] = json.load(f)
            except OSError:
                raise Missing(f"bench/results/{name}: no such result file")
            except ValueError as e:
                raise Missing(f"bench/results/{name}: not JSON ({e})")
        return self.cache[name]

    def get(self, name, key):
        """The value at KEY ('a/b/c'; list items by index) of result NAME: never None, NaN or inf."""
        v = self.load(name)
        for part in key.split("/"):
            if isinstance(v, list) and part.isdigit() and int(part) < len(v):
                v = v[int(part)]
            elif isinstance(v, dict) and part in v:
                v = v[part]
            else:
                raise Missing(f"bench/results/{name}: no key {key}")
        if v is None:
            raise Missing(f"bench/results/{name}: {key} is null (not measured)")
        if isinstance(v, float) and not math.isfinite(v):
            raise Missing(f"bench/results/{name}: {key} is {v}")
        return v

    def num(self, name, key):
        v = self.get(name, key)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise Missing(f"bench/results/{name}: {key} is not a number ({v!r})")
        return v

    def where(self, name):
        """'DEVICE, DATE' of result NAME (its top-level device and date)."""
        return f"{short_device(self.get(name, 'device'))}, {self.get(name, 'date')[:10]}"

    def compare(self, run, json_out):
        """`kjoule compare RUN` (text, or parsed --json) of a run under the root."""
        if not self.kjoule or not os.access(self.kjoule, os.X_OK):
            raise Missing(f"the kjoule binary ({self.kjoule or 'none'}): give --kjoule PATH")
        args = [self.kjoule, "compare", run] + (["--json"] if json_out else [])
        r = subprocess.run(args, capture_output=True, text=True, cwd=self.root)
        if r.returncode:
            raise Missing(f"`kjoule compare {run}` exited {r.returncode}: {r.stderr.strip()[-300:]}")
        return json.loads(r.stdout) if json_out else r.stdout


def short_device(d):
    """'NVIDIA H100 80GB HBM3, 580.159.04' -> 'H100'; every GPU named, joined by ' / '; else as given.
    A list (one entry a GPU, as the several-GPU benchmarks write it) -> '2x H200' where all match."""
    if isinstance(d, list):
        names = [short_device(x) for x in d if isinstance(x, str)]
        if names and len(set(names)) == 1:
            return f"{len(names)}x {names[0]}" if len(names) > 1 else names[0]
        return " / ".join(names) if names else "?"
    out = []
    for name in re.findall(r"\b([HABLG]\d{2,3}[A-Za-z]*)\b", d):
        if name not in out:
            out.append(name)
    return " / ".join(out) if out else d.split(",")[0].strip()


def sgn(x, digits=1, unit=" %"):
    """A signed figure with a real minus sign: +1.6 %, \u22120.9 %."""
    s = f"{abs(x):.{digits}f}"
    return (MINUS if x < 0 and float(s) != 0 else "+") + s + unit


def pct(x, digits=1):
    s = f"{x:.{digits}f}"
    return (s[1:] if float(s) == 0 and s.startswith("-") else s) + " %"


def ratio(x, digits=3):
    return f"{x:.{digits}f}\u00d7"


def grouped(n):
    return f"{n:,}"


def wrap_prose(text):
    """TEXT with its prose lines wrapped at 100 columns, as the docs are written; table rows, code
    fences and their contents are left as they are."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        if fenced or line.startswith(("|", "```", "#", "- ")) or len(line) <= 100:
            out.append(line)
        else:
            out.append(textwrap.fill(line, 100, break_long_words=False, break_on_hyphens=False))
    return "\n".join(out)


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def src(*names):
    return ", ".join(f"`{n}`" for n in names)


# ---------------------------------------------------------------- facts shared by several blocks

def tracing_bloom(r):
    f = "trace_overhead_bloom560m.json"
    s = lambda c: r.num(f, f"summary/{c}/ratio_to_plain")
    return (f"`--no-params` {ratio(s('kjoule_no_params'))}, defaults {ratio(s('kjoule_default'))}; "
            f"CUPTI's own activity records alone {ratio(s('cupti_activity_only'))}")


def tracing_profiler(r):
    f = "trace_overhead.json"
    s = lambda c: r.num(f, f"ratio_to_plain/{c}/median_over_runs")
    return (f"defaults {ratio(s('kjoule_default'))}, `--api` {ratio(s('kjoule_api'))}; "
            f"torch.profiler {ratio(s('torch_profiler'))} (median of {len(r.get(f, 'ratio_to_plain/kjoule_default/runs'))} runs)")


def coverage(r, f, key="coverage"):
    c = lambda k: r.num(f, f"{key}/{k}")
    return (f"{grouped(c('launches') - c('launches_not_replayed'))}/{grouped(c('launches'))} launches, "
            f"{c('unique_kernels') - c('unique_not_replayed')}/{c('unique_kernels')} unique kernels")


def energy_error(r):
    """Energy predicted from the parts against the measured loop, over the program kinds of the
    energy fidelity bench whose measurement compare judges (measured to 1 % or better): on the
    programs' saved buffers (the method the docs recommend) first, then on kjoule's random fill,
    with the dates those rows were measured on."""
    f = "energy_fidelity.json"
    progs = [p for p in r.get(f, "programs").values() if p.get("data", "fill") == "fill"]
    judged = [p for p in progs if (p.get("compare") or {}).get("energy_error_judgeable")]
    fill = (f"median \\|error\\| {pct(r.num(f, 'summary/median_abs_error_pct'))}, at most "
            f"{pct(r.num(f, 'summary/max_abs_error_pct'))}; {r.num(f, 'summary/within_5pct')} of "
            f"{len(judged)} judged program kinds within 5 % ({len(progs)} traced)")
    if "summary_snapshot" not in r.load(f):
        return fill, r.where(f), f
    snap = [p for p in r.get(f, "programs").values() if p.get("data") == "snapshot"]
    whole = sum((p.get("compare") or {}).get("energy_prediction_method") == "iteration_replay" for p in snap)
    text = (f"replayed on their saved buffers (`kjoule run --snapshot`): median \\|error\\| "
            f"{pct(r.num(f, 'summary_snapshot/median_abs_error_pct'))}, at most "
            f"{pct(r.num(f, 'summary_snapshot/max_abs_error_pct'))}, "
            f"{r.num(f, 'summary_snapshot/within_5pct')} of {r.num(f, 'summary_snapshot/judged')} within 5 %"
            + (f" ({whole} graph-launched ones predicted by their iteration replayed whole)" if whole else ""))
    rep = r.load(f).get("summary_repeat")
    if rep and rep.get("both_judged"):
        text += (f"; the same bench on a second card: {rep['within_2_points']} of {rep['both_judged']} programs "
                 f"within 2 points of the first (largest difference {rep['max_abs_diff_points']:.2f} points)")
    days = sorted({str(p.get("date", ""))[:10] for p in progs if p.get("date")})
    text += ("; on kjoule's random fill instead (no `--snapshot`"
             + (f", measured {' to '.join(dict.fromkeys([days[0], days[-1]]))}" if days else "")
             + f"): {fill}")
    return text, r.where(f), f


def not_judged_why(c):
    """Why compare did not judge a program's energy error, from its JSON: the clock states apart
    (compare's own sentence), else the measured figure's uncertainty over 1 %."""
    why = (c.get("energy_clock_state") or {}).get("not_judged_reason") or \
        (c.get("energy_windows_off_pace") or {}).get("why")
    if why:
        return why
    return f"measured to ±{c['energy_measured_mean_unc_pct']:.2f} %, over 1 %"


def energy_fidelity_table(r):
    """Per program kind: measured per iteration with its uncertainty, predicted, error, judged."""
    f = "energy_fidelity.json"
    rows = []
    for name, p in r.get(f, "programs").items():
        c = p.get("compare") or {}
        meas, unc, pred, err = (c.get(k) for k in ("energy_measured_j", "energy_measured_mean_unc_pct",
                                                    "energy_predicted_j", "energy_error_pct"))
        if None in (meas, unc, pred, err):
            raise Missing(f"bench/results/{f}: program {name} lacks a measured or predicted energy")
        # which figure predicts: the parts, or the iteration replayed whole (graph-launched
        # iterations on their saved buffers), the parts' own error then beside it
        basis = f"{pred:.3f} J"
        if c.get("energy_prediction_method") == "iteration_replay" and c.get("energy_error_parts_pct") is not None:
            basis += f" (iteration replayed whole; the parts {sgn(c['energy_error_parts_pct'])})"
        # the same program on a second card of the same kind, where the bench ran there too
        q = ((r.load(f).get("repeat") or {}).get("programs") or {}).get(name)
        second = "—"
        if q and q.get("error_pct") is not None:
            second = sgn(q["error_pct"]) + ("" if q.get("judged") else " (not judged)")
            if q.get("diff_points") is not None:
                second += f", {abs(q['diff_points']):.2f} points apart"
        rows.append((p["kind"], f"{meas:.3f} J ± {unc:.2f} %", basis, sgn(err),
                     "yes" if c.get("energy_error_judgeable") else f"no ({not_judged_why(c)})",
                     second,
                     f"{p.get('replay_s', '—')} s" + (f" (stopped, exit {p['replay_rc']})" if p.get("replay_rc") else "")))
    return table(("program", "measured per iteration", "predicted", "error", "judged",
                  "second card", "replay"), rows)


def window_energy(r):
    f = "energy_accuracy.json"
    w = lambda win, k: r.num(f, f"steady_windows/{win}/{k}")
    wins = ("100ms", "300ms", "1000ms")
    ours = " / ".join(pct(w(x, "kjoule_mean_abs_err_pct"), 2) for x in wins)
    edges = " / ".join(pct(w(x, "counter_at_edges_mean_abs_err_pct"), 2) for x in wins)
    p25 = " / ".join(pct(w(x, "power25hz_avg_mean_abs_err_pct"), 2) for x in wins)
    return (f"mean error of 100 ms / 300 ms / 1 s windows on a steady load: {ours} "
            f"(counter read at the window's edges {edges}; 25 Hz power {p25})")


def predictor_ranges(r):
    f = "predict_accuracy.json"
    ops = r.get(f, "ops")
    t = [r.num(f, f"ops/{op}/inside/summary/{d}_time_mape_pct") for op in ops for d in ("fwd", "bwd")]
    e = [r.num(f, f"ops/{op}/inside/summary/{d}_energy_mape_pct") for op in ops for d in ("fwd", "bwd")]
    return len(ops), min(t), max(t), min(e), max(e)


def heldout_means(r):
    f = "predict_heldout_sets.json"
    ops = r.get(f, "ops")
    t = [r.num(f, f"ops/{op}/mean/{d}_time_mape_pct") for op in ops for d in ("fwd", "bwd")]
    sets = sum(len(r.get(f, f"ops/{op}/groups")) for op in ops)
    return len(ops), sets, min(t), max(t)


def step_programs(r):
    """[(label, time % untraced, energy % untraced)] of the whole-step programs measured untraced."""
    f = "predict_step_programs.json"
    seen, out = set(), []
    for i, p in enumerate(r.get(f, "programs")):
        e = p.get("errors_pct") or {}
        if e.get("time_vs_untraced") is None or p["program"] in seen:
            continue
        seen.add(p["program"])
        out.append((p["program"], r.num(f, f"programs/{i}/errors_pct/time_vs_untraced"),
                    r.num(f, f"programs/{i}/errors_pct/energy_vs_untraced")))
    if not out:
        raise Missing(f"bench/results/{f}: no program with an untraced step")
    return out


def speed(r, f, name, key="best_wall_s"):
    """KEY of the entry NAME of a speed result's 'results' list."""
    for i, x in enumerate(r.get(f, "results")):
        if x.get("name") == name:
            return r.num(f, f"results/{i}/{key}")
    raise Missing(f"bench/results/{f}: no result named {name}")


def rss_mb(r, f, name):
    return speed(r, f, name, "max_rss_kib") / 1024


# ---------------------------------------------------------------- README blocks

def readme_headline(r):
    """The README's table: at most ten rows, each from the current result of one benchmark."""
    e_text, e_where, e_file = energy_error(r)
    n_ops, t_lo, t_hi, e_lo, e_hi = predictor_ranges(r)
    h_ops, h_sets, h_lo, h_hi = heldout_means(r)
    steps = step_programs(r)
    iso = "isolated_estimate.json"
    cmp_ = "compare_bloom560m.json"
    rows = [
        ("tracing cost, BLOOM-560M forward (launch-bound: the worst case), against the same program "
         "untraced, taking turns", tracing_bloom(r), r.where("trace_overhead_bloom560m.json"),
         src("trace_overhead_bloom560m.json")),
        ("tracing cost beside torch.profiler (same forward)", tracing_profiler(r), r.where("trace_overhead.json"),
         src("trace_overhead.json")),
        ("replay coverage (each unique kernel re-launched alone from its captured binary and parameters)",
         f"BLOOM-560M {coverage(r, 'replay_bloom560m.json')}; CNN with SDPA {coverage(r, 'replay_convattn.json')}",
         r.where("replay_bloom560m.json"), src("replay_bloom560m.json", "replay_convattn.json")),
        ("time explained: Σ(count × kernel replayed) against the traced kernel time",
         f"timed where the replayed iteration runs each kernel {sgn(r.num(cmp_, 'fidelity_pct_vs_insitu/in_sequence'))} "
         f"on BLOOM-560M; each kernel alone (mean of warm and cold L2) "
         f"{pct(r.num(iso, 'mean_abs_pct_without_overlap/isolated_pct'))} off on average over "
         f"{r.num(iso, 'programs_without_overlap')} programs (warm L2 alone {pct(r.num(iso, 'mean_abs_pct_without_overlap/warm_pct'))})",
         r.where(cmp_), src(cmp_, iso)),
        ("energy per iteration predicted from the parts (kernels replayed + idle power) against measured",
         e_text, e_where, src(e_file)),
        ("energy of a time window (NVML's counter read at its update edges)", window_energy(r),
         r.where("energy_accuracy.json"), src("energy_accuracy.json")),
        ("predictor error, held-out operator shapes inside the sweep grid (time and energy MAPE)",
         f"time {pct(t_lo)}–{pct(t_hi)}, energy {pct(e_lo)}–{pct(e_hi)} over {n_ops} operators "
         f"(forward and backward); on {h_sets} held-out sets off the grid's alignment, mean time error {pct(h_lo)}–{pct(h_hi)} "
         f"per operator and direction", r.where("predict_accuracy.json"), src("predict_accuracy.json", "predict_heldout_sets.json")),
        ("predictor error, a whole GPT training step from operator sweeps, against the step run untraced",
         "; ".join(f"{p}: time {sgn(t)}, energy {sgn(en)}" for p, t, en in steps),
         r.where("predict_step_programs.json"), src("predict_step_programs.json")),
        ("several GPUs: NCCL collectives swept on 2 GPUs; a tensor-parallel decode in CUDA graphs traced and replayed under torchrun",
         readme_multi_gpu(r), r.where("multi_gpu.json"), src("multi_gpu.json")),
        ("analysis speed on a run of 1,000,000 launches, one CPU core",
         f"ingest {speed_ingest(r)} s, compare {speed(r, 'analysis_speed.json', 'compare'):.1f} s, "
         f"timeline {speed(r, 'analysis_speed.json', 'timeline_chrome'):.1f} s, "
         f"report {speed(r, 'report_speed.json', 'report_1M_launches'):.1f} s",
         f"CPU, {r.get('analysis_speed.json', 'date')[:10]}", src("ingest_speed.json", "analysis_speed.json", "report_speed.json")),
    ]
    return table(("what", "result", "device, date", "result file (`bench/results/`)"), rows)


def speed_ingest(r):
    return f"{r.num('ingest_speed.json', 'best_wall_s'):.1f}"


# lines of `kjoule compare` the README shows, by section: (section title, [line starts])
COMPARE_LINES = [
    ("kjoule compare:", []),
    ("iterations:", []),
    ("Time per iteration (us)", ["wall", "GPU busy", "idle inside the span", "host-only"]),
    ("Replay (", ["Σ alone, warm L2", "Σ alone, cold L2", "Σ alone, mean of warm and cold", "Σ in sequence"]),
    ("Sequence replay of one iteration", ["eager (stream of launches)", "one CUDA graph"]),
    ("Energy per iteration (J)", ["measured", "predicted (kernels + idle)", "error vs measured"]),
]
SHIPPED_RUN = "examples/runs/bloom560m.kjdb"


def readme_compare(r):
    """`kjoule compare` on the shipped run as the built binary prints it, cut to its main lines."""
    text = r.compare(SHIPPED_RUN, False).splitlines()
    out, i = [f"$ build/kjoule compare {SHIPPED_RUN}"], 0
    for title, starts in COMPARE_LINES:
        while i < len(text) and not text[i].startswith(title):
            i += 1
        if i == len(text):
            raise Missing(f"`kjoule compare {SHIPPED_RUN}` printed no line starting {title!r}: "
                          "its output changed; update COMPARE_LINES in scripts/docs_numbers.py")
        if starts and out[-1] != "":
            out.append("")
        out.append(text[i].rstrip())
        body = []
        j = i + 1
        while j < len(text) and text[j].startswith(" "):
            body.append(text[j])
            j += 1
        for s in starts:
            hit = [l for l in body if l.strip().startswith(s)]
            if not hit:
                raise Missing(f"`kjoule compare {SHIPPED_RUN}`: no line {s!r} under {title!r}: "
                              "its output changed; update COMPARE_LINES in scripts/docs_numbers.py")
            line = re.sub(r"\s+$", "", hit[0])
            out.append(line if len(line) <= 96 else line[:95] + "…")
        i = j
    j = r.compare(SHIPPED_RUN, True)
    for k in ("busy_us", "wall_us", "energy_error_pct"):
        if not isinstance(j.get(k), (int, float)):
            raise Missing(f"`kjoule compare {SHIPPED_RUN} --json`: no number {k}")
    return ("```\n" + "\n".join(out) + "\n```\n\n"
            f"The GPU is busy {pct(100 * j['busy_us'] / j['wall_us'])} of each forward: the rest is Python "
            "and PyTorch launching work, which the replay of the same launches in C (eager, then as one "
            "CUDA graph) shows directly. Kernels replayed alone find the layer's data in L2 or in nothing "
            "(warm, cold); timed where the replayed forward runs them, they sum to the traced kernel time. "
            f"Energy is predicted from the kernels' replayed energy plus the GPU's awake idle power over "
            f"the gaps, {sgn(j['energy_error_pct'])} off the measured figure.")


# ---------------------------------------------------------------- docs/results.md blocks

def results_tracing(r):
    rows = []
    for f, model in (("trace_overhead_bloom560m.json", "BLOOM-560M"), ("trace_overhead_gpt2m.json", "GPT-2-medium shape, eager")):
        s = lambda c: ratio(r.num(f, f"summary/{c}/ratio_to_plain"))
        rows.append((model, s("cupti_activity_only"), s("kjoule_no_params"), s("kjoule_default"),
                     f"{r.num(f, 'rounds_done')}", r.where(f), src(f)))
    t = table(("model", "CUPTI's records alone", "`--no-params`", "defaults", "rounds", "device, date", "result"), rows)
    f = "trace_overhead.json"
    m = lambda c: ratio(r.num(f, f"ratio_to_plain/{c}/median_over_runs"))
    mb = lambda c: f"{r.num(f, f'rss_over_plain_mb/{c}'):+.0f} MB"
    t2 = table(("setting (BLOOM-560M, median of runs)", "ratio to untraced", "peak host memory over untraced"),
               [("CUPTI's activity records alone", m("cupti_activity_only"), mb("cupti_activity_only")),
                ("`--no-params`", m("kjoule_no_params"), mb("kjoule_no_params")),
                ("defaults", m("kjoule_default"), mb("kjoule_default")),
                ("`--api`", m("kjoule_api"), mb("kjoule_api")),
                ("`--api=all`", m("kjoule_api_all"), mb("kjoule_api_all")),
                ("torch.profiler", m("torch_profiler"), mb("torch_profiler"))])
    w = "watch_overhead.json"
    e = "trace_overhead_empty_handlers.json"
    c = "trace_overhead_cupti_settings.json"
    pairs = [k for k in r.get(c, "summary") if k.endswith("_over_base")]
    lo = min(r.num(c, f"summary/{k}/median") for k in pairs)
    hi = max(r.num(c, f"summary/{k}/median") for k in pairs)
    return (t + "\n\n" + t2 + f"\n\n(`trace_overhead.json`: {r.where(f)}.) "
            f"CUPTI's callbacks enabled with kjoule's handlers returning at once: "
            f"{ratio(r.num(e, 'summary/kjoule_empty_handlers/ratio_to_plain'))} against CUPTI's records alone "
            f"{ratio(r.num(e, 'summary/cupti_activity_only/ratio_to_plain'))} and `--no-params` "
            f"{ratio(r.num(e, 'summary/kjoule_no_params/ratio_to_plain'))} ({r.where(e)}, `{e}`). "
            f"CUPTI's own buffer, clock and record settings, each paired round by round with CUPTI's "
            f"defaults: {lo:.3f}–{hi:.3f} of their cost ({r.where(c)}, `{c}`). "
            f"Watching the GPU's processes: defaults {ratio(r.num(w, 'summary/kjoule_default/ratio_to_plain'))} with it, "
            f"{ratio(r.num(w, 'summary/kjoule_default_no_watch/ratio_to_plain'))} without ({r.where(w)}, `{w}`).")


def results_replay(r):
    c = "compare_bloom560m.json"
    v = "replay_convattn.json"
    fp = lambda k: sgn(r.num(c, f"fidelity_pct_vs_insitu/{k}"))
    cv = lambda k: r.num(v, f"per_forward/{k}")
    off = lambda k: sgn(100 * (cv(k) / cv("insitu_sum_replayed_us") - 1))
    rows = [("BLOOM-560M (seq 5, eager)", coverage(r, "replay_bloom560m.json"), fp("warm"), fp("cold"), fp("in_sequence"),
             fp("graph_vs_busy"), r.where(c), src(c, "replay_bloom560m.json")),
            ("CNN with SDPA (`examples/convattn.py`)", coverage(r, v), off("replay_sum_warm_us"), off("replay_sum_cold_us"),
             off("replay_sum_sequence_us"), sgn(100 * (cv("sequence_graph_us") / cv("busy_us") - 1)), r.where(v), src(v))]
    t = table(("program", "replayed", "Σ alone, warm L2", "Σ alone, cold L2", "Σ in sequence",
               "iteration as one CUDA graph vs busy", "device, date", "result"), rows)
    iso = "isolated_estimate.json"
    m = lambda k: pct(r.num(iso, f"mean_abs_pct_without_overlap/{k}"))
    return (t + f"\n\nOver {r.num(iso, 'programs_without_overlap')} programs whose kernels do not overlap "
            f"(the shipped runs and the untuned programs below), the mean \\|% off\\| the in-situ kernel sum: "
            f"warm L2 alone {m('warm_pct')}, cold L2 alone {m('cold_pct')}, their mean per kernel (the isolated "
            f"estimate `explained_fraction` uses) {m('isolated_pct')}, in sequence {m('sequence_pct')} "
            f"(`{iso}`, {r.get(iso, 'date')[:10]}).")


def results_untuned(r):
    f = "untuned_programs.json"
    rows = []
    for name in sorted(r.get(f, "programs")):
        base = f"programs/{name}"
        st = r.get(f, f"{base}/replay_status")
        done = sum(v for k, v in st.items() if k in ("ok", "exact", "relocated"))
        total = r.num(f, f"{base}/unique_kernels")
        ef = r.num(f, f"{base}/compare/explained_fraction")
        c = r.get(f, f"{base}/compare")
        err = c.get("energy_error_pct")
        energy = "not measured" if err is None else (sgn(err) + ("" if c.get("energy_error_judgeable") else " (not judged)"))
        rows.append((f"`{name}`", f"{done}/{total}" + (f" ({st['skipped']} past the budget)" if st.get("skipped") else ""),
                     f"{ef:.3f}", energy, f"{short_device(r.get(f, base + '/device'))}, {r.get(f, base + '/date')[:10]}"))
    return table(("program", "unique kernels replayed", "explained_fraction", "energy predicted vs measured",
                  "device, date"), rows)


def results_energy(r):
    f = "energy_accuracy.json"
    rows = []
    for win, label in (("50ms", "50 ms"), ("100ms", "100 ms"), ("300ms", "300 ms"), ("1000ms", "1 s")):
        w = lambda k: pct(r.num(f, f"steady_windows/{win}/{k}"), 2)
        rows.append((label, w("kjoule_mean_abs_err_pct"), w("counter_at_edges_mean_abs_err_pct"),
                     w("power25hz_avg_mean_abs_err_pct")))
    t = table(("window on a steady GEMM load", "kjoule", "counter at the window's edges", "25 Hz power × time"), rows)
    rep = "energy_repeat.json"
    cvs = {k: 100 * r.num(rep, f"shapes/{k}/cv_energy_per_forward") for k in r.get(rep, "shapes")}
    e_text, e_where, e_file = energy_error(r)
    return (t + f"\n\n({r.where('energy_accuracy.json')}, `{f}`.) A 14 µs GEMM's amortised energy per launch repeats to "
            f"a CV of {pct(r.num(f, 'amortized/cv_pct'), 2)}. Energy per forward over separate traced runs: CV "
            + ", ".join(f"{pct(v, 1)} at sequence length {k}" for k, v in sorted(cvs.items(), key=lambda x: -int(x[0])))
            + f" ({r.where(rep)}, `{rep}`).\n\nEnergy per iteration predicted from the parts, against the measured "
            f"loop: {e_text} ({e_where}, `{e_file}`):\n\n" + energy_fidelity_table(r))


OPS = ("linear1", "linear2", "linear3", "linear4", "flash_atten", "layernorm", "softmax")


def in_order(names):
    """Operator names in the sweep's order (others after them, sorted)."""
    return [o for o in OPS if o in names] + sorted(o for o in names if o not in OPS)


def results_predict(r):
    f = "predict_accuracy.json"
    rows = []
    for op in in_order(r.get(f, "ops")):
        s = lambda which, k: r.get(f, f"ops/{op}/{which}/summary").get(k)
        two = lambda which, kind: " / ".join("—" if s(which, f"{d}_{kind}_mape_pct") is None
                                             else pct(s(which, f"{d}_{kind}_mape_pct")) for d in ("fwd", "bwd"))
        rows.append((op, two("inside", "time"), two("inside", "energy"), two("beyond", "time"),
                     f"{short_device(r.get(f, f'ops/{op}/device'))}, {r.get(f, f'ops/{op}/date')[:10]}",
                     f"`{os.path.basename(r.get(f, f'ops/{op}/refit_from_csv/dir'))}`"))
    t = table(("operator", "time MAPE fwd / bwd", "energy MAPE fwd / bwd", "time beyond the grid fwd / bwd",
               "measured", "CSVs (`sweep_csv/`)"), rows)
    sd = "predict_accuracy_sdpa.json"
    ss = lambda k: pct(r.num(sd, f"ops/flash_atten/inside/summary/{k}"))
    h = "predict_heldout_sets.json"
    rows2 = []
    for op in in_order(r.get(h, "ops")):
        g = r.get(h, f"ops/{op}/groups")
        worst = max((x.get("fwd_time_mape_pct") or 0, n) for n, x in g.items())
        rows2.append((op, len(g), " / ".join(pct(r.num(h, f"ops/{op}/mean/{d}_time_mape_pct")) for d in ("fwd", "bwd")),
                      " / ".join("—" if r.get(h, f"ops/{op}/mean").get(f"{d}_energy_mape_pct") is None
                                 else pct(r.num(h, f"ops/{op}/mean/{d}_energy_mape_pct")) for d in ("fwd", "bwd")),
                      f"{pct(worst[0])} (offset {worst[1]})"))
    t2 = table(("operator", "held-out sets", "time MAPE fwd / bwd, mean over sets", "energy MAPE fwd / bwd",
                "worst set, forward time"), rows2)
    return (t + f"\n\nFitted and scored by today's build from the committed CSVs (features version "
            f"{r.get(f, 'features_version')}, {r.get(f, 'date')[:10]}, `{f}`). flash_atten on cuDNN's fused attention "
            f"({r.where(sd)}, `{sd}`): time {ss('fwd_time_mape_pct')} / {ss('bwd_time_mape_pct')}, energy "
            f"{ss('fwd_energy_mape_pct')} / {ss('bwd_energy_mape_pct')}.\n\nOff the grid's alignment: every committed "
            f"held-out set scored by models fitted on the grid and every other set (features version "
            f"{r.get(h, 'features_version')}, {r.get(h, 'date')[:10]}, `{h}`; a set is named by its offset of the dense step, "
            "and an 'x' set is a time-only training sweep at that offset, scored as a set):\n\n" + t2)


def results_step(r):
    f = "predict_step_programs.json"
    rows = []
    for i, p in enumerate(r.get(f, "programs")):
        e = r.get(f, f"programs/{i}/errors_pct")
        o = lambda k: "—" if e.get(k) is None else sgn(e[k])
        rows.append((f"{p['program']} (`{os.path.splitext(os.path.basename(p['file']))[0]}`)", o("time_vs_untraced"), o("energy_vs_untraced"), o("time_vs_traced_mean_wall"),
                     o("energy_vs_traced_mean"), o("time_vs_kernel_sum")))
    return (table(("program (one GPT training step)", "time vs untraced", "energy vs untraced", "time vs traced",
                   "energy vs traced", "time vs traced kernel sum"), rows)
            + f"\n\nPredicted {r.num(f, 'predicted/time_us') / 1000:.1f} ms and {r.num(f, 'predicted/energy_j'):.1f} J a step "
            f"from the operators' sweeps on the same card ({r.where(f)}, `{f}`).")


def results_speed(r):
    a, p, i = "analysis_speed.json", "report_speed.json", "ingest_speed.json"
    rows = [("`kjoule ingest` (end of `kjoule run`)", f"{r.num(i, 'best_wall_s'):.1f} s",
             f"{max(x['peak_rss_mb'] for x in r.get(i, 'raw')):.0f} MB", src(i)),
            ("`kjoule compare`", f"{speed(r, a, 'compare'):.2f} s", f"{rss_mb(r, a, 'compare'):.0f} MB", src(a)),
            ("`kjoule timeline --format chrome`", f"{speed(r, a, 'timeline_chrome'):.2f} s",
             f"{rss_mb(r, a, 'timeline_chrome'):.0f} MB", src(a)),
            ("`kjoule report`", f"{speed(r, p, 'report_1M_launches'):.2f} s", f"{rss_mb(r, p, 'report_1M_launches'):.0f} MB", src(p)),
            ("`kjoule diff` (the run with itself)", f"{speed(r, p, 'diff_1M_launches_with_itself'):.2f} s",
             f"{rss_mb(r, p, 'diff_1M_launches_with_itself'):.0f} MB", src(p))]
    return (table(("on a generated run of 1,000,000 launches, one core", "wall", "peak memory", "result"), rows)
            + f"\n\n`kjoule report` on the shipped run: {speed(r, p, 'report_shipped_run'):.2f} s "
            f"({r.get(a, 'date')[:10]}, a 2-core development machine).")


def energy_shared(r):
    """How often each shared-GPU signal flags, solo and concurrent (shared_gpu.json)."""
    f = "shared_gpu.json"
    rate = lambda side, k: f"{r.num(f, f'{side}/{k}/flagged')} of {r.num(f, f'{side}/{k}/runs')}"
    return (f"On {r.where(f)} (`{f}`): the process listing flagged {rate('false_positive', 'process')} solo runs "
            f"and {rate('true_positive', 'process')} concurrent ones; compare's verdict "
            f"{rate('false_positive', 'compare')} and {rate('true_positive', 'compare')}; the utilisation signal "
            f"{rate('false_positive', 'utilization')} and {rate('true_positive', 'utilization')}.")


def sweep_step_offgrid(r):
    """The whole step predicted from operator models fitted around, never on, its shapes."""
    f = "predict_step.json"
    ops = r.get(f, "operators")
    checked = [o for o in ops if o.get("measured_at_shape") and (o.get("error_at_shape_pct") or {}).get("fwd_us") is not None]
    at = "; ".join(f"{o['op']} forward {sgn(o['error_at_shape_pct']['fwd_us'])}, backward "
                   f"{sgn(o['error_at_shape_pct']['bwd_us'])} in time" for o in checked) or "none"
    off = "every operator's" if r.get(f, "step_shapes/off_grid") is True else "not every operator's"
    return (f"**The step off the grids** ({r.where(f)}, `bench/results/{f}`): {off} step shape lies in no "
            f"grid and in no fitted row, so the sum judges the regressors too. Predicted "
            f"{r.num(f, 'predicted/time_us') / 1000:.2f} ms and {r.num(f, 'predicted/energy_uj') / 1e6:.2f} J a step "
            f"against {r.num(f, 'measured/step_time_us_mean') / 1000:.2f} ms and {r.num(f, 'measured/step_energy_j_mean'):.2f} J traced "
            f"(**{sgn(r.num(f, 'errors/time_pct'))} time, {sgn(r.num(f, 'errors/energy_pct'))} energy**; against "
            f"the untraced program {sgn(r.num(f, 'errors/time_pct_vs_untraced'))} and "
            f"{sgn(r.num(f, 'errors/energy_pct_vs_untraced'))}). The step's own shapes measured alone after the fit, "
            f"the heaviest operators first until the bench's time was spent, against the models' figures: {at} (the others were not reached).")


def turn_ratio(summary, contestant):
    """A turns.py summary's ratio to untraced for one contestant, or None where it did not run."""
    v = (summary or {}).get(contestant)
    x = v.get("ratio_to_plain") if isinstance(v, dict) else None
    return x if isinstance(x, (int, float)) else None


def paired_pct(p):
    """A paired ratio p (turns.paired) as a cost in %, with its rounds and 95 % interval."""
    return (f"{pct((p['median'] - 1) * 100)} (paired over {p['rounds']} rounds, 95 % "
            f"{pct((p['ci95'][0] - 1) * 100)} to {pct((p['ci95'][1] - 1) * 100)})")


def beyond(t, a, b):
    """A's cost beyond B's from one turns result t (its summary and, where kept, its per-round
    ratios): paired round by round with a 95 % interval where the rounds are kept, else the ratio of
    the two medians."""
    per = (t or {}).get("ratio_per_round") or {}
    if a in per and b in per:
        return paired_pct(paired(per[a], per[b]))
    sm = (t or {}).get("summary") or {}
    x = turn_ratio(sm, a) / turn_ratio(sm, b) - 1
    return pct(0.0 if abs(x) < 0.0005 else x * 100)


def same_work_beyond_cupti(t):
    """The defaults and a window open throughout, which do the same work on each launch, pooled (the
    mean of the two contestants' ratios in each round) and paired with CUPTI alone round by round."""
    per = t["ratio_per_round"]
    pooled = [(a + b) / 2 if a is not None and b is not None else None
              for a, b in zip(per["kjoule_default"], per["kjoule_capture_inside"])]
    return paired_pct(paired(pooled, per["cupti_activity_only"]))


def tracing_whole_blocks(r):
    """The A/B of the whole-block build against the one that compared words on the program's thread
    (trace_whole_blocks.json)."""
    f = "trace_whole_blocks.json"
    t = r.load(f)
    sm = t.get("summary") or {}
    return (f"Since then the launch handler copies each launch's whole parameter block into the spool and the "
            f"ingest finds the words that differ. Taking turns on the GPT-2-medium-shaped eager forward ({r.where(f)}, "
            f"`bench/results/{f}`, {t.get('copies')} processes per contestant, {t.get('rounds_done')} rounds), defaults cost "
            f"{ratio(turn_ratio(sm, 'kjoule_default'))} against {ratio(turn_ratio(sm, 'kjoule_default_base'))} for the build "
            f"that compared on the program's thread: paired, {beyond(t, 'kjoule_default', 'kjoule_default_base')} "
            f"beside it. Over CUPTI's activity records alone ({ratio(turn_ratio(sm, 'cupti_activity_only'))}) the defaults "
            f"add {beyond(t, 'kjoule_default', 'cupti_activity_only')} and `--no-params` "
            f"{beyond(t, 'kjoule_no_params', 'cupti_activity_only')}.")


def handler_part(r, f):
    """part(label, setting, part name) -> mean ns of that part of the launch handler in a result
    gathered by cost_self_json.py under cost_self."""
    calls = r.get(f, "cost_self/calls")
    return lambda label, setting, k: next(x for x in calls[label]["runs"] if x["setting"] == setting)["parts"][k]["mean_ns"]


def tracing_spool_append(r):
    """Two ways of appending the launch record, against the current one (trace_spool_append.json)."""
    f = "trace_spool_append.json"
    part = handler_part(r, f)
    t = r.load(f)["turns_warm_ahead"]
    return (f"Appending the launch record is the handler's largest part. Two ways of making it cheaper were "
            f"measured and left out ({r.where(f)}, `bench/results/{f}`, the GPT-2-medium-shaped eager forward, "
            f"defaults): the payload written with non-temporal stores took {part('stream', 'defaults', 'write'):.0f} ns a "
            f"launch against {part('current', 'defaults', 'write'):.0f} ns (the fence that must follow them, which waits for "
            f"memory, the likely reason); prefetching the spool buffer's next 4 KB after each record took "
            f"{part('warm_ahead', 'defaults', 'write'):.0f} ns, and taking turns against the current build "
            f"({t.get('copies')} processes per contestant, {t.get('rounds_done')} rounds) it cost "
            f"{beyond(t, 'kjoule_default', 'kjoule_default_base')} beside it: no gain the turns can see. "
            f"In the same turns the current build's defaults cost {beyond(t, 'kjoule_default_base', 'cupti_activity_only')} "
            f"beyond CUPTI's activity records alone.")


def tracing_stage_ring(r):
    """Per-thread rings of launch records against the shared spool buffer (trace_stage_ring.json)."""
    f = "trace_stage_ring.json"
    part = handler_part(r, f)
    t = r.load(f)["turns_ring"]
    return (f"A third way was measured and left out ({r.where(f)}, `bench/results/{f}`): each launching thread "
            f"appending its launch records to a ring of its own, with no lock and lines its core keeps, drained "
            f"into the spool in bulk. The append took {part('ring', 'no-params', 'write'):.0f} ns a launch with "
            f"`--no-params` against {part('shared', 'no-params', 'write'):.0f} ns for the shared buffer, and "
            f"{part('ring', 'defaults', 'write'):.0f} ns with the defaults. Taking turns "
            f"({t.get('copies')} processes per contestant, {t.get('rounds_done')} rounds) the ring build's defaults cost "
            f"{beyond(t, 'kjoule_default', 'kjoule_default_base')} beside the current build's: no gain. So the "
            f"lock and the buffer's cold lines are not where the append's time goes. In these turns the current "
            f"build's defaults cost {beyond(t, 'kjoule_default_base', 'cupti_activity_only')} beyond CUPTI's "
            f"activity records alone, and a window open throughout (the ring build) "
            f"{beyond(t, 'kjoule_capture_inside', 'cupti_activity_only')}.")


def tracing_launch_lean(r):
    """The leaner launch handler against the previous build, and the warm-ahead trial
    (trace_launch_lean.json)."""
    f = "trace_launch_lean.json"
    d = r.load(f)
    lean, ahead_l, ahead_p = d["lean_vs_previous"], d["warm_ahead_vs_lean"], d["warm_ahead_vs_previous"]
    g, ga = lean["turns_gpt2m"], ahead_p["turns_gpt2m"]
    return (f"The handler was then made leaner ({r.where(f)}, `bench/results/{f}`): the parameter block is "
            f"copied once (each parameter to its offset and only the gaps between them zeroed, where the "
            f"block was cleared whole first), a thread's group cache slot holds what a launch needs (a hit "
            f"reads nothing else), and the spool's next lines and its lock are asked for at the start of the "
            f"launch's handling, so that their fetch overlaps the lookups. A loop of empty kernels each taking "
            f"a 512-byte block by value, launched after 256 KiB of other reads (`event_cost kernel_block`, "
            f"{lean['event_kernel_block'].get('copies')} process a contestant), took "
            f"{over_base(lean['event_kernel_block'])} per launch beside the previous build under the defaults, and "
            f"the same loop without parameters (`kernel_cold`) {over_base(lean['event_kernel_cold'])}. On the "
            f"GPT-2-medium-shaped eager forward ({g.get('copies')} processes a contestant) the two builds did "
            f"not differ: {over_base(g)}; there the defaults cost "
            f"{beyond(g, 'kjoule_default', 'cupti_activity_only')} and a window open throughout "
            f"{beyond(g, 'kjoule_capture_inside', 'cupti_activity_only')} beyond CUPTI's activity records alone, "
            f"the two pooled {same_work_beyond_cupti(g)}: the eager forward inside a window still costs about "
            f"the 3 % it is held to, with an interval past it. "
            f"Asking, after each record, for the buffer's next 1 KiB as well was measured and left out: on "
            f"`kernel_block` ({ahead_l['event_kernel_block'].get('copies')} processes a contestant) it took "
            f"{over_base(ahead_l['event_kernel_block'])} beside the lean build and "
            f"{over_base(ahead_p['event_kernel_block'])} beside the previous one, but the GPT-2 forward took "
            f"{over_base(ga)} beside the previous build, where the defaults cost "
            f"{beyond(ga, 'kjoule_default', 'cupti_activity_only')} and a window open throughout "
            f"{beyond(ga, 'kjoule_capture_inside', 'cupti_activity_only')} beyond CUPTI alone. Each interval "
            f"covers the rounds only; processes of one contestant differ by more (the process lottery above).")


def tracing_launch_parts(r):
    """Where the defaults' cost beyond CUPTI goes: CUPTI's dispatch of kjoule's callbacks, the
    handlers without parameters, the parameter blocks (trace_launch_parts.json)."""
    f = "trace_launch_parts.json"
    t = r.load(f)["turns_gpt2m"]
    sm = t.get("summary") or {}
    return (f"Where the defaults' cost beyond CUPTI goes on the same forward ({r.where(f)}, `bench/results/{f}`, "
            f"{t.get('copies')} processes a contestant, {t.get('rounds_done')} rounds; CUPTI's activity records alone "
            f"{ratio(turn_ratio(sm, 'cupti_activity_only'))}, the defaults {ratio(turn_ratio(sm, 'kjoule_default'))}): "
            f"kjoule's callbacks enabled but returning at once cost "
            f"{beyond(t, 'kjoule_empty_handlers', 'cupti_activity_only')} beyond CUPTI alone (CUPTI's dispatch of "
            f"them); its handlers without parameters (`--no-params`) "
            f"{beyond(t, 'kjoule_no_params', 'kjoule_empty_handlers')} beyond that; the parameter blocks (the "
            f"defaults over `--no-params`) {beyond(t, 'kjoule_default', 'kjoule_no_params')}; in all "
            f"{beyond(t, 'kjoule_default', 'cupti_activity_only')}. So kjoule's own code on the launching thread, "
            f"not CUPTI's dispatch of it, is most of the cost, and the parameter blocks, written whole into the "
            f"spool at every launch, about half of it.")


def tracing_block_refs(r):
    """The trial that sent a block its thread sent before as a hash, against main's launch path
    (trace_block_refs.json); not merged."""
    f = "trace_block_refs.json"
    d = r.load(f)
    ev, g = d["event_kernel_block"], d["turns_gpt2m"]
    tests = gpu_tests_line(d)

    def verdict(t, where):
        per = t["ratio_per_round"]
        lo, hi = paired(per["kjoule_default"], per["kjoule_default_base"])["ci95"]
        return (f"{where} the hash costs more than the bytes it saves" if lo > 1 else
                f"{where} it saves more than the hash costs" if hi < 1 else
                f"{where} the two do not differ beyond the rounds' interval")
    return (f"Sending a block its thread had sent before as a 64-bit hash of it, the ingest finding the "
            f"block again by that hash, was tried and not merged ({r.where(f)}, `bench/results/{f}`, "
            f"{g.get('copies')} processes a contestant; `gpu_trace` with it: {tests}). It "
            f"writes fewer bytes but hashes every block: on `kernel_block` it took {over_base(ev)} per "
            f"launch beside the build that sends each block whole, and on the GPT-2 forward "
            f"{over_base(g)}, where the whole-block build cost "
            f"{beyond(g, 'kjoule_default_base', 'cupti_activity_only')} beyond CUPTI alone and the trial "
            f"{beyond(g, 'kjoule_default', 'cupti_activity_only')}: {verdict(ev, 'on the loop')}, "
            f"{verdict(g, 'on the forward')}.")


def over_base(t):
    """The current build's defaults beyond the other build's (`kjoule_default_base`) in turns t."""
    return beyond(t, "kjoule_default", "kjoule_default_base")


def gpu_tests_line(d):
    """The GPU tests' summary lines of an A/B result (its `gpu_tests`), or "not run"."""
    return "; ".join(x.strip() for x in d.get("gpu_tests") or []
                     if "tests passed" in x or "tests failed" in x) or "not run"


def tracing_launch_trials(r):
    """Two trials on the parameter blocks' path, each measured against the build that gathers a block
    on the stack and sends it whole, and not kept (trace_word_diffs.json, trace_spool_in_place.json),
    with the spool's bytes a launch from the CPU harness (launch_path.json)."""
    fw, fs, fl = "trace_word_diffs.json", "trace_spool_in_place.json", "launch_path.json"
    w, sp, lp = r.load(fw), r.load(fs), r.load(fl)
    bytes_of = lambda modes: modes["defaults"][0]["spool_bytes_per_launch"]
    whole, words = bytes_of(lp["modes"]), bytes_of(lp["others"]["word_diffs"]["modes"])
    null = sorted(lp["others"]["word_diffs"]["ratio_per_pair"]["no_params"]
                  + lp["others"]["spool_in_place"]["ratio_per_pair"]["no_params"])
    g1, g2 = w["turns_gpt2m"], sp["turns_gpt2m"]
    ins = lp["instructions_per_launch"]
    return (f"Two more changes to the parameter blocks' path were measured and not kept; each stays on "
            f"a branch. Sending, for a block of 128 bytes or more, only the words that differ from its "
            f"group's first block when they take at most half its bytes (branch `trial-word-diffs`; "
            f"{r.where(fw)}, `bench/results/{fw}`, {g1.get('copies')} processes a contestant; GPU tests "
            f"with it: {gpu_tests_line(w)}) cut the spool from {whole:.0f} to {words:.0f} bytes a launch on the "
            f"shipped BLOOM-560M run's kept iteration (`bench/results/{fl}`), but took "
            f"{over_base(w['event_kernel_block'])} per launch on `kernel_block` and {over_base(g1)} on the "
            f"GPT-2 forward beside the whole-block build: comparing a block costs about what writing it "
            f"does. Gathering the block straight into the spool's buffer instead of onto the stack "
            f"(branch `trial-spool-in-place`; {r.where(fs)}, `bench/results/{fs}`; GPU tests with it: "
            f"{gpu_tests_line(sp)}) took {over_base(sp['event_kernel_block'])} on `kernel_block`, "
            f"{over_base(sp['event_kernel_cold'])} on `kernel_cold` and {over_base(g2)} on the GPT-2 forward: "
            f"no gain. "
            f"In these turns the defaults cost {beyond(g1, 'kjoule_default_base', 'cupti_activity_only')} "
            f"and {beyond(g2, 'kjoule_default_base', 'cupti_activity_only')} beyond CUPTI alone, and a "
            f"window open throughout {beyond(g1, 'kjoule_capture_inside', 'cupti_activity_only')} and "
            f"{beyond(g2, 'kjoule_capture_inside', 'cupti_activity_only')}. The CPU harness "
            f"(`bench/launch_path`, the launch path over a stand-in driver) could not tell the builds' "
            f"times apart on the shared development machine ({lp['device']}, {lp['cpus']} CPUs): the "
            f"same code against itself (`--no-params`) ranged {null[0]:.2f} to {null[-1]:.2f} over "
            f"{len(null)} pairs. Counted instead (valgrind's callgrind, which that noise does not move), "
            f"the launch record executes {ins['this']['defaults']:.0f} instructions a launch with the "
            f"defaults and {ins['this']['no_params']:.0f} without parameters; with the words compared "
            f"{ins['word_diffs']['defaults']:.0f}, and with the block gathered into the spool "
            f"{ins['spool_in_place']['defaults']:.0f}, which did not make the forward faster: a launch's "
            f"cost on a real program is not its instruction count alone.")


def tracing_tls_exit(r):
    """The build with a small thread-local block in static TLS, a short launch exit and the launch
    functions in .text.hot, against the build before it (trace_tls_exit.json): the probes' exit
    callback in each build, kernel_block and the GPT-2 forward."""
    f = "trace_tls_exit.json"
    d = r.load(f)
    runs = d["cost_self"]["calls"]
    exit_ns = {b: sorted(x["parts"]["launch_exit"]["mean_ns"] for x in runs[b]["runs"]) for b in ("base", "new")}
    placed = sorted({x.get("thread_local_block", "not reported") for x in runs["new"]["runs"]})
    g = d["turns_gpt2m"]
    span = lambda v: f"{v[0]:.0f} to {v[-1]:.0f} ns"
    return (f"The handler's own steps on the launching thread were then made shorter where its probes can "
            f"see them ({r.where(f)}, `bench/results/{f}`; GPU tests with it: {gpu_tests_line(d)}, the one "
            f"failure a benchmark binary left out of what was copied to the machine, passing once copied). "
            f"The injection library's thread-local block is kept small (its caches on the heap, freed when "
            f"a thread ends) and built with TLS descriptors, so that glibc, which opens the library after "
            f"the program started, can place it in the static TLS it keeps spare; there an access is one "
            f"load instead of a call to `__tls_get_addr`, and the probe build said where the block went: "
            f"{', '.join(placed)}, in each of its {len(runs['new']['runs'])} processes. A launch's exit "
            f"callback with nothing to do returns before the dispatcher's checks, and the functions every "
            f"launch passes through sit together in `.text.hot`. Timed by the probes (`KJOULE_COST_SELF`, "
            f"{len(runs['base']['runs'])} processes of each build in turn, the GPT-2-medium shape), the exit "
            f"callback took {span(exit_ns['new'])} a launch against {span(exit_ns['base'])} before. On "
            f"`kernel_block` the build took {over_base(d['event_kernel_block'])} per launch beside the one "
            f"before it, and on the GPT-2 forward ({g.get('copies')} processes a contestant) "
            f"{over_base(g)}: a few tens of nanoseconds a launch are not a difference the forward's turns "
            f"can see. There the defaults cost {beyond(g, 'kjoule_default', 'cupti_activity_only')} "
            f"beyond CUPTI alone and a window open throughout "
            f"{beyond(g, 'kjoule_capture_inside', 'cupti_activity_only')}.")


def tracing_eager_floor(r):
    """What the eager forward's cost beyond CUPTI is made of, on one host (trace_eager_floor.json),
    and what that says of the 3 % target: where the handlers without parameters already reach it."""
    f, fl = "trace_eager_floor.json", "launch_path.json"
    t = r.load(f)["turns_gpt2m"]
    record = r.load(fl)["modes"]["no_params"][0]["spool_bytes_per_launch"]
    per = t["ratio_per_round"]
    np_over = paired(per["kjoule_no_params"], per["cupti_activity_only"])
    lo, mid = (np_over["ci95"][0] - 1) * 100, (np_over["median"] - 1) * 100
    held = 3.0
    verdict = ("already more than the 3 % that the eager forward inside a window is held to, over the "
               "whole interval" if lo > held else
               "already about the 3 % that the eager forward inside a window is held to" if mid > held - 1 else
               "less than the 3 % that the eager forward inside a window is held to")
    return (f"What that cost is made of, measured again with this build on one host ({r.where(f)}, "
            f"`bench/results/{f}`, {t.get('copies')} processes a contestant, {t.get('rounds_done')} rounds). "
            f"kjoule's callbacks enabled but returning at once cost "
            f"{beyond(t, 'kjoule_empty_handlers', 'cupti_activity_only')} beyond CUPTI alone: that is CUPTI's "
            f"dispatch of the two callbacks on each launch. Its handlers without parameters cost "
            f"{beyond(t, 'kjoule_no_params', 'kjoule_empty_handlers')} beyond that. So `--no-params`, which "
            f"reads no parameter word and writes {record:.0f} bytes a launch (`bench/results/{fl}`), costs "
            f"{beyond(t, 'kjoule_no_params', 'cupti_activity_only')} beyond CUPTI alone: {verdict}. The "
            f"parameter blocks add {beyond(t, 'kjoule_default', 'kjoule_no_params')}. In all, the defaults "
            f"cost {beyond(t, 'kjoule_default', 'cupti_activity_only')} and a window open throughout "
            f"{beyond(t, 'kjoule_capture_inside', 'cupti_activity_only')}.")


def over_copies(t, a, b, resamples=10000):
    """A's cost beyond B's over processes: each process's ratio to untraced (turns.py's
    ratio_per_copy), the mean of A's over the mean of B's, with a 95 % interval from resampling
    each contestant's processes (a fixed seed, so the text is the same each time)."""
    sm = t["summary"]
    xa, xb = list(sm[a]["ratio_per_copy"].values()), list(sm[b]["ratio_per_copy"].values())
    mean = lambda v: sum(v) / len(v)
    rng = random.Random(0)
    boot = sorted(mean([rng.choice(xa) for _ in xa]) / mean([rng.choice(xb) for _ in xb])
                  for _ in range(resamples))
    lo, hi = boot[int(0.025 * resamples)], boot[int(0.975 * resamples) - 1]
    return (f"{pct((mean(xa) / mean(xb) - 1) * 100)} (over {len(xa)} and {len(xb)} processes, 95 % "
            f"{pct((lo - 1) * 100)} to {pct((hi - 1) * 100)})")


def tracing_eager_six(r):
    """The defaults and --no-params beside CUPTI alone with several processes a contestant, bounded over
    rounds and over processes (trace_eager_six.json)."""
    f = "trace_eager_six.json"
    t = r.load(f)["turns_gpt2m"]
    sm = t["summary"]
    spread = lambda c: (min(sm[c]["ratio_per_copy"].values()), max(sm[c]["ratio_per_copy"].values()))
    dlo, dhi = spread("kjoule_default")
    clo, chi = spread("cupti_activity_only")
    return (f"With {t.get('copies')} processes a contestant ({r.where(f)}, `bench/results/{f}`, {t.get('rounds_done')} "
            f"rounds), the process lottery can be averaged and bounded: the defaults' processes ran "
            f"between {ratio(dlo)} and {ratio(dhi)} the untraced forward, CUPTI alone's between "
            f"{ratio(clo)} and {ratio(chi)}. The defaults cost {beyond(t, 'kjoule_default', 'cupti_activity_only')} "
            f"beyond CUPTI alone, round by round, and {over_copies(t, 'kjoule_default', 'cupti_activity_only')} "
            f"process by process; `--no-params` {beyond(t, 'kjoule_no_params', 'cupti_activity_only')} and "
            f"{over_copies(t, 'kjoule_no_params', 'cupti_activity_only')}; the parameter blocks (the defaults "
            f"over `--no-params`) {beyond(t, 'kjoule_default', 'kjoule_no_params')}.")


def tracing_capture(r):
    """What a capture window costs outside it, and the database it leaves (capture_overhead.json)."""
    f = "capture_overhead.json"
    t = lambda c: r.num(f, f"turns_gpt2m/summary/{c}/ratio_to_plain")
    q = lambda c, k: r.num(f, f"turns_gpt2m/summary/{c}/{k}")
    cap, full = (lambda k: r.num(f, f"steps10k/capture/{k}")), (lambda k: r.num(f, f"steps10k/full/{k}"))
    checks = r.get(f, "gpu_test_checks")
    failed = [c[5:] for c in checks if c.startswith("FAIL")]
    tg = r.load(f)["turns_gpt2m"]
    sm = tg["summary"]
    cupti, no_params = turn_ratio(sm, "cupti_activity_only"), turn_ratio(sm, "kjoule_no_params")
    attached = turn_ratio(sm, "kjoule_capture_late_attached")
    beside = ""
    inside = turn_ratio(sm, "kjoule_capture_inside")
    if cupti is not None:  # CUPTI alone, a window open throughout and --no-params, where this result has them
        beside = (f" and CUPTI's activity records alone {ratio(cupti)} ("
                  + (f"inside a window open throughout, {ratio(inside)}: "
                     f"{beyond(tg, 'kjoule_capture_inside', 'cupti_activity_only')} beyond CUPTI; "
                     if inside is not None else "")
                  + f"the defaults {beyond(tg, 'kjoule_default', 'cupti_activity_only')} beyond CUPTI"
                  + (f", `--no-params` {beyond(tg, 'kjoule_no_params', 'cupti_activity_only')}" if no_params is not None else "")
                  + f"; over {r.num(f, 'turns_gpt2m/rounds')} rounds)")
    kept_in = (f" ({ratio(attached)} with CUPTI kept in, `--capture-attached`)" if attached is not None else "")
    return (f"Measured ({r.where(f)}, `bench/results/{f}`): on the GPT-2-medium-shaped eager forward, taking "
            f"turns, a window that never opens costs {ratio(t('kjoule_capture_late'))} "
            f"(quartiles {ratio(q('kjoule_capture_late', 'ratio_q25'))}–{ratio(q('kjoule_capture_late', 'ratio_q75'))})"
            f"{kept_in} against the defaults' {ratio(t('kjoule_default'))}" + beside + ". A program of 10,000 steps of 4 launches traced "
            f"with `--capture step@5000:20` keeps {cap('kernels')} kernels in a {cap('db_bytes') / 1e6:.2f} MB "
            f"database; traced whole, {full('kernels')} kernels in {full('db_bytes') / 1e6:.2f} MB "
            f"({full('bytes_per_launch'):.0f} bytes a launch). The GPU test passed {len(checks) - len(failed)} of "
            f"{len(checks)} checks" + (f"; failed: {'; '.join(failed)}" if failed else "") + rerun(r, f) + ". "
            + capture_tools(r, f) + " " + capture_inside_pooled(r, f, tg))


def turns_copies(r, f, t):
    """Processes per contestant of a capture.sh result's GPT-2 turns t: as kept (copies), else from
    its command (CAP_TURNS_COPIES, 1 unset)."""
    if t.get("copies"):
        return t["copies"]
    m = re.search(r"CAP_TURNS_COPIES=(\d+)", r.get(f, "command"))
    return int(m.group(1)) if m else 1


def capture_inside_pooled(r, f, tg):
    """The eager forward inside a window: the two settings that do its work, pooled, in this result
    and in capture_inside_gpt2m.json (another call, more processes a contestant)."""
    g = "capture_inside_gpt2m.json"
    t3 = r.load(g)
    return (f"The defaults and a window open throughout do the same work on each launch: pooled, they cost "
            f"{same_work_beyond_cupti(tg)} beyond CUPTI here ({turns_copies(r, f, tg)} processes a "
            f"contestant), and {same_work_beyond_cupti(t3)} in another call with {t3['copies']} processes a "
            f"contestant ({r.where(g)}, `bench/results/{g}`; there the defaults alone "
            f"{beyond(t3, 'kjoule_default', 'cupti_activity_only')}, the window alone "
            f"{beyond(t3, 'kjoule_capture_inside', 'cupti_activity_only')}, `--no-params` "
            f"{beyond(t3, 'kjoule_no_params', 'cupti_activity_only')}).")


def capture_tools(r, f):
    """compare, replay and report on the captured 10,000-step database, where measured."""
    t = r.load(f).get("steps10k", {}).get("tools_on_capture")
    if not isinstance(t, dict) or not all(k in t for k in ("compare", "replay", "report")):
        return "`compare`, `replay` and `report` on the captured database are not measured in this result."
    ok = [k for k in ("compare", "replay", "report") if t[k].get("rc") == 0]
    return (f"Of `compare`, `replay --energy` and `report` on the captured database, {', '.join(ok) or 'none'} exited 0 "
            "(" + ", ".join(f"{k} {t[k]['seconds']:.0f} s" for k in ("compare", "replay", "report")) + ").")


# the words for each loop scripts/gpu/capture_energy.sh runs; a loop of the result without them fails
CAPTURE_LOOPS = {"eager_hostbound": "the eager step of the small shape (host-paced)",
                 "eager_gpubound": "the same model with 4\u00d7 the tokens a step (GPU-paced, at the power limit)",
                 "cuda_graph": "the small shape's step replayed as one CUDA graph (GPU-paced, at the power limit)"}


def tracing_capture_energy(r):
    """Each steady loop's captured iterations against the whole run's energy (capture_energy.json)."""
    f = "capture_energy.json"
    rows = []
    for name, l in r.get(f, "loops").items():
        what = CAPTURE_LOOPS.get(name)
        if what is None:
            raise Missing(f"bench/results/{f}: loop {name} has no words in docs_numbers.py's CAPTURE_LOOPS")
        g, c, w = l.get("energy_agreement"), l.get("captured") or {}, l.get("whole_run") or {}
        if not isinstance(g, dict):
            raise Missing(f"bench/results/{f}: loops/{name} has no energy_agreement ({l.get('energy_why') or l.get('error')})")
        said = l.get("program_says") or {}
        nvml = said.get("energy_j_per_step_nvml")
        verdict = {True: "within", False: "**outside**", None: "not judged"}[g.get("within")]
        rows.append(f"| {what}: `{l['program'].removeprefix('examples/gpt_train.py ')}`, `{l['capture']}` | "
                    f"{c['energy_j_mean']:.2f} \u00b1 {c['energy_unc_j_mean']:.2f} J ({c['instances']}) | "
                    f"{w['energy_j_mean']:.2f} \u00b1 {w['energy_unc_j_mean']:.2f} J ({w['instances']}, first "
                    f"{w['warmup_left_out']} left out) | "
                    f"{sgn(g['apart_pct'], 2)} | {pct(g['bound_pct'], 2)}: {verdict} | {sgn(l['captured_slower_pct'], 1)} | "
                    + (f"{nvml:.2f} J" if isinstance(nvml, (int, float)) else "\u2014") + " |")
    return (f"Measured ({r.where(f)}, `bench/results/{f}`; each loop one run of `kjoule run --capture`, CUPTI "
            "taken out outside the window):\n\n"
            "| loop | captured: energy per iteration (instances) | whole run, warm-up left out | apart | bounds added | "
            "captured iterations' wall time against the run's | the program's own NVML energy per step, all its steps |\n"
            "| --- | --- | --- | --- | --- | --- | --- |\n" + "\n".join(rows))


def rerun(r, f):
    """The GPU test's later whole run, where the result holds one."""
    g = r.load(f).get("gpu_test_rerun")
    if not g:
        return ""
    return (f"; run again on {g['date']} with kjoule's NVTX hooks, it " + ("passed whole" if g["passed"] is True else "failed")
            + f" ({g['seconds']:.0f} s)")


def capture_diag(r):
    """The JAX step once per setting (capture_diag.json): what CUPTI's NVTX callbacks cost it."""
    f = "capture_diag.json"
    runs = [x for x in r.get(f, "runs") if x["program"] == "jax_step" and x["rc"] == 0 and x.get("output")]
    ms = {}
    for x in runs:
        ms.setdefault(x["setting"], []).append(x["output"]["median_ms"])
    need = ("plain", "full", "late", "prof")
    if not all(k in ms for k in need):
        raise Missing(f"bench/results/{f}: no JAX step run of every setting ({', '.join(need)})")
    m = lambda k: f"{sorted(ms[k])[len(ms[k]) // 2]:.2f}"
    return (f"Run once per setting in turn ({r.where(f)}, `bench/results/{f}`, the build that used CUPTI's NVTX callbacks), "
            f"the JAX step took {m('late')} ms a step under an NVTX window that never opens (CUPTI's NVTX callbacks on), "
            f"{m('prof')} ms under a cuda-profiler-api window that never opens (no NVTX callbacks), {m('full')} ms traced "
            f"whole and {m('plain')} ms untraced.")


def host_turns(r, key="turns_jax_step", what="The JAX step", part="2c"):
    """A host-bound program taking turns (capture_overhead.json's turns_jax_step or turns_decode),
    where measured."""
    f = "capture_overhead.json"
    t = (r.load(f).get(key) or {})
    sm = t.get("summary") or {}
    need = ("kjoule_default", "kjoule_capture_late", "cupti_activity_only")
    if any(turn_ratio(sm, k) is None for k in need):
        return f"{what} taking turns in live processes (many rounds; `scripts/gpu/capture.sh` part {part}) is not measured yet."
    g = lambda k: turn_ratio(sm, k)
    q = lambda k: f"{ratio(sm[k]['ratio_q25'])}–{ratio(sm[k]['ratio_q75'])}"
    kept_in = (f" ({ratio(g('kjoule_capture_late_attached'))} with CUPTI kept in)"
               if g("kjoule_capture_late_attached") is not None else "")
    return (f"{what} taking turns in live processes ({t.get('rounds')} rounds, `bench/results/{f}`): a window that never "
            f"opens costs {ratio(g('kjoule_capture_late'))} (quartiles {q('kjoule_capture_late')}){kept_in}, the defaults "
            f"(as inside a window) {ratio(g('kjoule_default'))}, CUPTI alone {ratio(g('cupti_activity_only'))}: the "
            f"defaults {beyond(t, 'kjoule_default', 'cupti_activity_only')} beyond CUPTI.")


def capture_outside(r):
    """What a window that never opens costs with CUPTI taken out and kept in (capture_outside.json),
    and which piece of CUPTI the decode loop paid for (capture_cupti_pieces.json)."""
    f = "capture_outside.json"
    pr = r.load(f).get("programs") or {}
    g = lambda p, k: turn_ratio((pr.get(p) or {}).get("summary"), k)
    need = ("kjoule_capture_late", "kjoule_capture_late_attached")
    if any(g("decode", k) is None for k in need):
        raise Missing(f"bench/results/{f}: the decode loop without {' or '.join(need)}")
    q = lambda p, k: (f"{ratio(pr[p]['summary'][k]['ratio_q25'])}–{ratio(pr[p]['summary'][k]['ratio_q75'])}")
    text = (f"Taking turns ({r.where(f)}, `bench/results/{f}`, {pr['decode'].get('rounds_done')} rounds), the compiled "
            f"decode loop under a window that never opens costs {ratio(g('decode', 'kjoule_capture_late'))} (quartiles "
            f"{q('decode', 'kjoule_capture_late')}) with CUPTI taken out once the program has settled, and "
            f"{ratio(g('decode', 'kjoule_capture_late_attached'))} ({q('decode', 'kjoule_capture_late_attached')}) with "
            f"it kept in (`--capture-attached`).")
    if all(g("gpt2m", k) is not None for k in need):
        rss = (pr["gpt2m"]["summary"].get("rss_over_plain_mb") or {})
        text += (f" The eager GPT-2 forward ({pr['gpt2m'].get('rounds_done')} rounds): {ratio(g('gpt2m', 'kjoule_capture_late'))} "
                 f"({q('gpt2m', 'kjoule_capture_late')}) taken out, {ratio(g('gpt2m', 'kjoule_capture_late_attached'))} "
                 f"({q('gpt2m', 'kjoule_capture_late_attached')}) kept in")
        if all(isinstance(rss.get(k), (int, float)) for k in need):
            text += (f" (peak host memory over untraced +{rss['kjoule_capture_late']:.0f} MB against "
                     f"+{rss['kjoule_capture_late_attached']:.0f} MB: CUPTI's buffers were given back)")
        text += (": the two do not differ beyond the ±3 % two identical processes differ by, one process a "
                 "contestant, so this call does not judge the 1.02× target for the eager forward.")
    return text + " " + cupti_pieces(r)


def cupti_pieces(r):
    """Which piece of CUPTI the decode loop paid for with CUPTI kept in (capture_cupti_pieces.json)."""
    f = "capture_cupti_pieces.json"
    runs = r.get(f, "runs")
    v = {}
    for run in runs:
        for k, x in (run.get("summary") or {}).items():
            if isinstance(x, dict) and isinstance(x.get("ratio_to_plain"), (int, float)):
                v.setdefault(k, []).append(x["ratio_to_plain"])
    one = lambda k: "/".join(ratio(x) for x in v[k])
    need = ("kjoule_capture_late", "kjoule_capture_late_cupti_idle", "kjoule_noop_inject",
            "kjoule_capture_late@no_nvtx", "kjoule_capture_late@no_subscribe", "kjoule_capture_late@no_activity",
            "kjoule_capture_late@no_activity+no_subscribe+no_nvtx")
    if any(k not in v for k in need):
        raise Missing(f"bench/results/{f}: a run without one of {', '.join(need)}")
    rounds = "/".join(str(run.get("rounds_done")) for run in runs)
    return (f"Why ({r.where(f)}, `bench/results/{f}`, {rounds} rounds, CUPTI kept in): the decode loop under a window "
            f"that never opens cost {one('kjoule_capture_late')}; with nothing of CUPTI's ever enabled "
            f"{one('kjoule_capture_late_cupti_idle')}; without CUPTI's NVTX hooks {one('kjoule_capture_late@no_nvtx')}, "
            f"without its callback subscriber {one('kjoule_capture_late@no_subscribe')}, without its activity API "
            f"{one('kjoule_capture_late@no_activity')}, without all three "
            f"{one('kjoule_capture_late@no_activity+no_subscribe+no_nvtx')}; under an injection library that does "
            f"nothing {one('kjoule_noop_inject')}. Any piece of CUPTI left in costs the whole: CUPTI in the process "
            f"costs every CUDA call, whatever is enabled. Allocation records, the power sampler, libkjoule_nccl.so "
            f"and the buffer period each changed nothing (" + ", ".join(
                f"{one(k)}" for k in ("kjoule_capture_late_no_alloc", "kjoule_capture_late_no_nccl",
                                      "kjoule_capture_late_flush5000") if k in v) + ").")


def tracing_hostbound(r):
    """A capture window on the jitted JAX step, before and after kjoule's own NVTX hooks
    (capture_hostbound.json), and the cost per event kind (trace_event_costs.json)."""
    f, e = "capture_hostbound.json", "trace_event_costs.json"
    late = lambda k: r.num(f, f"jax_step/ratios/{k}/median")
    q = lambda k, i: r.num(f, f"jax_step/ratios/{k}/quartiles/{i}")
    old = lambda k: r.num(f, f"jax_step_cupti_nvtx_callbacks/ratios/{k}/median")
    text = (f"On the jitted JAX step ({r.where(f)}, `bench/results/{f}`, {r.num(f, 'jax_step/rounds')} rounds of whole "
            f"runs, each run's own median step): a window that never opens costs {ratio(late('capture_late'), 2)} "
            f"(quartiles {ratio(q('capture_late', 0), 2)}–{ratio(q('capture_late', 1), 2)}), a window open throughout "
            f"{ratio(late('capture_inside'), 2)}, CUPTI's activity records alone {ratio(late('cupti_only'), 2)}; through "
            f"CUPTI's NVTX callbacks the same windows cost {ratio(old('capture_late'), 2)} and "
            f"{ratio(old('capture_inside'), 2)} ({r.num(f, 'jax_step_cupti_nvtx_callbacks/rounds')} rounds). So few rounds "
            f"do not judge the targets (1.02× outside the window, CUPTI + 5 % inside); "
            + ("the compiled decode loop has no whole-run pairs; it is measured taking turns below"
               if r.load(f).get("decode_compiled") is None else "") + ".")
    text += (" " + host_turns(r) + " " + host_turns(r, "turns_decode", "The compiled decode loop", "2d") + " "
             + capture_outside(r) + " " + capture_diag(r))
    raw = r.get(e, "raw")
    names = {"kernel": "empty kernel launch", "nvtx": "NVTX push + pop", "graph": "graph launch (1 kernel)",
             "graph64": "graph launch (64 kernels)", "host": "4-byte device-to-host read, waited for"}
    turns = [k for k in raw if (raw[k] or {}).get("method") == "turns"]
    whole = [k for k in raw if k not in turns]
    how = []
    if turns:
        how.append(f"{', '.join(names.get(k, k) for k in turns)}: live processes taking turns, at least "
                   f"{min(int(raw[k].get('rounds') or 0) for k in turns)} rounds a kind, each the paired difference "
                   "of one round's block medians")
    if whole:
        how.append(f"{', '.join(names.get(k, k) for k in whole)}: **one round of whole runs**, a paired difference "
                   "of two runs' medians over 37 blocks, so a difference is not told apart from the host's own speed "
                   "phases, which move host-bound timings by up to 30 % between runs")
    how = "; ".join(how)
    rows = ["", "Cost per traced event, µs (" + r.where(e) + f", `bench/results/{e}`; {how}):", "",
            "| event | untraced | traced whole | `--no-params` | CUPTI alone | inside a window | outside a window (CUPTI taken out) |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    costs = r.get(e, "costs_us_per_event")
    for k in (k for k in names if k in costs):
        def c(s, k=k):
            v = (costs[k].get(s) or {}).get("median")
            return f"{v:+.2f}" if isinstance(v, (int, float)) else "not measured"
        rows.append(f"| {names[k]} | {r.num(e, f'costs_us_per_event/{k}/plain_us_per_event'):.3f} | {c('full_trace')} "
                    f"| {c('no_params')} | {c('cupti_only')} | {c('capture_inside')} | {c('capture_late')} |")
    rows += [""] + hostbound_breakdown(r, e)
    return text + "\n" + "\n".join(rows)


def hostbound_breakdown(r, e):
    """The JAX step and the decode loop priced from the events they make, against what they measured
    (trace_event_costs.json's programs)."""
    progs = {p["name"]: p for p in r.get(e, "programs")}
    if set(progs) != {"jax_step", "decode"}:
        raise Missing(f"bench/results/{e}: programs {sorted(progs)}, not jax_step and decode")
    us = lambda x: f"{x:,.1f} µs" if abs(x) < 100 else f"{x / 1000:.2f} ms"

    def events(p):
        n = p["events_per_step"]
        parts = [f"{n['kernel']:.0f} kernel launches" if n["kernel"] else None,
                 f"{n['graph']:.0f} graph launch{'es' if n['graph'] != 1 else ''} of {n['graph_kernels']:.0f} kernels"
                 if n["graph"] else None,
                 f"{n['nvtx']:.0f} NVTX range{'s' if n['nvtx'] != 1 else ''}" if n["nvtx"] else None,
                 f"{n['host']:.0f} host reads" if n["host"] else None,
                 f"{n['other_copies']:.0f} other copies and memsets (not priced)" if n["other_copies"] else None]
        return ", ".join(x for x in parts if x)

    def cell(p, s):
        return f"{us(p['sum_us'][s])} / {us(p['measured_us'][s])}"

    def share(p, s):
        return p["sum_us"][s] / p["measured_us"][s]
    what = {"jax_step": "the JAX step", "decode": "the compiled decode loop, one request of 32 tokens"}
    rows = [f"Each program's step priced from these costs and the events it makes as traced (counted by "
            f"`bench/event_cost/program_events.py` over {r.num(e, 'program_events/jax_step/instances')} "
            f"steps), a graph launch of k kernels priced between the graph of one kernel and of 64, "
            f"against its cost per step taking turns (`{progs['jax_step']['measured']['from'].split('#')[0]}`, "
            f"{progs['jax_step']['measured']['rounds']} and {progs['decode']['measured']['rounds']} rounds, another call):", "",
            "| program: events a step | CUPTI alone: priced / measured | defaults: priced / measured | kjoule beyond CUPTI: priced / measured |",
            "| --- | --- | --- | --- |"]
    for k in ("jax_step", "decode"):
        p = progs[k]
        own = (us(p["sum_us"]["full_trace"] - p["sum_us"]["cupti_only"]) + " / "
               + us(p["measured_us"]["full_trace"] - p["measured_us"]["cupti_only"]))
        rows.append(f"| {what[k]}: {events(p)} | {cell(p, 'cupti_only')} | {cell(p, 'full_trace')} | {own} |")
    lo = min(share(progs[k], "cupti_only") for k in progs)
    hi = max(share(progs[k], "cupti_only") for k in progs)
    c = "trace_event_cold.json"
    cold = lambda k, s: r.num(c, f"costs_us_per_event/{k}/{s}/median")
    rows += ["", f"The event loops price {pct(lo * 100)} to {pct(hi * 100)} of what CUPTI costs these programs a "
             "step, and kjoule's own share beyond CUPTI is within the 5 % both programs are held to (the turns "
             "above). Where the rest of CUPTI's cost goes is not found. The calls the five kinds leave out (the "
             "decode loop's other copies and memsets) are not priced. Data caches taken from CUPTI between "
             "launches, as a framework's own work would take them, did not raise its cost: with 256 KiB of other "
             f"memory read before each launch (the kind `kernel_cold`; {r.where(c)}, `bench/results/{c}`, "
             f"{r.num(c, 'raw/kernel_cold/rounds')} rounds), CUPTI alone cost {cold('kernel_cold', 'cupti_only'):.2f} µs "
             f"a launch against {cold('kernel', 'cupti_only'):.2f} µs with the caches warm in the same call, and the "
             f"defaults {cold('kernel_cold', 'full_trace'):.2f} against {cold('kernel', 'full_trace'):.2f} µs."]
    return rows


def readme_multi_gpu(r):
    """The README's row for several GPUs (multi_gpu.json)."""
    f = "multi_gpu.json"
    ar = lambda k: r.num(f, f"sweep/all_reduce/{k}")
    after = r.get(f, "programs/tp_graph/ranks_after_replay")
    ef = [x["explained_fraction"] for x in after if isinstance(x.get("explained_fraction"), (int, float))]
    if len(ef) != len(after) or not ef:
        raise Missing(f"bench/results/{f}: programs.tp_graph: a rank without explained_fraction after replay")
    return (f"all_reduce bus bandwidth {ar('busbw_at_largest_gbps'):.0f} GB/s at {ar('largest_bytes') / 2**30:.0f} GiB "
            f"({pct(ar('of_nvlink_peak_pct'))} of NVLink's {r.num(f, 'nvlink_peak_gbps_per_direction')} GB/s), "
            f"held-out sizes predicted to {pct(ar('held_out_summary/time_mape_pct'))} in time, "
            f"{pct(ar('held_out_summary/energy_mape_pct'))} in energy; tensor-parallel decode in CUDA graphs "
            f"(all-reduces captured): explained {', '.join(f'{x:.3f}' for x in ef)} per rank after replay")


def multi_gpu_programs(r):
    """The traced programs of multi_gpu.json: per rank and for the job, explained after replay,
    and `predict --model --run` against the job (tiers where the operators' sum misses)."""
    f = "multi_gpu.json"
    # a program's title, from the arguments it ran with (run.py's "args")
    arg = lambda p, flag: p["args"][p["args"].index(flag) + 1]
    names = {"tp_graph": lambda p: f"Tensor-parallel LLaMA decode, CUDA graphs (`examples/llama7b_tp.py --cuda-graph`, "
                                   f"{arg(p, '--layers')} layers",
             "ddp": lambda p: f"DDP GPT-2 training step (`examples/ddp_train.py`, batch {arg(p, '--batch')} a rank"}
    out = [f"Measured on {r.where(f)} (`bench/results/{f}`):", ""]
    for name, title in names.items():
        if name not in r.get(f, "programs"):
            continue
        P = f"programs/{name}"
        job = r.get(f, f"{P}/compare/job")
        ranks = job["ranks"]
        out += [f"**{title(r.get(f, P))}, {len(ranks)} ranks)**", "", "| rank | wall (µs) | busy (µs) | NCCL (µs) | NCCL exposed (µs) | energy (mJ) | explained after replay |",
                "| --- | --- | --- | --- | --- | --- | --- |"]
        after = {x["rank"]: x.get("explained_fraction") for x in (r.get(f, P).get("ranks_after_replay") or [])}
        for x in ranks:
            e = after.get(x["rank"])
            out.append(f"| {x['rank']} | {x['wall_us']:.0f} | {x['busy_us']:.0f} | {x['nccl_us']:.0f} | "
                       f"{x['nccl_exposed_us']:.0f} | {x['energy_mj']:.0f} ± {x['energy_unc_mj']:.0f} | "
                       + (f"{e:.3f}" if isinstance(e, (int, float)) else "not replayed") + " |")
        ag = r.get(f, f"{P}/predict/against")
        m, pr, er = ag["measured"], ag["predicted"], ag["errors_pct"]
        out += ["", f"The job: {job['time_per_iteration_us']:.0f} µs an iteration (rank {job['slowest_rank']}, the "
                f"slowest), {job['energy_per_iteration_mj']:.0f} ± {job['energy_unc_mj']:.0f} mJ over its "
                f"{job['gpus']} GPUs, load imbalance {job['load_imbalance']:.3f}. `kjoule predict --model` (the "
                f"program's MODEL.yml, its operators swept on one GPU and the collectives on two) predicts "
                f"{pr['time_us']:.0f} µs and {pr['energy_j'] * 1e3:.0f} mJ a rank: {sgn(er['time'])} against the "
                f"job's time, {sgn(er['time_vs_kernel_sum'])} against the ranks' mean kernel sum "
                f"({m['kernel_sum_us']:.0f} µs), {sgn(er['energy'])} in energy per GPU. By tier, µs an iteration:", "",
                "| tier | predicted | measured | launches |", "| --- | --- | --- | --- |"]
        for t in ag["tiers"]:
            pv = f"{t['predicted_us']:.0f}" if isinstance(t["predicted_us"], (int, float)) else "-"
            out.append(f"| {t['tier']} | {pv} | {t['measured_us']:.0f} | {t['launches_per_iteration']:.0f} |")
        out.append("")
    return "\n".join(out).rstrip()


def multi_gpu_heldout(r):
    """The collectives' held-out sizes predicted by the log-log model of their training rows
    (multi_gpu.json, reanalyzed by bench/multi_gpu/run.py --reanalyze)."""
    f = "multi_gpu.json"
    sweep = r.get(f, "sweep")
    rows = []
    for op, s in sweep.items():
        if not s.get("held_out"):
            continue
        sm = r.get(f, f"sweep/{op}/held_out_summary")
        worst = max(s["held_out"], key=lambda h: abs(h["error_us_pct"]) if h["error_us_pct"] is not None else -1)
        rows.append(f"| `{op}` | {sm['n']} ({sm['n_in_grid']} inside) | {pct(r.num(f, f'sweep/{op}/held_out_summary/time_mape_pct'))} "
                    f"| {pct(r.num(f, f'sweep/{op}/held_out_summary/time_mape_in_grid_pct'))} "
                    f"| {pct(r.num(f, f'sweep/{op}/held_out_summary/energy_mape_pct'))} "
                    f"| {worst['bytes'] // 1024:,} KiB: {sgn(worst['error_us_pct'])} |")
    if not rows:
        raise Missing(f"bench/results/{f}: no collective with held-out sizes")
    dips = []  # a held-out size measured under both training sizes around it: no rising curve meets it
    for op, s in sweep.items():
        tr = sorted((int(x["bytes"]), float(x["F_dur(us)"])) for x in s["train_rows"] if x.get("status") == "ok")
        for h in s.get("held_out") or []:
            lo = [t for t in tr if t[0] < h["bytes"]]
            hi = [t for t in tr if t[0] > h["bytes"]]
            if lo and hi and h["measured_us"] < min(lo[-1][1], hi[0][1]):
                dips.append(f"`{op}` at {h['bytes'] // 1024:,} KiB measured {h['measured_us']:.2f} us, under both "
                            f"training sizes around it ({lo[-1][1]:.2f} us at {lo[-1][0] // 1024:,} KiB, "
                            f"{hi[0][1]:.2f} us at {hi[0][0] // 1024:,} KiB)")
    version = r.get(f, "analysis_version").split("\n")[0]
    return (f"Measured on {r.where(f)} (`bench/results/{f}`), predicted by {version}'s model of the training "
            f"rows (`bench/multi_gpu/run.py --reanalyze`, {r.get(f, 'analysis_date')[:10]}):\n\n"
            "| operator | held-out sizes | time MAPE | inside the grid | energy MAPE | worst time |\n"
            "| --- | --- | --- | --- | --- | --- |\n" + "\n".join(rows)
            + ("\n\n" + "; ".join(dips) + ": no curve that rises with size meets such a point." if dips else ""))


GENERATORS = {
    "tracing-capture": tracing_capture,
    "tracing-capture-energy": tracing_capture_energy,
    "tracing-spool-append": tracing_spool_append,
    "tracing-stage-ring": tracing_stage_ring,
    "tracing-launch-lean": tracing_launch_lean,
    "tracing-block-refs": tracing_block_refs,
    "tracing-eager-six": tracing_eager_six,
    "tracing-launch-trials": tracing_launch_trials,
    "tracing-tls-exit": tracing_tls_exit,
    "tracing-eager-floor": tracing_eager_floor,
    "tracing-launch-parts": tracing_launch_parts,
    "tracing-whole-blocks": tracing_whole_blocks,
    "tracing-hostbound": tracing_hostbound,
    "multi-gpu-heldout": multi_gpu_heldout,
    "multi-gpu-programs": multi_gpu_programs,
    "sweep-step-offgrid": sweep_step_offgrid,
    "energy-shared": energy_shared,
    "readme-headline": readme_headline,
    "readme-compare": readme_compare,
    "results-tracing": results_tracing,
    "results-replay": results_replay,
    "results-untuned": results_untuned,
    "results-energy": results_energy,
    "results-predict": results_predict,
    "results-step": results_step,
    "results-speed": results_speed,
}


def regenerate(path, text, r, problems):
    """TEXT with every block regenerated; problems gets 'FILE: block NAME: ...' for each failure."""
    out, pos = [], 0
    rel = os.path.relpath(path, r.root)
    while True:
        m = BEGIN.search(text, pos)
        if not m:
            if "<!-- kj:gen" in text[pos:]:
                problems.append(f"{rel}: a '<!-- kj:gen' line not of the form '<!-- kj:gen NAME -->'")
            out.append(text[pos:])
            return "".join(out)
        end = text.find(END, m.end())
        if end < 0:
            problems.append(f"{rel}: block {m.group(1)}: no {END} after it")
            out.append(text[pos:])
            return "".join(out)
        name, old = m.group(1), text[m.end():end]
        out.append(text[pos:m.end()])
        gen = GENERATORS.get(name)
        if gen is None:
            problems.append(f"{rel}: block {name}: no such generator in scripts/docs_numbers.py")
            new = old
        else:
            try:
                new = "\n" + wrap_prose(gen(r).strip("\n")) + "\n\n"
            except Missing as e:
                problems.append(f"{rel}: block {name}: {e}")
                new = old
        out.append(new)
        pos = end


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 where the docs differ")
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--results", default=None, help="default ROOT/bench/results")
    ap.add_argument("--kjoule", default=None, help="default ROOT/build/kjoule")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    kj = os.path.abspath(a.kjoule) if a.kjoule else os.path.join(root, "build", "kjoule")
    r = Results(a.results or os.path.join(root, "bench", "results"), kj, root)
    files = a.files or [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    problems, stale, blocks = [], [], 0
    for path in files:
        try:
            with open(path) as f:
                text = f.read()
        except OSError as e:
            problems.append(f"{path}: {e.strerror}")
            continue
        blocks += len(BEGIN.findall(text))
        new = regenerate(path, text, r, problems)
        if new == text:
            continue
        rel = os.path.relpath(path, root)
        if a.check:
            old_blocks = dict((m.group(1), m) for m in BEGIN.finditer(text))
            for name in old_blocks:
                o = text[old_blocks[name].end():text.find(END, old_blocks[name].end())]
                nb = BEGIN.search(new, new.find(f"<!-- kj:gen {name} -->"))
                n = new[nb.end():new.find(END, nb.end())]
                if o != n:
                    stale.append(f"{rel}: block {name} differs from bench/results (scripts/docs_numbers.py rewrites it)")
                    diff = difflib.unified_diff(o.splitlines(), n.splitlines(), "docs", "results", lineterm="", n=0)
                    stale.extend("    " + l for l in list(diff)[2:14])
        else:
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                f.write(new)
            os.replace(tmp, path)
            print(f"{rel}: blocks rewritten")
    for p in problems + stale:
        print(p, file=sys.stderr)
    if problems or stale:
        return 1
    if a.check:
        print(f"docs_numbers: {blocks} generated blocks in {len(files)} files match bench/results")
    return 0


if __name__ == "__main__":
    sys.exit(main())
