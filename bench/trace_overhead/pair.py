#!/usr/bin/env python3
"""The A/B of two contestants of one turns.py result, from its per-round ratios: the median over
rounds of A's ratio over B's, with a 95 % interval from resampling the rounds (turns.paired).

usage: pair.py RESULT.json A B [A B ...]"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from turns import paired  # noqa: E402


def main():
    if len(sys.argv) < 4 or len(sys.argv) % 2:
        sys.exit(__doc__)
    path = sys.argv[1]
    with open(path) as f:
        ratios = json.load(f).get("ratio_per_round") or {}
    for a, b in zip(sys.argv[2::2], sys.argv[3::2]):
        missing = [c for c in (a, b) if c not in ratios]
        if missing:
            sys.exit(f"{path}: no contestant {' '.join(missing)} (it has {' '.join(sorted(ratios))})")
        p = paired(ratios[a], ratios[b])
        print(f"{a} / {b}: {p['median']:.4f} (95 % over {p['rounds']} rounds {p['ci95'][0]:.4f}-{p['ci95'][1]:.4f};"
              " the process lottery is not in it)")


if __name__ == "__main__":
    main()
