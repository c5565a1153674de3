#!/usr/bin/env python3
"""Check that no .c/.cu file of the tree (src/, tests/, bench/, examples/, fuzz/; hidden folders
and build trees left out) is longer than the limit (600 lines), but for the files listed in
scripts/file_lines_debts.txt, each at no more lines than the count listed there.

A debt line is `PATH LINES # why it is still long, and what would split it`. The check fails
(exit 1) on a file over the limit that is not listed, on a listed file that has grown past its
count, and on a listed file that is gone or back under the limit (delete its line), so the list
only shrinks; a listed file that shrank but is still long passes and is told to lower its count.
Each finding is one line naming the file and its length. docs/architecture.md explains why.

usage: check_file_lines.py [--root DIR] [--debts FILE] [--limit N]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_layers import debt_lines  # noqa: E402  (one reader of the debts files)

SOURCE_EXT = (".c", ".cu")


def read_debts(path):
    """{path: allowed lines} and format errors. A line is `PATH LINES # reason`."""
    lines, errors = debt_lines(path)
    debts = {}
    for n, head, _ in lines:
        parts = head.split()
        if len(parts) != 2 or not parts[1].isdigit():
            errors.append("%s:%d: want 'PATH LINES # reason'" % (path, n))
        else:
            debts[parts[0]] = int(parts[1])
    return debts, errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--debts", help="known long files (default: scripts/file_lines_debts.txt under --root)")
    ap.add_argument("--limit", type=int, default=600)
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    debts_path = args.debts or os.path.join(root, "scripts", "file_lines_debts.txt")
    debts, problems = read_debts(debts_path)
    rel_debts = os.path.relpath(debts_path, root)

    lengths = {}
    for d, dirs, files in os.walk(root):
        # hidden folders (.git, .carry) and build trees (a CMakeCache.txt) hold no sources of ours
        dirs[:] = sorted(x for x in dirs if not x.startswith(".") and
                         not os.path.exists(os.path.join(d, x, "CMakeCache.txt")))
        for name in sorted(files):
            if name.endswith(SOURCE_EXT):
                p = os.path.join(d, name)
                with open(p, "rb") as fh:
                    lengths[os.path.relpath(p, root)] = sum(1 for _ in fh)

    failed = bool(problems)
    for path, n in sorted(lengths.items()):
        if n <= args.limit:
            if path in debts:
                print("%s: %d lines, now within %d: remove its line from %s" % (path, n, args.limit, rel_debts))
                failed = True
            continue
        if path not in debts:
            print("%s: %d lines, over the limit of %d: split it along its seams" % (path, n, args.limit))
            failed = True
        elif n > debts[path]:
            print("%s: %d lines, grown past the %d %s allows: split it, do not raise the count"
                  % (path, n, debts[path], rel_debts))
            failed = True
        else:
            print("debt: %s: %d lines (listed at %d%s)" % (path, n, debts[path],
                  "; lower the count to %d" % n if n < debts[path] else ""))
    for path in sorted(set(debts) - set(lengths)):
        print("%s: listed in %s but gone: remove its line" % (path, rel_debts))
        failed = True
    for p in problems:
        print(p)
    print("check_file_lines: %d files, %d over %d lines (%d listed debts), %s"
          % (len(lengths), sum(1 for n in lengths.values() if n > args.limit), args.limit, len(debts),
             "FAILED" if failed else "ok"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
