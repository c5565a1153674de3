#!/usr/bin/env python3
"""The result of scripts/gpu/nccl_bytes.sh (NCCL's calls recorded beside a traced torchrun job) as
one JSON: device, date, command, the multi-GPU test's checks, what nccl_call holds per process, and
compare's NCCL figures per rank. usage: collect.py FOLDER --date ISO -o RESULT.json
(FOLDER: the files nccl_bytes.sh wrote under $OUT)."""
import argparse
import ast
import json
import os
import re
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("folder")
    ap.add_argument("--date", required=True, help="when the device call ran (ISO 8601)")
    ap.add_argument("--command", default="bash scripts/gpu/nccl_bytes.sh (source scripts/device-env.sh first)")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    rd = lambda n: open(os.path.join(a.folder, n)).read()
    facts = rd("facts.txt").splitlines()
    gpus = [l.split(":", 1)[1].split("(")[0].strip() for l in facts if l.startswith("GPU ")]
    m = re.search(r"torch (\S+) nccl \((\d+), (\d+), (\d+)\)", rd("facts.txt"))
    test = rd("tp_test.log").splitlines()
    checks = [l for l in test if l.startswith(("ok ", "FAIL"))]
    calls, section = [], None
    for line in rd("nccl_calls.txt").splitlines():
        if line.startswith("--"):
            section = line
            continue
        if section and section.startswith("-- calls per pid") and "\t" in line:
            pid, op, count, dtype, nbytes, nranks, depth, n = line.split("\t")
            calls.append({"pid": int(pid), "op": op, "count": int(count), "datatype": int(dtype),
                          "bytes": int(nbytes), "nranks": int(nranks), "group_depth": int(depth), "calls": int(n)})
    ranks = [ast.literal_eval(l) for l in rd("compare_nccl.txt").splitlines() if l.startswith("{")]
    off = rd("off.log")
    res = {"benchmark": "nccl_calls", "device": f"{len(gpus)}x {gpus[0]}" if gpus else None, "date": a.date,
           "command": a.command,
           "software": {"torch": m.group(1), "nccl": ".".join(m.group(i) for i in (2, 3, 4))} if m else None,
           "program": "torchrun --nproc-per-node 2 examples/tp_mlp.py (tests/gpu/multi/run_tp_test.sh)",
           "expected_bytes_per_rank_per_iteration": 4194304,
           "checks": {"passed": sum(c.startswith("ok ") for c in checks), "failed": [c for c in checks if c.startswith("FAIL")]},
           "nccl_call_rows": calls, "ranks": ranks,
           "no_nccl_calls_run_says_so": "traced with --no-nccl-calls" in off}
    if not ranks:
        sys.exit(f"{a.folder}/compare_nccl.txt: no rank figures")
    with open(a.output + ".tmp", "w") as f:
        json.dump(res, f, indent=1)
    os.replace(a.output + ".tmp", a.output)
    for r in ranks:
        print(r["nccl_ops"], r["nccl_bytes_per_iteration"], r["nccl_bus_bandwidth_gbps"])


if __name__ == "__main__":
    main()
