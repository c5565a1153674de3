#!/usr/bin/env python3
"""kjgen: build synthetic kjoule run databases with the real schema (for tests and benchmarks).

The schema is read from src/store/kj_schema.c (its C string literals) and the version from
src/store/kj_schema.h, so generated files always match the code they test.

Examples:
  kjgen.py -o run.kjdb                              1000 launches of 12 real kernel names
  kjgen.py -o big.kjdb --kernels 1000000 --unique 200 --memcpy 20000
  kjgen.py -o t.kjdb --spec spec.json               exactly the rows in spec.json
  kjgen.py -o e.kjdb --kernels 0                    a run with no kernels
  kjgen.py -o n.kjdb --schema-version 99            a newer schema (must be refused)
  kjgen.py -o a.kjdb --end-status killed            a run that ended abnormally

Random mode: launches are spread over --devices devices and --streams streams per device; on
each stream launches follow one another with gaps of --gap-ns; streams of a device overlap.
Durations: each unique kernel has a base duration (seeded) and each launch varies by +-10%.
--null-unique F leaves unique_id NULL on a fraction F of launches (the fallback grouping path).

Spec mode (--spec FILE, JSON):
  {"kernels": [{"name": "...", "demangled": "...", "start": 0, "end": 100, "device": 0,
                "stream": 7, "grid": [1,1,1], "block": [128,1,1], "shmem": 0,
                "registers": 32, "unique": "key-or-null", "tier": null,
                "shmem_executed": 233472, "carveout": null}],
   "memcpy": [{"kind": "HtoD", "bytes": 4096, "start": 0, "end": 10, "device": 0}],
   "memset": [{"bytes": 512, "start": 0, "end": 5, "device": 0}],
   "nvtx": [{"name": "forward", "start": 0, "end": 100}],
   "problems": [{"severity": "warning", "what": "..."}],
   "meta": {"command": "[\\"python\\",\\"x.py\\"]"},
   "watch": {"state": "processes", "note": null, "pid_match": "pid", "mig": 0, "mps": 0},
   "foreign_activity": [{"device": 0, "pid": 777, "name": "python3", "start": 0, "end": 100,
                         "source": "process"}],
   "gpu_process_sample": [{"device": 0, "t": 0, "pid": 777, "name": "python3", "traced": 0}]}
  A kernel's "unique" names its unique_kernel row by key (rows with equal keys share one);
  null or absent leaves unique_id NULL. Times are ns. Omitted fields get defaults.
"""
import argparse
import json
import os
import random
import re
import sqlite3
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.normpath(os.path.join(HERE, "..", ".."))

# Real kernel names (mangled where the real ones are), with grid and block.
REAL_KERNELS = [
    ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_", (128, 1, 1), (128, 1, 1)),
    ("nvjet_hsh_64x8_64x16_2x1_v_bz_TNT", (16, 8, 1), (128, 1, 1)),
    ("_ZN7cutlass7Kernel2I66cutlass_80_wmma_tensorop_f16_s161616gemm_f16_32x32_128x2_tn_align8EEvNT_6ParamsE", (32, 4, 1), (128, 1, 1)),
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", (2, 1, 1), (512, 1, 1)),
    ("triton_poi_fused_add_mul_0", (64, 1, 1), (256, 1, 1)),
    ("triton_red_fused__softmax_1", (40, 1, 1), (256, 1, 1)),
    ("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_tn", (8, 8, 1), (256, 1, 1)),
    ("_ZN2at6native12_GLOBAL__N_128vectorized_layer_norm_kernelIN3c104HalfEfEEvifPKT_S6_S6_PT0_S9_PS4_", (5, 1, 1), (256, 1, 1)),
    ("_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_7MeanOpsIfffEEjfLi4EEEEEvT1_", (1, 1, 1), (512, 1, 1)),
    ("_ZN13pytorch_flash16flash_fwd_kernelI23Flash_fwd_kernel_traitsILi64ELi128ELi128ELi4ELb0ELb0EN7cutlass6half_tEELb0ELb1EEEv16Flash_fwd_params", (1, 16, 1), (128, 1, 1)),
    ("_ZN2at6native27unrolled_elementwise_kernelINS0_13BUnaryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEESt5arrayIPcLm2EELi4E23TrivialOffsetCalculatorILi1EjESB_NS0_6memory15LoadWithoutCastENSC_16StoreWithoutCastEEEviT_T0_T2_T3_T4_T5_", (4, 1, 1), (128, 1, 1)),
    ("_ZN2at6native43_GLOBAL__N__d8d0a9f5_10_SoftMax_cu_9f978f6319cunn_SoftMaxForwardILi4EN3c104HalfEffNS1_22SoftMaxForwardEpilogueEEEvPT2_PKT0_i", (12, 1, 1), (512, 1, 1)),
    ("my_custom_kernel", (1, 1, 1), (32, 1, 1)),
]


def c_literals(text):
    """Concatenated value of the C string literals in text (comments removed)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    out = []
    for lit in re.findall(r'"((?:[^"\\\n]|\\.)*)"', text):
        out.append(re.sub(r'\\(.)', lambda m: {"n": "\n", "t": "\t", "\\": "\\", '"': '"'}.get(m.group(1), m.group(1)), lit))
    return "".join(out)


def read_schema(src, name="kj_schema_sql"):
    c = open(os.path.join(src, "src", "store", "kj_schema.c"), encoding="utf-8").read()
    i = c.index(name + "[]")
    body = c[c.index("=", i) + 1:]
    # the definition ends at the first ';' outside a string literal
    pos, instr = 0, False
    while pos < len(body):
        ch = body[pos]
        if ch == '"' and (pos == 0 or body[pos - 1] != "\\"):
            instr = not instr
        elif ch == ";" and not instr:
            break
        pos += 1
    sql = c_literals(body[:pos])
    h = open(os.path.join(src, "src", "store", "kj_schema.h"), encoding="utf-8").read()
    version = int(re.search(r"#define\s+KJ_SCHEMA_VERSION\s+(\d+)", h).group(1))
    return sql, version


def create(path, src, version_override=None):
    sql, version = read_schema(src)
    if version_override is not None:
        version = version_override
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=OFF")
    db.execute("PRAGMA synchronous=OFF")
    db.execute("BEGIN")
    for stmt in split_sql(sql):
        db.execute(stmt)
    db.execute("PRAGMA user_version = %d" % version)
    db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', ?)", (str(version),))
    return db


def split_sql(sql):
    """Statements of sql (the schema has no ';' inside strings)."""
    return [s.strip() for s in sql.split(";\n") if s.strip()]


class Names:
    def __init__(self, db):
        self.db, self.ids = db, {}

    def get(self, mangled, demangled=None):
        if mangled not in self.ids:
            cur = self.db.execute("INSERT INTO kernel_name(mangled, demangled) VALUES(?, ?)",
                                  (mangled, demangled))
            self.ids[mangled] = cur.lastrowid
        return self.ids[mangled]


def meta(db, args, extra=None):
    m = {
        "command": json.dumps(["python3", "infer.py", "--seq-len", "5"]),
        "start_realtime": "1767225600000000000",
        "start_ns": "1000000000",
        "hostname": "kjgen",
        "kjoule_version": "kjgen",
    }
    if args.end_status != "none":
        m["end_status"] = args.end_status
        m["exit_code"] = str(args.exit_code)
    m.update(extra or {})
    return m


def write_meta(db, m, end_ns):
    if "end_status" in m and "end_ns" not in m:
        m["end_ns"] = str(end_ns)
    for k, v in m.items():
        db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", (k, str(v)))


def base_rows(db, args, ndev, end_ns):
    db.execute("INSERT INTO process(pid, ppid, exe, args, start_ns, end_ns, ended_cleanly, cupti_status)"
               " VALUES(4242, 1, '/usr/bin/python3', ?, 1000000000, ?, ?, 'ok')",
               (json.dumps(["python3", "infer.py"]), end_ns, 1 if args.end_status == "exited" else 0))
    for d in range(ndev):
        db.execute("INSERT INTO device(id, uuid, name, cc_major, cc_minor, sm_count, memory_bytes,"
                   " l2_bytes, power_limit_mw, driver_version, cuda_version, nvml_index, pci_bus_id)"
                   " VALUES(?, ?, 'NVIDIA H200', 9, 0, 132, 150754820096, 62914560, 700000,"
                   " '580.159', 13000, ?, ?)",
                   (d, "GPU-%08x-0000-0000-0000-%012x" % (d, d), d, "0000:%02x:00.0" % (d + 0x18)))
        db.execute("INSERT INTO process_device(pid, ordinal, device_id) VALUES(4242, ?, ?)", (d, d))


def gen_random(db, args):
    rnd = random.Random(args.seed)
    names = Names(db)
    ndev = max(1, args.devices)
    t0 = 1_000_000_000
    nuniq = max(1, args.unique)
    kinds = []
    for u in range(nuniq):
        name, grid, block = REAL_KERNELS[u % len(REAL_KERNELS)]
        # beyond the real list, vary the geometry so each unique kernel differs
        if u >= len(REAL_KERNELS):
            grid = (grid[0] * (1 + u // len(REAL_KERNELS)), grid[1], grid[2])
        kinds.append((name, grid, block, rnd.randint(2_000, 200_000)))
    uk_ids = []
    for u, (name, grid, block, _) in enumerate(kinds):
        nid = names.get(name)
        cur = db.execute("INSERT INTO unique_kernel(key, name_id, grid_x, grid_y, grid_z, block_x,"
                         " block_y, block_z, cluster_x, cluster_y, cluster_z, shmem_dynamic,"
                         " shmem_static, registers, param_bytes, tier, launches, keyed_by)"
                         " VALUES(?,?,?,?,?,?,?,?,1,1,1,0,0,32,64,NULL,0,'params')",
                         ("k%04d-%s" % (u, format(zlib.crc32(name.encode()), "08x")), nid) + grid + block)
        uk_ids.append(cur.lastrowid)
    nstreams = max(1, args.streams)
    clock = {(d, s): t0 + s * 1000 for d in range(ndev) for s in range(nstreams)}
    end_max = t0

    def rows():
        nonlocal end_max
        for i in range(args.kernels):
            u = rnd.randrange(nuniq) if args.random_order else i % nuniq
            name, grid, block, base = kinds[u]
            d, s = i % ndev, (i // ndev) % nstreams
            start = clock[(d, s)] + args.gap_ns
            dur = max(1, int(base * rnd.uniform(0.9, 1.1)))
            clock[(d, s)] = start + dur
            end_max = max(end_max, start + dur)
            uid = None if rnd.random() < args.null_unique else uk_ids[u]
            yield (4242, d, 1, 7 + s, i + 1, start, start + dur, names.ids[name], uid) + grid + block + \
                (1, 1, 1, 0, 0, 32, start - 5000, 1)
    db.executemany("INSERT INTO kernel(pid, device_id, context_id, stream_id, correlation_id, start_ns,"
                   " end_ns, name_id, unique_id, grid_x, grid_y, grid_z, block_x, block_y, block_z,"
                   " cluster_x, cluster_y, cluster_z, shmem_dynamic, shmem_static, registers,"
                   " launch_ns, launch_tid) VALUES(" + ",".join("?" * 23) + ")", rows())
    db.execute("UPDATE unique_kernel SET launches = (SELECT count(*) FROM kernel k WHERE k.unique_id = unique_kernel.id)")
    copy_kinds = ["HtoD", "DtoH", "DtoD"]

    def copies():
        nonlocal end_max
        for i in range(args.memcpy):
            d = i % ndev
            start = clock[(d, 0)] + args.gap_ns
            nbytes = 4096 << (i % 4)
            dur = 1000 + nbytes // 10
            clock[(d, 0)] = start + dur
            end_max = max(end_max, start + dur)
            yield (4242, d, 1, 7, 10_000_000 + i, start, start + dur, nbytes, copy_kinds[i % 3],
                   "pageable" if i % 3 != 2 else "device", "device")
    db.executemany("INSERT INTO memcpy(pid, device_id, context_id, stream_id, correlation_id, start_ns,"
                   " end_ns, bytes, kind, src_kind, dst_kind) VALUES(?,?,?,?,?,?,?,?,?,?,?)", copies())

    def sets():
        nonlocal end_max
        for i in range(args.memset):
            d = i % ndev
            start = clock[(d, 0)] + args.gap_ns
            clock[(d, 0)] = start + 800
            end_max = max(end_max, start + 800)
            yield (4242, d, 1, 7, 20_000_000 + i, start, start + 800, 512 << (i % 2), 0, "device")
    db.executemany("INSERT INTO memset(pid, device_id, context_id, stream_id, correlation_id, start_ns,"
                   " end_ns, bytes, value, mem_kind) VALUES(?,?,?,?,?,?,?,?,?,?)", sets())
    span = max(1, end_max - t0)
    for i in range(args.nvtx):
        s = t0 + span * i // max(1, args.nvtx)
        db.execute("INSERT INTO nvtx_range(pid, tid, domain, name, start_ns, end_ns, depth, kind)"
                   " VALUES(4242, 1, NULL, 'forward', ?, ?, 0, 'pushpop')", (s, s + span // max(1, args.nvtx) - 1))
    for i in range(args.power):
        t = t0 + i * 100_000_000
        for d in range(ndev):
            db.execute("INSERT INTO power_sample(device_id, t_ns, realtime_ns, power_mw, energy_mj,"
                       " energy_updated, sm_clock_mhz, temp_c) VALUES(?,?,?,?,?,1,1980,50)",
                       (d, t, 1767225600000000000 + (t - t0), 300000 + rnd.randint(0, 300000), i * 40000))
    for i in range(args.api):
        s = t0 + i * 10_000
        db.execute("INSERT INTO api_call(pid, tid, domain, cbid, name, start_ns, end_ns, correlation_id,"
                   " status) VALUES(4242, 1, 'driver', 307, 'cuLaunchKernel', ?, ?, ?, 0)", (s, s + 3000, i + 1))
    for i in range(args.modules):
        blob = bytes(rnd.randrange(256) for _ in range(256))
        db.execute("INSERT INTO module(hash, format, bytes, codec, data) VALUES(?, 'cubin', ?, 'none', ?)",
                   ("%064x" % (i + 1), len(blob), blob))
        db.execute("INSERT INTO module_load(pid, cupti_module_id, hash, load_ns) VALUES(4242, ?, ?, ?)",
                   (i + 1, "%064x" % (i + 1), t0))
    if args.params:
        for u, uid in enumerate(uk_ids):
            db.execute("INSERT INTO launch_params(unique_id, pid, correlation_id, ordinal, handle_kind,"
                       " layout, params) VALUES(?, 4242, ?, 0, 'kernel', '[[0,8]]', ?)", (uid, u + 1, bytes(8)))
    return ndev, end_max


def add_watch(db, spec):
    """The tables and meta keys of kjoule run's watch for other processes (a run that watched)."""
    sql, _ = read_schema(SRC, "kj_schema_watch_sql")
    for stmt in split_sql(sql):
        db.execute(stmt)
    w = spec.get("watch", {})
    m = {"gpu_watch": w.get("state", "processes"), "gpu_watch_interval_ms": "200",
         "gpu_watch_pid_match": w.get("pid_match", "pid"), "gpu_mig": str(w.get("mig", 0)),
         "gpu_mps": str(w.get("mps", 0))}
    if w.get("note"):
        m["gpu_watch_note"] = w["note"]
    for k, v in m.items():
        db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", (k, v))
    for f in spec.get("foreign_activity", []):
        db.execute("INSERT INTO foreign_activity(device_id, pid, name, start_ns, end_ns, source)"
                   " VALUES(?,?,?,?,?,?)", (f.get("device", 0), f.get("pid"), f.get("name"),
                                            f["start"], f["end"], f.get("source", "process")))
    for g in spec.get("gpu_process_sample", []):
        db.execute("INSERT INTO gpu_process_sample(device_id, t_ns, pid, name, used_memory_bytes,"
                   " sm_util_pct, traced) VALUES(?,?,?,?,?,?,?)",
                   (g.get("device", 0), g["t"], g["pid"], g.get("name"), g.get("used_memory_bytes"),
                    g.get("sm_util_pct"), g.get("traced", 0)))


def gen_spec(db, spec):
    names = Names(db)
    keys = {}
    devs = set()
    end_max = 1_000_000_000
    for i, k in enumerate(spec.get("kernels", [])):
        grid = tuple(k.get("grid", [1, 1, 1]))
        block = tuple(k.get("block", [128, 1, 1]))
        nid = names.get(k["name"], k.get("demangled"))
        uid = None
        key = k.get("unique")
        if key is not None:
            if key not in keys:
                cur = db.execute("INSERT INTO unique_kernel(key, name_id, grid_x, grid_y, grid_z, block_x,"
                                 " block_y, block_z, shmem_dynamic, registers, tier, launches, keyed_by)"
                                 " VALUES(?,?,?,?,?,?,?,?,?,?,?,0,?)",
                                 (key, nid) + grid + block + (k.get("shmem", 0), k.get("registers", 32),
                                                              k.get("tier"), k.get("keyed_by", "params")))
                keys[key] = cur.lastrowid
            uid = keys[key]
        d = k.get("device", 0)
        devs.add(d)
        end_max = max(end_max, k.get("end", 0) or 0)
        db.execute("INSERT INTO kernel(pid, device_id, context_id, stream_id, correlation_id, start_ns,"
                   " end_ns, name_id, unique_id, grid_x, grid_y, grid_z, block_x, block_y, block_z,"
                   " shmem_dynamic, registers, shmem_executed, carveout, launch_type)"
                   " VALUES(4242,?,1,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                   (d, k.get("stream", 7), i + 1, k.get("start"), k.get("end"), nid, uid) + grid + block +
                   (k.get("shmem", 0), k.get("registers", 32), k.get("shmem_executed"), k.get("carveout"),
                    k.get("launch_type")))
    for i, c in enumerate(spec.get("memcpy", [])):
        devs.add(c.get("device", 0))
        end_max = max(end_max, c.get("end", 0) or 0)
        db.execute("INSERT INTO memcpy(pid, device_id, stream_id, correlation_id, start_ns, end_ns, bytes,"
                   " kind) VALUES(4242,?,7,?,?,?,?,?)",
                   (c.get("device", 0), 100000 + i, c.get("start"), c.get("end"), c.get("bytes", 0), c.get("kind", "HtoD")))
    for i, c in enumerate(spec.get("memset", [])):
        devs.add(c.get("device", 0))
        end_max = max(end_max, c.get("end", 0) or 0)
        db.execute("INSERT INTO memset(pid, device_id, stream_id, correlation_id, start_ns, end_ns, bytes,"
                   " value) VALUES(4242,?,7,?,?,?,?,0)",
                   (c.get("device", 0), 200000 + i, c.get("start"), c.get("end"), c.get("bytes", 0)))
    for n in spec.get("nvtx", []):
        db.execute("INSERT INTO nvtx_range(pid, tid, name, start_ns, end_ns, depth, kind)"
                   " VALUES(4242, 1, ?, ?, ?, 0, 'pushpop')", (n["name"], n.get("start"), n.get("end")))
    if "watch" in spec or "foreign_activity" in spec or "gpu_process_sample" in spec:
        add_watch(db, spec)
    for p in spec.get("problems", []):
        db.execute("INSERT INTO problem(pid, t_ns, severity, what) VALUES(4242, ?, ?, ?)",
                   (p.get("t_ns"), p.get("severity", "warning"), p["what"]))
    return max(1, len(devs)), end_max


def main(argv=None):
    ap = argparse.ArgumentParser(prog="kjgen.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--output", required=True, help="run database to write")
    ap.add_argument("--force", action="store_true", help="overwrite the output")
    ap.add_argument("--src", default=SRC, help="kjoule source tree (for the schema); default: this checkout")
    ap.add_argument("--spec", help="JSON file with exact rows (see above); other row options are ignored")
    ap.add_argument("--kernels", type=int, default=1000, help="kernel launches (default 1000)")
    ap.add_argument("--unique", type=int, default=12, help="unique kernels (default 12, real names cycled)")
    ap.add_argument("--random-order", action="store_true", help="pick each launch's kernel at random")
    ap.add_argument("--null-unique", type=float, default=0.0, help="fraction of launches with unique_id NULL")
    ap.add_argument("--devices", type=int, default=1, help="devices (default 1)")
    ap.add_argument("--streams", type=int, default=1, help="streams per device; >1 makes kernels overlap")
    ap.add_argument("--gap-ns", type=int, default=2000, help="idle gap between launches on a stream")
    ap.add_argument("--memcpy", type=int, default=10, help="memcpy rows (HtoD/DtoH/DtoD, 4 sizes)")
    ap.add_argument("--memset", type=int, default=4, help="memset rows")
    ap.add_argument("--nvtx", type=int, default=5, help="NVTX ranges ('forward')")
    ap.add_argument("--power", type=int, default=0, help="power samples per device (100 ms apart)")
    ap.add_argument("--api", type=int, default=0, help="API-call rows (as with kjoule run --api)")
    ap.add_argument("--modules", type=int, default=0, help="modules (small fake cubins)")
    ap.add_argument("--params", action="store_true", help="one launch_params row per unique kernel")
    ap.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    ap.add_argument("--end-status", default="exited",
                    help="meta end_status: exited, signaled, killed, or 'none' to leave the end unrecorded")
    ap.add_argument("--exit-code", type=int, default=0, help="meta exit_code (default 0)")
    ap.add_argument("--schema-version", type=int, help="write this user_version instead of the real one")
    ap.add_argument("--problem", action="append", default=[], help="add a problem row (severity:text)")
    args = ap.parse_args(argv)

    if os.path.exists(args.output):
        if not args.force:
            ap.error("%s exists (use --force)" % args.output)
        os.unlink(args.output)
    tmp = args.output + ".tmp"
    if os.path.exists(tmp):
        os.unlink(tmp)
    db = create(tmp, args.src, args.schema_version)
    extra = {}
    if args.spec:
        spec = json.load(open(args.spec))
        ndev, end_ns = gen_spec(db, spec)
        extra = spec.get("meta", {})
    else:
        ndev, end_ns = gen_random(db, args)
    for p in args.problem:
        sev, _, what = p.partition(":")
        db.execute("INSERT INTO problem(pid, severity, what) VALUES(4242, ?, ?)", (sev, what))
    base_rows(db, args, ndev, end_ns)
    write_meta(db, meta(db, args, extra), end_ns)
    db.execute("COMMIT")
    db.close()
    os.rename(tmp, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
