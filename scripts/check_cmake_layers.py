#!/usr/bin/env python3
"""Check that the build's targets link the floors scripts/check_layers.py allows, no more, no less.

The top-level CMakeLists.txt records each target that builds a folder of src/ (kj_layer()) and
writes BUILD/kj_layers.txt at configure time: one line a target, tab-separated,

    TARGET  FOLDER  LINK;LINK;...  INCLUDE_DIR;...        ("-" for an empty list)

taken from the targets' own LINK_LIBRARIES and INCLUDE_DIRECTORIES. For each target of folder F,
the folders of the recorded targets it links (through targets of F itself, as the pipeline
worker's program links its library) must be exactly ALLOWED[F] of check_layers.py; an entry
"common:kj_map.h" of ALLOWED stands for a target recorded as "common:h1,h2,..." holding exactly
the headers ALLOWED names. No target may have an include directory inside src/ but its own
folder's. Every folder of ALLOWED without a '/' (the floors, cli, trace) must have a target, but
those of CUDA_ONLY (the GPU harness, gpu); the harness, the workers and the injection library
only where the build configured them (KJ_WITH_CUDA).
Each finding is one line; exit 1 on any.

usage: check_cmake_layers.py LAYERS_TXT [--root DIR]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_layers import ALLOWED, CUDA_ONLY  # noqa: E402  (the rule, in one place)


def expected(folder):
    """ALLOWED[folder] as the folders its targets must link: "x:h" entries joined per folder."""
    whole, parts = set(), {}
    for r in ALLOWED[folder]:
        f, sep, h = r.partition(":")
        if sep:
            parts.setdefault(f, []).append(h)
        else:
            whole.add(f)
    return whole | {"%s:%s" % (f, ",".join(sorted(hs))) for f, hs in parts.items()}


def read(path):
    """{target: (folder, [links], [include dirs])} from a kj_layers.txt, or raises ValueError."""
    out = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            cols = line.split("\t")
            if len(cols) != 4:
                raise ValueError("%s:%d: expected 4 tab-separated fields, got %d" % (path, n, len(cols)))
            t, folder, links, incs = cols
            out[t] = (folder, [] if links == "-" else links.split(";"),
                      [] if incs == "-" else incs.split(";"))
    return out


def linked_folders(targets, t, seen=None):
    """Folders of the recorded targets t links, looking through targets of t's own folder."""
    seen = seen if seen is not None else {t}
    folder = targets[t][0]
    found = set()
    for link in targets[t][1]:
        if link not in targets or link in seen:
            continue
        seen.add(link)
        if targets[link][0] == folder:
            found |= linked_folders(targets, link, seen)
        else:
            found.add(targets[link][0])
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("layers", help="kj_layers.txt of a configured build folder")
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    args = ap.parse_args()
    src = os.path.join(os.path.realpath(args.root), "src")
    try:
        targets = read(args.layers)
    except (OSError, ValueError) as e:
        print("check_cmake_layers: %s" % e)
        return 1
    problems = []
    have = {folder for folder, _, _ in targets.values()}
    for folder in sorted(ALLOWED):
        if "/" not in folder and folder not in CUDA_ONLY and folder not in have:
            problems.append("src/%s: no target of the build records it (kj_layer() in CMake)" % folder)
    for t in sorted(targets):
        folder, _, incs = targets[t]
        if ":" not in folder:
            if folder not in ALLOWED:
                problems.append("%s: folder %s is not in ALLOWED of scripts/check_layers.py" % (t, folder))
                continue
            got, want = linked_folders(targets, t), expected(folder)
            for f in sorted(want - got):
                problems.append("%s (src/%s): does not link %s, which ALLOWED lets it include" % (t, folder, f))
            for f in sorted(got - want):
                problems.append("%s (src/%s): links %s, which ALLOWED does not let it include" % (t, folder, f))
        own = os.path.join(src, folder.partition(":")[0])
        for d in incs:
            real = os.path.realpath(d)
            if (real == src or real.startswith(src + os.sep)) and real != own:
                problems.append("%s (src/%s): include directory %s is not its own folder"
                                % (t, folder, os.path.relpath(real, os.path.dirname(src))))
    for p in problems:
        print(p)
    print("check_cmake_layers: %d targets, %s" % (len(targets), "FAILED" if problems else "ok"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
