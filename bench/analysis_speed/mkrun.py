#!/usr/bin/env python3
"""mkrun: a synthetic, internally consistent run database for the analysis commands.

A model-loading phase (cuInit, allocations, H2D weight copies), then --iterations NVTX 'forward'
ranges, each with --layers nested 'layer.N' ranges (depth 1) and --kernels launches: one
cuLaunchKernel API call per kernel (correlation ids match), kernels on --streams streams, a
cuStreamSynchronize at the end, a D2H copy of the result. Optional power samples (every
--power-ms with an energy counter), idle power, and replay results (replay_kernel warm/cold,
replay_energy, replay_sequence eager/graph), so that compare, timeline and api have every input.

The schema comes from tests/tools/kjgen.py (which reads src/store/kj_schema.c).
  mkrun.py -o run.kjdb                        10 iterations x 50 kernels, all inputs
  mkrun.py -o big.kjdb --iterations 1000 --kernels 1000 --no-api   1,000,000 launches
"""
import argparse
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "tools"))
import kjgen  # noqa: E402

NAMES = [k[0] for k in kjgen.REAL_KERNELS]
# tiers as src/common/kj_kernel_class.c names them
TIERS = ["elementwise", "gemm", "gemm", "communication", "elementwise", "reduction", "gemm", "norm",
         "reduction", "attention", "elementwise", "reduction", "other"]
PID, TID = 4242, 4243


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--kernels", type=int, default=50, help="launches per iteration")
    ap.add_argument("--unique", type=int, default=12)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--streams", type=int, default=1)
    ap.add_argument("--no-api", action="store_true", help="no api_call rows (run without --api)")
    ap.add_argument("--no-replay", action="store_true")
    ap.add_argument("--no-power", action="store_true")
    ap.add_argument("--power-ms", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    if os.path.exists(a.output):
        os.unlink(a.output)
    rnd = random.Random(a.seed)
    db = kjgen.create(a.output, SRC)
    names = kjgen.Names(db)
    db.execute("INSERT INTO process(pid, ppid, exe, args, start_ns, end_ns, ended_cleanly, cupti_status)"
               " VALUES(?, 1, '/usr/bin/python3', '[\"python3\",\"infer.py\"]', 1000000000, NULL, 1, 'ok')", (PID,))
    db.execute("INSERT INTO device(id, uuid, name, power_limit_mw, nvml_index, energy_counter)"
               " VALUES(0, 'GPU-synthetic', 'NVIDIA H200', 700000, 0, 1)")
    db.execute("INSERT INTO clock_sync(pid, trace_ns, monotonic_ns, realtime_ns) VALUES(?, 1000000000, 1000000000, 1767225600000000000)", (PID,))
    nu = max(1, a.unique)
    base = []
    for u in range(nu):
        nid = names.get(NAMES[u % len(NAMES)] + ("" if u < len(NAMES) else "_v%d" % u))
        dur = rnd.choice([2000, 3000, 5000, 8000, 20000, 40000])
        base.append(dur)
        db.execute("INSERT INTO unique_kernel(id, key, name_id, grid_x, grid_y, grid_z, block_x, block_y, block_z,"
                   " tier, launches) VALUES(?, ?, ?, 1, 1, 1, 128, 1, 1, ?, 0)",
                   (u + 1, "k%d" % u, nid, TIERS[u % len(TIERS)]))
    api, kern, cpy, nvtx, alloc = [], [], [], [], []
    corr = 1
    t = 1000000000
    # loading: cuInit, allocations, weight copies
    api.append((PID, TID, "driver", 1, "cuInit", t, t + 200000, None, 0, None, None))
    t += 300000
    dev_t = t
    for i in range(8):
        api.append((PID, TID, "driver", 2, "cuMemAlloc_v2", t, t + 20000, corr, 0, 1 << 24, None))
        alloc.append((PID, 0, 0x7f0000000000 + i * (1 << 24), 1 << 24, "device", t + 10000, None, None))
        corr += 1
        t += 30000
        api.append((PID, TID, "driver", 3, "cuMemcpyHtoD_v2", t, t + 300000, corr, 0, 1 << 24, 0))
        cpy.append((PID, 0, 1, 0, corr, t + 5000, t + 295000, 1 << 24, "HtoD", "pageable", "device", None))
        corr += 1
        t += 310000
    t += 1000000
    gap_cpu = 9000
    for it in range(a.iterations):
        f0 = t
        t += 2000
        last_end = t
        per_layer = max(1, a.kernels // max(1, a.layers))
        layer_start = t
        layer = 0
        for j in range(a.kernels):
            u = (j * 7 + it * 0) % nu
            ls = t
            api.append((PID, TID, "driver", 4, "cuLaunchKernel", ls, ls + 3000, corr, 0, None, 7 + j % a.streams))
            d = int(base[u] * (0.95 + 0.1 * rnd.random()))
            st = max(ls + 4000, last_end + 1000) if a.streams == 1 else ls + 4000
            kern.append((PID, 0, 1, 7 + j % a.streams, corr, st, st + d, names.ids[NAMES[u % len(NAMES)] + ("" if u < len(NAMES) else "_v%d" % u)],
                         u + 1, ls))
            last_end = max(last_end, st + d)
            corr += 1
            t += gap_cpu
            if a.layers and (j + 1) % per_layer == 0 and layer < a.layers:
                nvtx.append((PID, TID, None, "layer.%d" % layer, layer_start, t, 1, None, "push"))
                layer += 1
                layer_start = t
        # result copy and sync
        api.append((PID, TID, "driver", 5, "cuMemcpyDtoHAsync_v2", t, t + 2000, corr, 0, 4096, 7))
        cs = max(t + 3000, last_end + 500)
        cpy.append((PID, 0, 1, 7, corr, cs, cs + 3000, 4096, "DtoH", "device", "pinned", None))
        corr += 1
        t += 3000
        se = max(t + 1000, cs + 3000 + 1000)
        api.append((PID, TID, "driver", 6, "cuStreamSynchronize", t, se, None, 0, None, 7))
        t = se + 1000
        nvtx.append((PID, TID, None, "forward", f0, t, 0, None, "push"))
        t += 20000
    end = t + 1000000
    db.execute("UPDATE process SET end_ns = ?", (end,))
    db.executemany("INSERT INTO api_call(pid, tid, domain, cbid, name, start_ns, end_ns, correlation_id, status, bytes, stream_id)"
                   " VALUES(?,?,?,?,?,?,?,?,?,?,?)", [] if a.no_api else api)
    db.executemany("INSERT INTO kernel(pid, device_id, context_id, stream_id, correlation_id, start_ns, end_ns, name_id,"
                   " unique_id, launch_ns) VALUES(?,?,?,?,?,?,?,?,?,?)", kern)
    db.executemany("INSERT INTO memcpy(pid, device_id, context_id, stream_id, correlation_id, start_ns, end_ns, bytes, kind,"
                   " src_kind, dst_kind, graph_node_id) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)", cpy)
    db.executemany("INSERT INTO nvtx_range(pid, tid, domain, name, start_ns, end_ns, depth, parent_id, kind)"
                   " VALUES(?,?,?,?,?,?,?,?,?)", nvtx)
    db.executemany("INSERT INTO allocation(pid, device_id, address, bytes, kind, alloc_ns, free_ns, stream_id)"
                   " VALUES(?,?,?,?,?,?,?,?)", alloc)
    db.execute("UPDATE unique_kernel SET launches = (SELECT count(*) FROM kernel k WHERE k.unique_id = unique_kernel.id)")
    if not a.no_power:
        step = int(a.power_ms * 1e6)
        e = 0.0
        rows = []
        tt = 1000000000
        while tt <= end:
            p = 300000 + rnd.randint(-5000, 5000)
            e += p * step / 1e9
            rows.append((0, tt, p, p, int(e), 1, 1980, 2619, 40))
            tt += step
        db.executemany("INSERT INTO power_sample(device_id, t_ns, power_mw, power_avg_mw, energy_mj, energy_updated,"
                       " sm_clock_mhz, mem_clock_mhz, temp_c) VALUES(?,?,?,?,?,?,?,?,?)", rows)
        db.execute("INSERT INTO idle_power(device_id, median_mw, p10_mw, p90_mw, samples, measured_ns, source)"
                   " VALUES(0, 120000, 118000, 123000, 100, 10000000000, 'mkrun')")
    if not a.no_replay:
        for u in range(nu):
            db.execute("INSERT INTO replay_kernel(unique_id, cache, runs, min_ns, median_ns, mean_ns, max_ns, stdev_ns, status)"
                       " VALUES(?, 'warm', 100, ?, ?, ?, ?, 10, 'ok')", (u + 1, base[u] - 50, base[u], base[u], base[u] + 50))
            db.execute("INSERT INTO replay_kernel(unique_id, cache, runs, min_ns, median_ns, mean_ns, max_ns, stdev_ns, status)"
                       " VALUES(?, 'cold', 100, ?, ?, ?, ?, 10, 'ok')", (u + 1, base[u] + 500, base[u] + 800, base[u] + 800, base[u] + 900))
            db.execute("INSERT INTO replay_energy(unique_id, unroll, launches, seconds, energy_mj_per_launch, power_mw, idle_mw, method)"
                       " VALUES(?, 100, 100000, 3.0, ?, 450000, 120000, 'counter')", (u + 1, base[u] * 450e-6))
        kper = sum(base[(j * 7) % nu] for j in range(a.kernels))
        db.execute("INSERT INTO replay_sequence(iteration, mode, runs, launches, median_ns, min_ns, max_ns, energy_mj)"
                   " VALUES(1, 'eager', 20, ?, ?, ?, ?, ?)", (a.kernels, kper + a.kernels * 4000, kper, kper * 2, kper * 4e-4))
        db.execute("INSERT INTO replay_sequence(iteration, mode, runs, launches, median_ns, min_ns, max_ns, energy_mj)"
                   " VALUES(1, 'graph', 20, ?, ?, ?, ?, ?)", (a.kernels, kper + a.kernels * 500, kper, kper * 2, kper * 4e-4))
    db.execute("COMMIT")
    db.close()
    print("%s: %d iterations x %d launches (%d kernels, %d API calls)" %
          (a.output, a.iterations, a.kernels, len(kern), 0 if a.no_api else len(api)))


if __name__ == "__main__":
    main()
