#!/usr/bin/env python3
"""Analysis speed benchmark: kjoule compare, timeline --format chrome and api on a generated run of
1,000,000 kernel launches (plus one API call per launch), one core (taskset -c 0), peak RSS from
/usr/bin/time -v. Writes bench/results/analysis_speed.json with the machine, date, commands and
raw numbers of every repetition.

  bench.py --kjoule build/kjoule [--iterations 1000 --kernels 1000] [--reps 3] [--keep DIR]
Targets (issue 5): compare <= 5 s; chrome timeline of 1,000,000 events <= 10 s and < 1 GB RSS.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.normpath(os.path.join(HERE, "..", ".."))


def machine():
    m = {"uname": " ".join(platform.uname()), "cpus_online": os.cpu_count()}
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                m["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                m["mem_total"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return m


def timed(cmd, out_path):
    """Run cmd on core 0 under /usr/bin/time -v; return wall seconds and peak RSS in KiB."""
    full = ["taskset", "-c", "0", "/usr/bin/time", "-v"] + cmd
    with open(out_path, "wb") as out:
        t = time.monotonic()
        p = subprocess.run(full, stdout=out, stderr=subprocess.PIPE)
        wall = time.monotonic() - t
    err = p.stderr.decode(errors="replace")
    if p.returncode != 0:
        sys.exit("failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), err[-2000:]))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", err).group(1))
    el = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", err).group(1)
    parts = [float(x) for x in el.split(":")]
    el_s = sum(v * 60 ** i for i, v in enumerate(reversed(parts)))
    user = float(re.search(r"User time \(seconds\): (\S+)", err).group(1))
    sys_s = float(re.search(r"System time \(seconds\): (\S+)", err).group(1))
    return {"wall_s": round(wall, 3), "time_elapsed_s": el_s, "user_s": user, "sys_s": sys_s,
            "max_rss_kib": rss}


def count_events(path):
    """Trace events in a chrome file written by kjoule (one event per line)."""
    n = 0
    with open(path, "rb") as f:
        for line in f:
            if line.startswith(b"{\"ph\":"):
                n += 1
    return n


def big_run(work, iterations, kernels, tables):
    """The generated run database in work (made by mkrun.py unless already there): its path, the
    command that makes it, the seconds that took (None when reused), and row counts of tables."""
    import sqlite3
    db = os.path.join(work, "run_%dx%d.kjdb" % (iterations, kernels))
    gen_cmd = [sys.executable, os.path.join(HERE, "mkrun.py"), "-o", db, "--iterations", str(iterations),
               "--kernels", str(kernels), "--layers", "10", "--streams", "2"]
    gen_s = None
    if not os.path.exists(db):
        t = time.monotonic()
        subprocess.run(gen_cmd, check=True, stdout=subprocess.DEVNULL)
        gen_s = round(time.monotonic() - t, 2)
    c = sqlite3.connect(db)
    rows = {t: c.execute("SELECT count(*) FROM %s" % t).fetchone()[0] for t in tables}
    c.close()
    return db, gen_cmd, gen_s, rows


def write_results(benchmark, kj, gen_cmd, gen_s, db, rows, results, output):
    """The benchmark's JSON file: machine, date, commit, the run database and every result."""
    res = {
        "benchmark": benchmark,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "kjoule": kj,
        "git_commit": subprocess.run(["git", "-C", SRC, "rev-parse", "HEAD"], capture_output=True,
                                     text=True).stdout.strip(),
        "run_database": {"generator": " ".join(os.path.relpath(x, SRC) if x.startswith(SRC) else x for x in gen_cmd[1:]),
                         "generate_s": gen_s, "bytes": os.path.getsize(db), "rows": rows},
        "one_core": "taskset -c 0",
        "results": results,
    }
    os.makedirs(os.path.dirname(output), exist_ok=True)
    with open(output, "w") as f:
        json.dump(res, f, indent=2)
        f.write("\n")
    print("wrote", output)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kjoule", required=True)
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--kernels", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--keep", help="directory for the run database (reused when present)")
    ap.add_argument("-o", "--output", default=os.path.join(SRC, "bench", "results", "analysis_speed.json"))
    a = ap.parse_args()
    kj = os.path.abspath(a.kjoule)
    work = a.keep or tempfile.mkdtemp(prefix="kjbench_")
    os.makedirs(work, exist_ok=True)
    db, gen_cmd, gen_s, rows = big_run(work, a.iterations, a.kernels,
                                       ("kernel", "memcpy", "api_call", "nvtx_range", "power_sample"))
    trace = os.path.join(work, "trace.json")
    cases = [
        ("compare", [kj, "compare", db, "--json", "--quiet"], os.devnull, 5.0, None),
        ("compare_text_and_files", [kj, "compare", db, "-o", os.path.join(work, "out"), "--quiet"], os.devnull, 5.0, None),
        ("timeline_chrome", [kj, "timeline", db, "--format", "chrome", "-o", trace], os.devnull, 10.0, 1024 * 1024),
        ("api", [kj, "api", db, "--json", "--quiet"], os.devnull, None, None),
    ]
    results = []
    for name, cmd, out, target_s, target_rss in cases:
        reps = [timed(cmd, out) for _ in range(a.reps)]
        r = {"name": name, "command": "taskset -c 0 " + " ".join(os.path.basename(x) if x == kj else x for x in cmd),
             "reps": reps, "best_wall_s": min(x["wall_s"] for x in reps),
             "max_rss_kib": max(x["max_rss_kib"] for x in reps)}
        if target_s:
            r["target_wall_s"] = target_s
            r["meets_time"] = r["best_wall_s"] <= target_s and max(x["wall_s"] for x in reps) <= target_s
        if target_rss:
            r["target_rss_kib"] = target_rss
            r["meets_memory"] = r["max_rss_kib"] < target_rss
        if name == "timeline_chrome":
            r["events"] = count_events(trace)
            r["output_bytes"] = os.path.getsize(trace)
            r["events_per_s"] = round(r["events"] / r["best_wall_s"])
        results.append(r)
        print("%-24s best %.2f s  rss %.0f MiB" % (name, r["best_wall_s"], r["max_rss_kib"] / 1024))
    write_results("analysis_speed", kj, gen_cmd, gen_s, db, rows, results, a.output)
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
