#!/usr/bin/env python3
"""Ingest speed: how long `kjoule run` needs after the program ends, per million launches.
Generates a spool of N launches (tests/tools/mkspool.py: 40 kernels, 3 changing parameter words per
launch), times `kjoule ingest` (wall, peak RSS from /usr/bin/time -v) over several repetitions and
writes a JSON result (machine, date, command, raw numbers).

  run.py --kjoule build/kjoule [--launches 1000000] [--reps 3] [-o bench/results/ingest_speed.json]
"""
import argparse, datetime, json, os, platform, re, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kjoule", required=True)
    ap.add_argument("--launches", type=int, default=1000000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("-o", "--output", default=os.path.join(ROOT, "bench", "results", "ingest_speed.json"))
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    spool = os.path.join(tmp, "spool")
    subprocess.run([sys.executable, os.path.join(ROOT, "tests", "tools", "mkspool.py"), spool,
                    "--launches", str(a.launches), "--functions", "40"], check=True)
    size = sum(os.path.getsize(os.path.join(spool, f)) for f in os.listdir(spool))
    raw = []
    for i in range(a.reps):
        out = os.path.join(tmp, f"r{i}.kjdb")
        cmd = ["/usr/bin/time", "-v", a.kjoule, "ingest", spool, "-o", out]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode:
            sys.exit(p.stderr)
        wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\d+):([\d.]+)", p.stderr)
        rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
        raw.append({"wall_s": int(wall.group(1)) * 60 + float(wall.group(2)), "peak_rss_mb": int(rss.group(1)) / 1024,
                    "db_mb": os.path.getsize(out) / 2**20})
        print(f"rep {i}: {raw[-1]}")
    best = min(r["wall_s"] for r in raw)
    cpu = ""
    try:
        cpu = [l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")][0]
    except (OSError, IndexError):
        pass
    res = {"benchmark": "ingest_speed", "machine": f"{platform.node()} {cpu}, {os.cpu_count()} cores",
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "command": " ".join(sys.argv),
           "launches": a.launches, "spool_mb": size / 2**20, "best_wall_s": best,
           "launches_per_s": a.launches / best, "raw": raw}
    with open(a.output, "w") as f:
        json.dump(res, f, indent=1)
    print(f"{a.launches} launches ({size / 2**20:.0f} MB spool): best {best:.2f} s, "
          f"{a.launches / best / 1e6:.2f} M launches/s; written to {a.output}")


if __name__ == "__main__":
    main()
