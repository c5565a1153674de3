#!/usr/bin/env python3
"""Writes bench/README.md's tables of benchmarks from bench/index.json and the results' own facts.

bench/index.json names each benchmark: what it measures, how to run it, and its current result
files under bench/results/ (and the folders of raw inputs or logs that go with them). This script
writes, between `<!-- bench_index:begin -->` and `<!-- bench_index:end -->` in bench/README.md, one
table per group (benchmark, what it measures, how to run it, device, date, result files), the
device and date read from each result (its top-level `device` and `date`, or those of the runs it
holds; a folder's from its measured.json), and a table of the sweep CSV folders from their
measured.json. It also checks the results tree:
- every entry of bench/results/ belongs to exactly one benchmark, and every file the index names
  is there;
- no path under bench/results/ is named by when it was made (a session `sNN`, `session`, a device
  `callN`, an ordinal such as `third`, `fresh`): results are named by what they measure, and git
  keeps the history;
- every `bench/results/...` path that README.md, docs/, bench/, scripts/, src/ and tests/ mention
  exists (a path written `COMMIT:bench/results/...` names a removed result in git's history).
Without --check it rewrites the block (renamed into place) and reports the checks; with --check it
writes nothing and exits 1, naming what is out of date or wrong.

usage: scripts/bench_index.py [--check] [--root DIR]
"""
import argparse
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from docs_numbers import short_device  # noqa: E402  (one copy)

BEGIN, END = "<!-- bench_index:begin -->", "<!-- bench_index:end -->"
WHEN_WORDS = {"session", "fresh", "first", "second", "third", "fourth", "fifth", "sixth", "seventh",
              "eighth", "ninth", "tenth", "eleventh", "twelfth"}
WHEN_RE = re.compile(r"^(s\d{1,2}[a-z]?|session\d*|call\d+)$")
REF_RE = re.compile(r"(?<![A-Za-z0-9_/])((?:[0-9a-f]{7,40}:)?bench/results/[A-Za-z0-9_./*-]*)")
SCANNED = ("README.md", "docs", "bench", "scripts", "src", "tests", "examples", "Makefile", "CMakeLists.txt")
TEXT_EXT = (".md", ".py", ".sh", ".c", ".h", ".cu", ".cpp", ".txt", ".yml", ".yaml", ".cmake")


def nested(d, key, depth=3):
    """Every string value of KEY in d and the dicts and lists below it, DEPTH levels down."""
    found = []
    if depth < 0:
        return found
    if isinstance(d, dict):
        v = d.get(key)
        if isinstance(v, str) and v:
            found.append(v)
        for x in d.values():
            if isinstance(x, (dict, list)):
                found += nested(x, key, depth - 1)
    elif isinstance(d, list):
        for x in d:
            found += nested(x, key, depth - 1)
    return found


def facts(path):
    """(device, date) of a result: a JSON file's top-level device and date, else those of the runs it
    holds (the latest date); a folder's measured.json. Raises ValueError naming what is missing."""
    if os.path.isdir(path):
        path = os.path.join(path, "measured.json")
        if not os.path.exists(path):
            raise ValueError("a folder without measured.json (device, date)")
    with open(path) as f:
        d = json.load(f)
    dev = d.get("device") or d.get("machine")
    if isinstance(dev, dict):
        dev = f"CPU ({dev.get('cpu', '?')}, {dev.get('cpus_online', '?')} cores)"
    if not dev and isinstance(d.get("devices"), dict):
        dev = "; ".join(sorted(set(d["devices"].values())))
    if not dev:
        devs = sorted(set(nested(d, "device")) | set(nested(d, "gpu")))
        dev = "; ".join(devs)
    date = d.get("date") or max(nested(d, "date"), default=None)
    if not dev:
        raise ValueError("no device (top-level 'device', or in the runs it holds)")
    if not date:
        raise ValueError("no date (top-level 'date', or in the runs it holds)")
    if "CPU" in dev or "cores" in dev:
        dev = "CPU" if "on the CPU" not in dev else short_device(dev.split("(")[0]) + " (computed on a CPU)"
    else:
        dev = short_device(dev)
    return dev, date[:10]


def when_named(rel):
    """The first component of REL named by when it was made, or None."""
    for comp in re.split(r"/", rel):
        for word in re.split(r"[_.-]", comp):
            if word.lower() in WHEN_WORDS or WHEN_RE.match(word.lower()):
                return comp
    return None


def cell(s):
    return s.replace("|", "\\|").replace("\n", " ")


def generate(root, index, problems):
    rdir = os.path.join(root, "bench", "results")
    out = []
    for g in index["groups"]:
        out += [f"### {g['title']}", "",
                "| benchmark | what it measures | how to run it | device | date | result (`bench/results/`) |",
                "| --- | --- | --- | --- | --- | --- |"]
        for b in g["benchmarks"]:
            devs, dates, files = [], [], []
            first = None
            for name in b["results"]:
                p = os.path.join(rdir, name)
                if not os.path.exists(p):
                    problems.append(f"bench/index.json: {b['name']}: bench/results/{name} is not there")
                    continue
                files.append(f"`{name}/`" if os.path.isdir(p) else f"`{name}`")
                if not os.path.isdir(p) and not name.endswith(".json"):
                    continue  # a text companion of the benchmark's JSON result
                try:
                    dev, date = facts(p)
                except (ValueError, OSError) as e:
                    problems.append(f"bench/results/{name}: {e}")
                    continue
                first = first or (dev, date)
                if dev not in devs:
                    devs.append(dev)
                if date not in dates:
                    dates.append(date)
            for name in b.get("data", []):
                if not os.path.isdir(os.path.join(rdir, name)):
                    problems.append(f"bench/index.json: {b['name']}: bench/results/{name}/ is not there")
                else:
                    files.append(f"`{name}/`")
            if first is None:
                problems.append(f"bench/index.json: {b['name']}: no result with a device and date")
            out.append(f"| {cell(b['name'])} | {cell(b['measures'])} | {cell(b['run'])} | {' / '.join(devs)} | "
                       f"{', '.join(sorted(dates))} | {', '.join(files)} |")
        out.append("")
    out += ["### Sweep CSVs (`bench/results/sweep_csv/`)", "",
            "Each folder's `measured.json` says where, when and how its CSVs were measured; "
            "`bench/predict_accuracy/run.py --from-csv` names that device in a refit.", "",
            "| folder | what it holds | device | date |", "| --- | --- | --- | --- |"]
    for d in sorted(glob.glob(os.path.join(rdir, "sweep_csv", "*", ""))):
        name = os.path.basename(os.path.normpath(d))
        try:
            with open(os.path.join(d, "measured.json")) as f:
                m = json.load(f)
            out.append(f"| `{name}/` | {cell(m['what'])} | {short_device(m['device'])} | {m['date'][:10]} |")
        except (OSError, ValueError, KeyError) as e:
            problems.append(f"bench/results/sweep_csv/{name}/measured.json: {type(e).__name__}: {e}")
    return "\n".join(out) + "\n"


def check_tree(root, index, problems):
    rdir = os.path.join(root, "bench", "results")
    owner = {}
    for g in index["groups"]:
        for b in g["benchmarks"]:
            for name in b["results"] + b.get("data", []):
                top = name.split("/")[0]
                if top in owner and owner[top] != b["name"]:
                    problems.append(f"bench/index.json: bench/results/{top} belongs to both {owner[top]!r} and {b['name']!r}")
                owner[top] = b["name"]
    for entry in sorted(os.listdir(rdir)):
        if entry != "README.md" and entry not in owner:
            problems.append(f"bench/results/{entry}: no benchmark in bench/index.json claims it")
    for dirpath, dirs, names in os.walk(rdir):
        for n in dirs + names:
            rel = os.path.relpath(os.path.join(dirpath, n), rdir)
            bad = when_named(rel)
            if bad:
                problems.append(f"bench/results/{rel}: named by when it was made ({bad!r}), not by what it measures")
                if n in dirs:
                    dirs.remove(n)


def check_refs(root, problems):
    files = []
    for s in SCANNED:
        p = os.path.join(root, s)
        if os.path.isfile(p):
            files.append(p)
        for dirpath, dirs, names in os.walk(p):
            dirs[:] = [d for d in dirs if not (dirpath == os.path.join(root, "bench") and d == "results")]
            files += [os.path.join(dirpath, n) for n in names if n.endswith(TEXT_EXT)]
    for f in files:
        try:
            text = open(f, encoding="utf-8").read()
        except (OSError, UnicodeDecodeError):
            continue
        for ln, line in enumerate(text.splitlines(), 1):
            for m in REF_RE.finditer(line):
                ref = m.group(1)
                if re.match(r"[0-9a-f]{7,40}:", ref):
                    continue  # a removed result, named in git's history
                path = ref.rstrip(".,;:)'`\"")
                if path.endswith("/") or path == "bench/results":
                    path = path.rstrip("/")
                if re.search(r"[A-Z]{2,}|\$", path):
                    continue  # a placeholder (bench/results/NAME.json)
                hit = glob.glob(os.path.join(root, path)) if "*" in path else os.path.exists(os.path.join(root, path))
                if not hit:
                    problems.append(f"{os.path.relpath(f, root)}:{ln}: {path} is not there "
                                    "(a removed result is written COMMIT:bench/results/NAME)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 where anything is out of date")
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    problems = []
    try:
        with open(os.path.join(root, "bench", "index.json")) as f:
            index = json.load(f)
        for g in index["groups"]:
            for b in g["benchmarks"]:
                for k in ("name", "measures", "run", "results"):
                    if not b.get(k):
                        problems.append(f"bench/index.json: group {g.get('title')!r}: a benchmark without {k!r}")
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"bench/index.json: {e}", file=sys.stderr)
        return 1
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    readme = os.path.join(root, "bench", "README.md")
    text = open(readme).read()
    i, j = text.find(BEGIN), text.find(END)
    if i < 0 or j < i:
        print(f"bench/README.md: no {BEGIN} ... {END} block", file=sys.stderr)
        return 1
    new = text[:i + len(BEGIN)] + "\n" + generate(root, index, problems) + text[j:]
    check_tree(root, index, problems)
    check_refs(root, problems)
    if new != text:
        if a.check:
            problems.append("bench/README.md: the benchmark tables differ from bench/index.json and the results "
                            "(scripts/bench_index.py rewrites them)")
        else:
            with open(readme + ".tmp", "w") as f:
                f.write(new)
            os.replace(readme + ".tmp", readme)
            print("bench/README.md: tables rewritten")
    for p in problems:
        print(p, file=sys.stderr)
    if not problems and a.check:
        n = sum(len(g["benchmarks"]) for g in index["groups"])
        print(f"bench_index: {n} benchmarks; bench/README.md, bench/results/ and the references to it agree")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
