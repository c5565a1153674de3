#!/usr/bin/env python3
"""Compare a run database with what trace_target says it did (expected.json)."""
import json
import sqlite3
import sys

db = sqlite3.connect(sys.argv[1])
exp = json.load(open(sys.argv[2]))
fail = []


def check(what, got, want):
    ok = got == want
    print(f"{'ok  ' if ok else 'FAIL'} {what}: got {got}, want {want}")
    if not ok:
        fail.append(what)


def q(sql, *args):
    return db.execute(sql, args).fetchall()


def kernels_named(fragment):
    return q("SELECT k.* FROM kernel k JOIN kernel_name n ON n.id = k.name_id WHERE n.mangled LIKE ?",
             f"%{fragment}%")

# kernel names are mangled: kj_scale -> _Z8kj_scalePKfPfif, and kj_cluster_ex contains kj_cluster
names = {r[0]: r[1] for r in q("SELECT mangled, demangled FROM kernel_name")}
def count(name):
    return q("SELECT count(*) FROM kernel k JOIN kernel_name n ON n.id = k.name_id"
             " WHERE n.demangled LIKE ?", f"{name}(%")[0][0]

for name, n in exp["kernels"].items():
    graph = exp["graph_kernels"] if name == "kj_scale" else 0
    check(f"launches of {name}", count(name), n + graph)
check("graph kernels carry a graph node id",
      q("SELECT count(*) FROM kernel WHERE graph_node_id IS NOT NULL")[0][0], exp["graph_kernels"])
for name, n in exp["unique"].items():
    got = q("SELECT count(*) FROM unique_kernel u JOIN kernel_name n ON n.id = u.name_id"
            " WHERE n.demangled LIKE ?", f"{name}(%")[0][0]
    check(f"unique kernels of {name}", got, n)
check("every kernel has a unique kernel", q("SELECT count(*) FROM kernel WHERE unique_id IS NULL")[0][0], 0)
check("kernels keyed by parameters (graph kernels included)",
      q("SELECT count(*) FROM unique_kernel WHERE keyed_by <> 'params'")[0][0], 0)
for name, g in exp["grid"].items():
    got = sorted({r[0] for r in q("SELECT k.grid_x FROM kernel k JOIN kernel_name n ON n.id = k.name_id"
                                  " WHERE n.demangled LIKE ?", f"{name}(%")})
    check(f"grid of {name} includes {g}", g in got, True)
for name, c in exp["cluster"].items():
    got = {r[0] for r in q("SELECT k.cluster_x FROM kernel k JOIN kernel_name n ON n.id = k.name_id"
                           " WHERE n.demangled LIKE ?", f"{name}(%")}
    check(f"cluster of {name}", got, {c})
for kind, n in exp["memcpy"].items():
    check(f"memcpy {kind}", q("SELECT count(*) FROM memcpy WHERE kind = ?", kind)[0][0], n)
check("memcpy bytes", {r[0] for r in q("SELECT bytes FROM memcpy")}, {exp["bytes"]})
check("pinned source of an async HtoD", q("SELECT count(*) FROM memcpy WHERE kind='HtoD' AND src_kind='pinned'")[0][0], 1)
check("memset", q("SELECT count(*) FROM memset")[0][0], exp["memset"])
for name, n in exp["nvtx"].items():
    check(f"NVTX {name}", q("SELECT count(*) FROM nvtx_range WHERE name = ? AND end_ns IS NOT NULL", name)[0][0], n)
check("NVTX nesting: scale inside iteration",
      q("SELECT count(*) FROM nvtx_range c JOIN nvtx_range p ON p.id = c.parent_id"
        " WHERE c.name='scale' AND p.name='iteration' AND c.depth = 1")[0][0], 3)
check("kernels inside their NVTX range",
      q("SELECT count(*) FROM kernel k JOIN kernel_name n ON n.id=k.name_id, nvtx_range r"
        " WHERE r.name='scale' AND n.demangled LIKE 'kj_scale(%' AND k.launch_ns BETWEEN r.start_ns AND r.end_ns")[0][0], 6)
check("kernel streams used", len({r[0] for r in q("SELECT DISTINCT stream_id FROM kernel")}) >= exp["streams"], True)
check("ordering: end >= start", q("SELECT count(*) FROM kernel WHERE end_ns < start_ns")[0][0], 0)
check("launch precedes kernel", q("SELECT count(*) FROM kernel WHERE launch_ns IS NOT NULL AND launch_ns > start_ns")[0][0], 0)
check("pool allocation recorded", q("SELECT count(*) FROM allocation WHERE kind = 'pool'")[0][0] >= exp["pool_allocs"], True)
check("device allocations of 4 MiB", q("SELECT count(*) FROM allocation WHERE bytes = ?", exp["bytes"])[0][0] >= 2, True)
check("parameters captured for each unique kernel",
      q("SELECT count(*) FROM unique_kernel u WHERE NOT EXISTS (SELECT 1 FROM launch_params p WHERE p.unique_id = u.id)")[0][0], 0)
check("struct parameter is 24 bytes", q("SELECT p.layout FROM launch_params p JOIN unique_kernel u ON u.id=p.unique_id"
      " JOIN kernel_name n ON n.id=u.name_id WHERE n.demangled LIKE 'kj_struct_arg(%'")[0][0], "0:24")
check("modules stored", q("SELECT count(*) FROM module")[0][0] >= 1, True)
check("module defines kj_scale", q("SELECT count(*) FROM module_function WHERE mangled LIKE '%kj_scale%'")[0][0] >= 1, True)
check("device recorded", q("SELECT count(*) FROM device WHERE cc_major = 9 AND sm_count > 0")[0][0], 1)
check("process ended cleanly", q("SELECT ended_cleanly FROM process")[0][0], 1)
check("power samples", q("SELECT count(*) FROM power_sample")[0][0] > 0, True)
check("no problems", [r[0] for r in q("SELECT what FROM problem WHERE severity='error'")], [])
if fail:
    print(f"{len(fail)} checks failed")
    sys.exit(1)
print("all checks passed")
