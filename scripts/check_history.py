#!/usr/bin/env python3
"""Check that the tree speaks in versions and dates, not in the history of its making.

Reads every file git tracks under --root (`git ls-files`; files holding a NUL byte, such as the
shipped run databases, are data and skipped) and reports each line that names a working session
or a device call where a version, a date or a device belongs: "session 12", "this session",
"the same session", "sessions 3", a file name ending in a session number ("turns_s27.json",
"cost_self_s26/"), "device call 4", "calls 2 and 3 of session 26". Each finding is one line:

    docs/x.md:LINE: 'session 12' (say the version, the date or the device instead)

Only this file, which holds the patterns, is left out. A result's provenance goes in its own
fields (`date`, `device`, `command`); a removed result is cited by its git blob or commit.
Exit 0 when nothing is found, 1 otherwise (2 when the tree cannot be listed).

usage: check_history.py [--root DIR]
"""
import argparse
import os
import re
import subprocess
import sys

SELF = "scripts/check_history.py"
PATTERNS = [
    re.compile(r"\bsession[ _-]?[0-9]+", re.I),
    re.compile(r"\bsessions [0-9]", re.I),
    re.compile(r"\b(this|last|same|previous|next|earlier|later) session\b", re.I),
    re.compile(r"_s[0-9]{2}\b"),
    re.compile(r"\bdevice calls? [0-9]", re.I),
    re.compile(r"\bcalls? [0-9][0-9, and-]* of (the )?session", re.I),
]


def tracked(root):
    """The paths git tracks under ROOT (relative), or raises OSError / CalledProcessError."""
    out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True, capture_output=True).stdout
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


def findings(root, rel):
    """Each 'REL:LINE: 'match' ...' line for the history REL's text names; none for data files."""
    try:
        with open(os.path.join(root, rel), "rb") as f:
            data = f.read()
    except OSError:  # listed but absent (a deleted, uncommitted file): nothing to read
        return []
    if b"\0" in data:
        return []
    out = []
    for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        for pat in PATTERNS:
            m = pat.search(line)
            if m:
                out.append(f"{rel}:{n}: {m.group(0)!r} (say the version, the date or the device instead)")
                break
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args = ap.parse_args()
    try:
        paths = tracked(args.root)
    except (OSError, subprocess.CalledProcessError) as e:
        err = getattr(e, "stderr", b"") or b""
        print(f"check_history: cannot list the files git tracks in {args.root}: "
              f"{err.decode(errors='replace').strip() or e}", file=sys.stderr)
        return 2
    found = []
    for rel in paths:
        if rel != SELF:
            found += findings(args.root, rel)
    for line in found:
        print(line)
    if found:
        print(f"check_history: {len(found)} line(s) name a session or a device call", file=sys.stderr)
        return 1
    print(f"check_history: {len(paths)} tracked files, none names a session or a device call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
