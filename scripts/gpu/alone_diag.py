#!/usr/bin/env python3
"""Kernels whose warm replay is more than 2x off their traced mean: name, geometry, keyed_by, the
traced mean, warm/cold/sequence medians, how many parameter captures the unique kernel has and how
many distinct parameter blocks they hold, and the replay's note. Diagnosis only.
usage: alone_diag.py RUN.kjdb
"""
import sqlite3
import sys


def main():
    db = sqlite3.connect(sys.argv[1])
    rows = db.execute(
        "SELECT u.id, n.demangled, u.grid_x, u.grid_y, u.block_x, u.cluster_x, u.shmem_dynamic, u.param_bytes,"
        " u.keyed_by, (SELECT avg(end_ns - start_ns) FROM kernel k WHERE k.unique_id = u.id),"
        " (SELECT count(*) FROM kernel k WHERE k.unique_id = u.id),"
        " (SELECT median_ns FROM replay_kernel r WHERE r.unique_id = u.id AND r.cache = 'warm'),"
        " (SELECT median_ns FROM replay_kernel r WHERE r.unique_id = u.id AND r.cache = 'cold'),"
        " (SELECT median_ns FROM replay_kernel r WHERE r.unique_id = u.id AND r.cache = 'sequence'),"
        " (SELECT status || ' ' || coalesce(error, '') FROM replay_kernel r WHERE r.unique_id = u.id AND r.cache = 'warm'),"
        " (SELECT count(*) FROM launch_params p WHERE p.unique_id = u.id),"
        " (SELECT count(DISTINCT params) FROM launch_params p WHERE p.unique_id = u.id),"
        " (SELECT count(*) FROM kernel k WHERE k.unique_id = u.id AND k.graph_node_id IS NOT NULL)"
        " FROM unique_kernel u JOIN kernel_name n ON n.id = u.name_id").fetchall()
    n = 0
    for r in rows:
        uid, name, gx, gy, bx, cx, smem, pb, keyed, traced, launches, warm, cold, seq, note, np_, nd, ingraph = r
        if not traced or not warm or 0.5 <= warm / traced <= 2:
            continue
        n += 1
        print(f"== {uid} {name[:90]}")
        print(f"   grid {gx}x{gy} block {bx} cluster {cx} smem {smem} param_bytes {pb} keyed_by {keyed}")
        print(f"   launches {launches} (in graphs {ingraph}); traced mean {traced / 1e3:.2f} us; warm {warm / 1e3:.2f}"
              f" cold {cold / 1e3 if cold else float('nan'):.2f} seq {seq / 1e3 if seq else float('nan'):.2f} us")
        print(f"   params captured {np_}, distinct {nd}; replay: {note[:200] if note else ''}")
    print(f"{n} kernel(s) more than 2x off")


if __name__ == "__main__":
    main()
