#!/usr/bin/env python3
"""Turn a kjgen run database into the runs the report's capture and ranks sections are tested on.

  mkreportsec.py capture DB STATUS   a --capture run: 10 instances of 'forward' (500 ms each, 600 ms
                                     apart, from 0.2 s) with iteration marks, instances 3 and 4
                                     captured (none for never_opened), meta capture_*; the power
                                     counter of kjgen (--power 80) covers them all
  mkreportsec.py capture DB steady   a steady loop under step@150:50: a 2 s warm-up instance, then
                                     399 of 16 ms every 20 ms, 150..199 captured; power read every
                                     10 ms at a constant 400 W, the energy counter moving every 100 ms
  mkreportsec.py capture DB traced   the same loop with its captured iterations slowed by tracing:
                                     150..199 of 20 ms every 24 ms (9.6 J each, 8 J elsewhere)
  mkreportsec.py job DB VARIANT      two ranks on two GPUs, as tests/unit/test_ranks.c builds them
                                     (figures by hand there): variant plain, or odd (rank 1 on
                                     another GPU type, died, and its GPU without power samples)
"""
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kjgen  # noqa: E402  (the schema, read from src/store/kj_schema.c)

T0 = 1_000_000_000
MS = 1_000_000
US = 1000


def steady(db, traced=False):
    """The steady loop of the docstring: 8 J a 20 ms cycle, by construction; traced: the captured
    cycles 24 ms (their iterations 20 ms), as tracing slows a host-bound loop."""
    captured = range(150, 200)
    start, end = [T0 + 200 * MS], [T0 + 2200 * MS]
    t = T0 + 200 * MS + 2004 * MS
    for i in range(1, 400):
        slow = traced and i in captured
        start.append(t)
        end.append(t + (20 if slow else 16) * MS)
        t += (24 if slow else 20) * MS
    for i, (s, e) in enumerate(zip(start, end)):
        db.execute("INSERT INTO iteration_mark(pid, name, instance, start_ns, end_ns, captured)"
                   " VALUES(4242, 'step', ?, ?, ?, ?)", (i, s, e, 1 if i in captured else 0))
    db.execute("INSERT INTO capture_window(pid, start_ns, end_ns, first_instance, last_instance, status)"
               " VALUES(4242, ?, ?, 150, 199, 'captured')", (start[150], end[199]))
    db.execute("DELETE FROM power_sample")
    last = -1
    for k in range(1300):  # 13 s of reads, 10 ms apart, from T0
        period = k // 10  # the counter moves every 100 ms: 40 J at 400 W
        db.execute("INSERT INTO power_sample(device_id, t_ns, power_mw, power_avg_mw, energy_mj, energy_updated)"
                   " VALUES(0, ?, 400000, 400000, ?, ?)", (T0 + k * 10 * MS + 3 * MS, period * 40000,
                                                           1 if period != last else 0))
        last = period
    for k, v in (("capture_range", "step@150:50"), ("capture_status", "captured"), ("iteration_range", "step")):
        db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", (k, v))


def capture(db, status):
    sql, _ = kjgen.read_schema(kjgen.SRC, "kj_schema_capture_sql")
    db.executescript(sql)
    db.execute("DELETE FROM iteration_mark")
    db.execute("DELETE FROM capture_window")
    if status in ("steady", "traced"):
        return steady(db, status == "traced")
    for i in range(10):
        s = T0 + 200 * MS + i * 600 * MS
        cap = status != "never_opened" and i in (3, 4)
        db.execute("INSERT INTO iteration_mark(pid, name, instance, start_ns, end_ns, captured)"
                   " VALUES(4242, 'forward', ?, ?, ?, ?)", (i, s, s + 500 * MS, 1 if cap else 0))
    if status != "never_opened":
        end = None if status == "unclosed_at_exit" else T0 + 200 * MS + 4 * 600 * MS + 500 * MS
        db.execute("INSERT INTO capture_window(pid, start_ns, end_ns, first_instance, last_instance,"
                   " status) VALUES(4242, ?, ?, 3, 4, ?)", (T0 + 200 * MS + 3 * 600 * MS, end,
                                                            "captured" if status == "captured" else status))
    spec = "cuda-profiler-api" if status == "start_without_stop" else "forward@3:2"
    for k, v in (("capture_range", spec), ("capture_status", status), ("iteration_range", "forward")):
        db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", (k, v))


def kernel(db, pid, dev, stream, name, uid, s, e, launch):
    db.execute("INSERT INTO kernel(pid, device_id, stream_id, start_ns, end_ns, name_id, unique_id,"
               " launch_ns) VALUES(?,?,?,?,?,?,?,?)",
               (pid, dev, stream, T0 + s * US, T0 + e * US, name, uid, T0 + launch * US))


def job(db, variant):
    odd = variant == "odd"
    for t in ("process", "process_device", "device", "kernel", "kernel_name", "unique_kernel",
              "nvtx_range", "power_sample", "memcpy", "memset", "replay_kernel", "problem"):
        db.execute("DELETE FROM " + t)
    db.execute("INSERT INTO process(pid, exe, ended_cleanly) VALUES(100, 'torchrun', 1),"
               " (101, 'python3', 1), (102, 'python3', ?)", (0 if odd else 1,))
    if odd:
        db.execute("INSERT INTO problem(pid, severity, what) VALUES(102, 'error', 'CUPTI dropped 3"
                   " activity records'), (102, 'warning', 'ended by SIGTERM from pid 100 (torchrun)')")
    db.execute("INSERT INTO device(id, uuid, name) VALUES(0, 'GPU-a', 'NVIDIA H200'), (1, 'GPU-b', ?)",
               ("NVIDIA H100 80GB HBM3" if odd else "NVIDIA H200",))
    db.execute("INSERT INTO kernel_name(id, mangled) VALUES(1, 'ampere_sgemm_128x64_tn'),"
               " (2, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)'),"
               " (3, 'vectorized_elementwise_kernel')")
    db.execute("INSERT INTO unique_kernel(id, key, name_id, tier) VALUES(1, 'a', 1, 'gemm'),"
               " (2, 'b', 3, 'elementwise'), (3, 'c', 2, 'communication')")
    db.execute("INSERT INTO replay_kernel(unique_id, cache, runs, median_ns) VALUES"
               " (1, 'warm', 10, 250000), (1, 'cold', 10, 350000)")
    for r in range(2):
        pid = 101 + r
        db.execute("INSERT INTO nvtx_range(pid, tid, domain, name, start_ns, end_ns, depth) VALUES"
                   " (?, ?, 'NCCL', 'ncclCommInitRank', ?, NULL, 0)", (pid, pid, T0 - 500 * US))
        for i in range(4):
            o = 2000 * i + 10 * r
            db.execute("INSERT INTO nvtx_range(pid, tid, name, start_ns, end_ns, depth) VALUES"
                       " (?, ?, 'step', ?, ?, 1)", (pid, pid, T0 + o * US, T0 + (o + (1200 if r else 1000)) * US))
            if r == 0:
                kernel(db, pid, 0, 1, 1, 1, o + 100, o + 400, o + 50)
                kernel(db, pid, 0, 2, 2, 3, o + 300, o + 600, o + 60)
            else:
                kernel(db, pid, 1, 1, 3, 2, o + 100, o + 700, o + 50)
                kernel(db, pid, 1, 2, 2, 3, o + 650, o + 800, o + 60)
    for d in range(1 if odd else 2):
        mj = 5000
        for k in range(91):
            mj += (20 if d else 30) if k else 0
            p = 200000 if d else 300000
            db.execute("INSERT INTO power_sample(device_id, t_ns, power_mw, power_avg_mw, energy_mj,"
                       " energy_updated) VALUES(?, ?, ?, ?, ?, 1)", (d, T0 + (k * 100 - 50) * US, p, p, mj))


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("capture", "job"):
        sys.exit(__doc__)
    db = sqlite3.connect(sys.argv[2])
    (capture if sys.argv[1] == "capture" else job)(db, sys.argv[3])
    db.commit()


if __name__ == "__main__":
    main()
