#!/usr/bin/env python3
"""Report speed benchmark: kjoule report on the shipped run (examples/runs/bloom560m.kjdb) and on a
generated run of 1,000,000 kernel launches (bench/analysis_speed/mkrun.py: 1000 iterations x 1000
kernels, power samples, replays, one API call per launch), and kjoule diff of the big run against
itself. One core (taskset -c 0), peak RSS from /usr/bin/time -v, page sizes. Writes
bench/results/report_speed.json with the machine, date, commands and raw numbers of every rep.

  bench.py --kjoule build/kjoule [--iterations 1000 --kernels 1000] [--reps 3] [--keep DIR]
Targets (issue 15): report of 1,000,000 launches <= 10 s and a page <= 5 MB; shipped run <= 1 s.
"""
import argparse
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SRC, "bench", "analysis_speed"))
from bench import big_run, timed, write_results  # noqa: E402  (the analysis benchmark's helpers)

PAGE_LIMIT = 5 * 1024 * 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kjoule", required=True)
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--kernels", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--keep", help="directory for the run database (reused when present)")
    ap.add_argument("-o", "--output", default=os.path.join(SRC, "bench", "results", "report_speed.json"))
    a = ap.parse_args()
    kj = os.path.abspath(a.kjoule)
    work = a.keep or tempfile.mkdtemp(prefix="kjbench_report_")
    os.makedirs(work, exist_ok=True)
    db, gen_cmd, gen_s, rows = big_run(work, a.iterations, a.kernels,
                                       ("kernel", "unique_kernel", "api_call", "nvtx_range", "power_sample",
                                        "replay_kernel"))
    shipped = os.path.join(SRC, "examples", "runs", "bloom560m.kjdb")
    big_page = os.path.join(work, "big.html")
    small_page = os.path.join(work, "bloom560m.html")
    cases = [
        ("report_shipped_run", [kj, "report", shipped, "-o", small_page, "--quiet"], small_page, 1.0),
        ("report_1M_launches", [kj, "report", db, "-o", big_page, "--quiet"], big_page, 10.0),
        ("diff_1M_launches_with_itself", [kj, "diff", db, db, "--json", "--quiet"], None, None),
    ]
    results = []
    for name, cmd, page, target_s in cases:
        reps = [timed(cmd, os.path.join(work, "stdout")) for _ in range(a.reps)]
        r = {"name": name,
             "command": "taskset -c 0 " + " ".join("kjoule" if x == kj else os.path.relpath(x, SRC) if x.startswith(SRC) else x
                                                   for x in cmd),
             "reps": reps, "best_wall_s": min(x["wall_s"] for x in reps),
             "worst_wall_s": max(x["wall_s"] for x in reps),
             "max_rss_kib": max(x["max_rss_kib"] for x in reps)}
        if target_s:
            r["target_wall_s"] = target_s
            r["meets_time"] = r["worst_wall_s"] <= target_s
        if page:
            r["page_bytes"] = os.path.getsize(page)
            r["page_limit_bytes"] = PAGE_LIMIT
            r["meets_size"] = r["page_bytes"] <= PAGE_LIMIT
        results.append(r)
        print("%-30s best %.2f s  worst %.2f s  rss %.0f MiB%s" % (
            name, r["best_wall_s"], r["worst_wall_s"], r["max_rss_kib"] / 1024,
            "  page %.0f KiB" % (r["page_bytes"] / 1024) if page else ""))
    write_results("report_speed", kj, gen_cmd, gen_s, db, rows, results, a.output)
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
