#!/usr/bin/env python3
"""Check that the run database's SQL lives in src/store alone.

Every C source under src/ outside src/store is scanned for the marks of SQL use: a call that
prepares or executes a statement (sqlite3_prepare*, sqlite3_exec, kj_db_prepare, kj_db_exec,
kj_db_has_row, kj_db_one_i64), a statement's columns read or bound (sqlite3_column_*,
sqlite3_bind_*, kj_db_col_*), and a string literal that opens with an SQL word in capitals (SELECT,
INSERT, UPDATE, DELETE, CREATE, PRAGMA, WITH, FROM, WHERE, JOIN, ORDER BY, ...). Each finding is a line:

    src/x/file.c:LINE: sqlite3_prepare_v2 (SQL outside store)

Files listed in scripts/sql_debts.txt (known debts, one per line with a reason) are printed as
debts and do not fail; any other finding fails (exit 1), and so does a listed file that no longer
holds SQL, so the list can only shrink. docs/architecture.md, "The run database: store".

usage: check_sql.py [--root DIR] [--debts FILE]
"""
import argparse
import os
import re
import sys

CALL = re.compile(r"\b(sqlite3_prepare\w*|sqlite3_exec|sqlite3_column_\w+|sqlite3_bind_\w+|"
                  r"kj_db_prepare|kj_db_exec|kj_db_has_row|kj_db_one_i64|kj_db_col_\w+)\s*\(")
STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
SQL_TEXT = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|REPLACE|CREATE|ALTER|DROP|PRAGMA|WITH|FROM|WHERE|"
                      r"(LEFT |INNER |CROSS )?JOIN|GROUP BY|ORDER BY|UNION)\b")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
SOURCES = (".c", ".h", ".cu", ".cuh")


def strip_comments(text):
    """The text with comments blanked, newlines kept so that line numbers stay right."""
    return COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def findings(root):
    """Yield (relative path, line, what) for every mark of SQL outside src/store."""
    src = os.path.join(root, "src")
    for dirpath, _, files in sorted(os.walk(src)):
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir == "src/store" or rel_dir.startswith("src/store/"):
            continue
        for name in sorted(files):
            if not name.endswith(SOURCES):
                continue
            path = os.path.join(dirpath, name)
            with open(path, encoding="utf-8", errors="replace") as f:
                text = strip_comments(f.read())
            rel = os.path.relpath(path, root)
            for no, line in enumerate(text.split("\n"), 1):
                for m in CALL.finditer(line):
                    yield rel, no, m.group(1)
                if any(SQL_TEXT.search(s.group(1)) for s in STRING.finditer(line)):
                    yield rel, no, "SQL text"


def read_debts(path):
    """The files listed as debts (path before ':' or '#' on each non-comment line)."""
    debts = {}
    if not os.path.exists(path):
        return debts
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            debts[re.split(r"[:#\s]", line, 1)[0]] = no
    return debts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--debts", default=None)
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    debts_path = a.debts or os.path.join(root, "scripts", "sql_debts.txt")
    debts = read_debts(debts_path)
    found = {}
    for rel, no, what in findings(root):
        found.setdefault(rel, []).append((no, what))
    bad = 0
    for rel in sorted(found):
        tag = "debt" if rel in debts else "SQL outside store"
        for no, what in found[rel]:
            print(f"{rel}:{no}: {what} ({tag})")
        bad += rel not in debts
    for rel in sorted(debts):
        if rel not in found:
            print(f"{debts_path}:{debts[rel]}: {rel} holds no SQL any more: delete its line")
            bad += 1
    nd = sum(len(v) for k, v in found.items() if k in debts)
    print(f"{len(found)} files outside src/store with SQL ({nd} findings in {len(set(found) & set(debts))} listed "
          f"debts); {bad} failing")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
