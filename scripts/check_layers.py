#!/usr/bin/env python3
"""Check kjoule's floors: which folder of src/ may include which, and no include circles.

Reads every `#include "..."` of every .c/.h/.cu/.cuh file under src/, resolves the header to the
file it names (the including file's own folder first, then any folder of src/, as the build's
include paths do; a name two folders share and the including folder lacks is reported), and
checks the pair of folders against ALLOWED below. Also finds include circles between files
(a includes b includes ... a). Each finding is one line:

    src/x/file.c:LINE: includes src/y/h.h (x may not depend on y)
    src/x/a.h:LINE: includes src/x/b.h (include circle: src/x/a.h -> src/x/b.h -> src/x/a.h)

Findings listed in scripts/layer_debts.txt (known debts, each with a reason) are printed as debts
and do not fail; any other finding fails (exit 1), and so does a listed debt that no longer
exists, so the list can only shrink. docs/architecture.md explains the floors.

usage: check_layers.py [--root DIR] [--debts FILE] [--graph]
"""
import argparse
import os
import re
import sys

# The floors, bottom to top (docs/architecture.md draws them):
#   common < store < energy < analyze < {sweep < pipeline, predict; replay; run} < report < cli
# with the traced process's code apart (trace, trace/inject), the GPU workers beside the
# folder whose protocol they serve, and under them the GPU harness they share (gpu: over energy
# and common only; built with CUDA alone, see CUDA_ONLY). ALLOWED[x] lists every folder x may include besides itself,
# written out in full (no closure is taken): a new edge is a decision made here, in one place.
# An entry "folder:header.h" allows only that header of the folder. The build enforces the same
# table: each folder's CMake target links exactly these folders and sees only their headers, and
# scripts/check_cmake_layers.py (ctest layers_test_cmake_layers) holds the targets to it.
LOWER_THAN_ANALYZE = ["common", "store", "energy"]
ALLOWED = {
    "common": [],
    # the spool format (src/trace/kj_spool.h) is the one thing ingest shares with the traced side
    "store": ["common", "trace"],
    "energy": ["common", "store"],
    "analyze": ["common", "store", "energy"],
    "sweep": LOWER_THAN_ANALYZE + ["analyze"],
    # a pipeline's phases and predict's features speak sweep's operator vocabulary (kj_sweep_op.h)
    "pipeline": LOWER_THAN_ANALYZE + ["analyze", "sweep"],
    "predict": LOWER_THAN_ANALYZE + ["analyze", "sweep"],
    "replay": LOWER_THAN_ANALYZE + ["analyze"],
    # kjoule run's environment for the program and its run database, once the program has ended
    "run": LOWER_THAN_ANALYZE + ["analyze"],
    "report": LOWER_THAN_ANALYZE + ["analyze", "sweep", "pipeline", "predict", "replay"],
    "cli": LOWER_THAN_ANALYZE + ["analyze", "sweep", "pipeline", "predict", "replay", "run", "report"],
    # GPU workers: separate programs linked to the floors below, each speaking its folder's protocol
    # the GPU harness of the workers: graph capture, timing, the energy adapter (kj_energy.h),
    # the random fill and the attention kernels that two workers run
    "gpu": ["common", "energy"],
    "replay/worker": LOWER_THAN_ANALYZE + ["analyze", "replay", "gpu"],
    "sweep/worker": LOWER_THAN_ANALYZE + ["analyze", "sweep", "gpu"],
    "sweep/worker_nccl": LOWER_THAN_ANALYZE + ["analyze", "sweep"],
    # a worker never includes another worker's files: what two share lives in gpu
    "pipeline/worker": LOWER_THAN_ANALYZE + ["analyze", "sweep", "pipeline", "gpu"],
    # the traced process's side: the spool format, and the injection library, which links only
    # what the traced process may load (of src/common, kj_map.c and the --capture parser with
    # kj_num.c; no SQLite, none of the floor libraries)
    "trace": [],
    "trace/inject": ["trace", "common:kj_map.h", "common:kj_capture_spec.h"],
    # the NCCL call recorder (LD_PRELOADed into the traced program): the spool format alone
    "trace/nccl": ["trace"],
}

# Folders of ALLOWED without a '/' that the build makes only with CUDA (KJ_WITH_CUDA): the
# build-side check (check_cmake_layers.py) asks a target of them only where one was configured.
CUDA_ONLY = {"gpu"}

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SOURCE_EXT = (".c", ".h", ".cu", ".cuh")


def source_files(src):
    """Every C/CUDA source and header under src/, as paths relative to the repository root."""
    out = []
    for d, dirs, files in os.walk(src):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(SOURCE_EXT):
                out.append(os.path.relpath(os.path.join(d, f), os.path.dirname(src)))
    return out


def folder_of(path):
    """src/replay/worker/replay_worker.h -> replay/worker"""
    return os.path.dirname(path)[len("src/"):]


def resolve(root, files_by_tail, path, name):
    """The file under src/ that `#include "name"` in path names, or (None, why)."""
    here = os.path.normpath(os.path.join(os.path.dirname(path), name))
    if os.path.isfile(os.path.join(root, here)):
        return (here, None) if here.startswith("src/") else (None, None)
    cands = files_by_tail.get(name.lstrip("./"), [])
    if len(cands) == 1:
        return cands[0], None
    if len(cands) > 1:
        return None, "ambiguous: %s" % ", ".join(cands)
    return None, None  # a system or generated header, or one outside src/


def allowed(frm, to, header):
    if frm == to:
        return True
    rules = ALLOWED.get(frm)
    if rules is None:
        return False
    return to in rules or ("%s:%s" % (to, os.path.basename(header))) in rules


def find_circles(edges):
    """Each elementary include circle once, as a list of files starting at its smallest file
    (Johnson-style search restricted to nodes >= the start; graphs here are small)."""
    nodes = sorted(edges)
    circles = []
    for start in nodes:
        stack = [(start, iter(sorted(edges.get(start, ()))))]
        path, on_path = [start], {start}
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                on_path.discard(path.pop())
                continue
            if nxt == start:
                circles.append(list(path))
            elif nxt > start and nxt not in on_path:
                path.append(nxt)
                on_path.add(nxt)
                stack.append((nxt, iter(sorted(edges.get(nxt, ())))))
    return circles


def debt_lines(path):
    """The lines of a debts file as (line number, head, reason), and format errors: a line is
    `HEAD # reason`; blank and # lines skipped; a missing file holds none. Shared with
    check_file_lines.py."""
    lines, errors = [], []
    if not os.path.exists(path):
        return lines, errors
    with open(path) as f:
        for n, line in enumerate(f, 1):
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            head, sep, reason = s.partition(" # ")
            if not sep or not reason.strip():
                errors.append("%s:%d: a debt needs a reason after ' # '" % (path, n))
                continue
            lines.append((n, head.strip(), reason.strip()))
    return lines, errors


def read_debts(path):
    """Known debts: {finding key: reason}."""
    lines, errors = debt_lines(path)
    return {head: reason for _, head, reason in lines}, errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--debts", help="known debts (default: scripts/layer_debts.txt under --root)")
    ap.add_argument("--graph", action="store_true", help="also print the folder graph found")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    debts_path = args.debts or os.path.join(root, "scripts", "layer_debts.txt")
    src = os.path.join(root, "src")

    files = source_files(src)
    files_by_tail = {}
    for f in files:
        parts = f.split("/")
        for i in range(1, len(parts)):  # "kj_db.h", "worker/replay_worker.h", ...
            files_by_tail.setdefault("/".join(parts[i:]), []).append(f)

    findings = []  # (key, line printed)
    problems = []  # not debts: bad table, ambiguous headers
    edges, folder_edges = {}, {}
    first_line = {}
    for folder in sorted({folder_of(f) for f in files}):
        if folder not in ALLOWED:
            problems.append("src/%s: folder missing from ALLOWED in scripts/check_layers.py" % folder)
    for f in files:
        with open(os.path.join(root, f), errors="replace") as fh:
            for n, line in enumerate(fh, 1):
                m = INCLUDE_RE.match(line)
                if not m:
                    continue
                target, why = resolve(root, files_by_tail, f, m.group(1))
                if why:
                    problems.append('%s:%d: includes "%s" (%s)' % (f, n, m.group(1), why))
                if not target or target == f:
                    continue
                edges.setdefault(f, set()).add(target)
                first_line.setdefault((f, target), n)
                a, b = folder_of(f), folder_of(target)
                if a != b:
                    folder_edges.setdefault(a, set()).add(b)
                if not allowed(a, b, target):
                    key = "%s: %s" % (f, target)
                    only = [r.split(":", 1)[1] for r in ALLOWED.get(a, []) if r.startswith(b + ":")]
                    findings.append((key, "%s:%d: includes %s (%s may not depend on %s%s)"
                                     % (f, n, target, a, b,
                                        " beyond " + ", ".join(only) if only else "")))
    for c in find_circles(edges):
        ring = c + [c[0]]
        key = "circle: " + " -> ".join(ring)
        findings.append((key, "%s:%d: includes %s (include circle: %s)"
                         % (c[0], first_line[(c[0], ring[1])], ring[1], " -> ".join(ring))))

    debts, errors = read_debts(debts_path)
    problems += errors
    found_keys = set()
    failed = bool(problems)
    for key, text in findings:
        found_keys.add(key)
        if key in debts:
            print("debt: %s   [%s]" % (text, debts[key]))
        else:
            print(text)
            failed = True
    for key in debts:
        if key not in found_keys:
            print("%s: listed debt no longer exists, remove its line: %s"
                  % (os.path.relpath(debts_path, root), key))
            failed = True
    for p in problems:
        print(p)
    if args.graph:
        for a in sorted(folder_edges):
            print("graph: %s -> %s" % (a, ", ".join(sorted(folder_edges[a]))))
    n_debts = sum(1 for k, _ in findings if k in debts)
    print("check_layers: %d files, %d includes between folders checked, %d known debts, %s"
          % (len(files), sum(len(v) for v in folder_edges.values()), n_debts,
             "FAILED" if failed else "ok"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
