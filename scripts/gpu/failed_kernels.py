#!/usr/bin/env python3
"""Why did these kernels fail to replay? For each unique kernel whose warm replay failed: its
name, process, geometry, shared memory, parameter layout, and each 8-byte parameter word with the
traced allocation that holds it (or none), at the launch replay used (the first launch_params row).
usage: failed_kernels.py RUN.kjdb [UNIQUE_ID...]
"""
import sqlite3
import struct
import sys


def main():
    db = sqlite3.connect(sys.argv[1])
    ids = [int(x) for x in sys.argv[2:]] or [r[0] for r in db.execute(
        "SELECT unique_id FROM replay_kernel WHERE cache = 'warm' AND status NOT IN ('ok', 'relocated')")]
    for uid in ids:
        u = db.execute("SELECT n.demangled, u.grid_x, u.grid_y, u.grid_z, u.block_x, u.block_y, u.block_z,"
                       " u.cluster_x, u.shmem_dynamic, u.shmem_static, u.registers, u.param_bytes, u.launches,"
                       " u.keyed_by FROM unique_kernel u JOIN kernel_name n ON n.id = u.name_id WHERE u.id = ?",
                       (uid,)).fetchone()
        err = db.execute("SELECT status, error FROM replay_kernel WHERE unique_id = ? AND cache = 'warm'",
                         (uid,)).fetchone()
        pids = db.execute("SELECT pid, count(*), min(start_ns), max(end_ns) FROM kernel WHERE unique_id = ?"
                          " GROUP BY pid", (uid,)).fetchall()
        print(f"== unique {uid}: {u[0][:80] if u else '?'}")
        print(f"   grid {u[1:4]} block {u[4:7]} cluster {u[7]} smem dyn {u[8]} static {u[9]} regs {u[10]}"
              f" param_bytes {u[11]} launches {u[12]} keyed_by {u[13]}")
        print(f"   replay: {err}")
        print(f"   pids (pid, kernels, first, last): {pids}")
        p = db.execute("SELECT pid, layout, params, launch_ns, handle_kind FROM launch_params WHERE unique_id = ?"
                       " ORDER BY id LIMIT 1", (uid,)).fetchone()
        if not p:
            print("   no launch_params")
            continue
        pid, layout, params, t, kind = p
        print(f"   launch_params: pid {pid} handle {kind} layout {layout} ({len(params or b'')} bytes)")
        for part in (layout or "").split(","):
            if not part:
                continue
            off, size = (int(x) for x in part.split(":"))
            for w in range(off, off + size - 7, 8):
                v = struct.unpack_from("<Q", params, w)[0]
                if v < 1 << 32:
                    continue
                a = db.execute("SELECT id, address, bytes, kind, alloc_ns, free_ns FROM allocation"
                               " WHERE pid = ? AND address <= ? AND ? < address + bytes"
                               " AND (alloc_ns IS NULL OR alloc_ns <= ?) ORDER BY alloc_ns DESC LIMIT 1",
                               (pid, v, v, t)).fetchone()
                anyp = None if a else db.execute(
                    "SELECT pid, id, address, bytes, kind FROM allocation WHERE address <= ? AND ? < address + bytes"
                    " LIMIT 1", (v, v)).fetchone()
                print(f"     +{w:4d} (param {off}:{size}) 0x{v:x} -> {a if a else 'no allocation of this pid'}"
                      f"{'' if a else f'; any pid: {anyp}'}")


if __name__ == "__main__":
    main()
