#!/usr/bin/env python3
"""Write a synthetic trace spool file (the injection library's format, src/trace/kj_spool.h) of N
launches of F kernels, each with a pointer word that changes between launches, a size word with two
values and a stack-junk word, the matching kernel activity records, an allocation and one NVTX
range per iteration. For `kjoule ingest` tests and the ingest speed benchmark.

  mkspool.py DIR [--launches N] [--functions F] [--per-iter K] [--truncate BYTES] [--mixed-registers]
             [--copies]
  mkspool.py DIR --graph [--functions F] [--iters I] [--full-graph [--host-node]]
             [--nested L | --no-capture-ranges] [--eager]

--mixed-registers: function 0's kernel records alternate between 32 and 40 registers (two
functions of one name and geometry in one launch group, as an older tracer grouped them).
--copies: each iteration starts with three copies, as a decode loop feeds its step: 8 bytes from
the host holding the iteration's number (its data recorded with the call) to COPY_DST, 4096 bytes
from there to COPY_DST + 0x1000 on the device, and 1 MiB from the host whose data was not kept.
--graph: a graph-launched program instead. F kernels captured from a stream into a graph plus one
kernel node added node by node; each of I iterations is an NVTX range "forward" holding one graph
launch, and the graph's kernels run after the range has closed. Two XLA-like ranges
("XlaModule:..." in domain TSL, on another thread) enclose each graph launch, so only the
framework-range rule keeps them from being taken as the iteration.
--full-graph: every node of the graph is recorded at instantiation, fork-join shaped (the first
captured kernel, then the middle ones side by side, then the last), then an empty node, then the
node-by-node kernel; --host-node adds a host node after it (a kind replay cannot rebuild).
--graph-memset[=clone|child|xla]: a 4-byte memset node captured between the first two kernels (as
cuDNN resets a tile counter), read at instantiation with its destination; each graph launch runs it
there. clone: the exec's node leads back by a clone record; child: it does not (as for nodes of
child graphs), and an 8-byte memset node stands beside it; xla: as child, and the node is read
again from two clones of it (same destination, other ids), as XLA's command buffers show.
--while-body T: each graph launch also runs a WHILE node's body kernel (node 7000) T times, after the
graph's kernels (--while-at end) or before them (--while-at start); as CUPTI reports kernels of
conditional bodies, their records carry correlation 0. --while-only: the graph's own kernels leave
no records (a graph that is one WHILE node: nothing of the launch is correlated). --queued: each launch's GPU work runs after
the next launch's host call (the host runs ahead), so only the GPU's waits tell launches apart.
--nested L: the capture-time ranges are model > layer0..layer{L-1} > attn/mlp (capture_chain);
--no-capture-ranges: none; --eager: each iteration also launches one eager kernel inside "head".
"""
import argparse
import os
import struct

MAGIC = 0x6C6F6F70736A6B
(FILE, PROCESS, STRING, KERNEL, MEMCPY, MEMSET, MEMORY, MARKER, API, LAUNCH, GROUP, MODULE, DEVICE,
 CLOCK, PROBLEM, GRAPHNODE, END, DROPPED, SEQOP, SNAPSHOT, MEMSET_DST, ISSUE, GRAPH_NODE,
 GRAPH_MEMSET, COPY_ARGS) = range(1, 26)
HTOD, DTOH, DTOD = 1, 2, 3  # kj_copy_direction
COPY_DST = 0x7F0000200000  # --copies: where the iteration's number goes
MEMSET_NODE, MEMSET_CLONE = 1500, 5500  # --graph-memset: the memset node and its clone in the exec


def kernel(t0, t1, corr, name_id, node=0, graph=0):
    k = struct.pack("<qqQIIIIII", t0, t1, node, 0, 1, 7, corr, name_id, graph)
    return rec(KERNEL, k + struct.pack("<3i3i3IiiI", 64, 1, 1, 256, 1, 1, 0, 0, 0, 0, 0, 32))


def group_and_launch(group, t, corr, name_id, ptr, size):
    layout = struct.pack("<IIIIII", 0, 8, 8, 8, 16, 8)
    blob = struct.pack("<QQQ", ptr, size, 0)
    head = struct.pack("<QqII", group, t, corr, name_id) + struct.pack("<9I", 64, 1, 1, 256, 1, 1, 0, 0, 0)
    head += struct.pack("<IIIIIII", 0, 7, 2, 3, len(blob), 0, 0)
    return [rec(GROUP, head + layout + blob), rec(LAUNCH, struct.pack("<QqIIII", group, t, corr, 7, 7, 0))]


def issue(t0, t1, corr, op, tid=7, graph=1, exec_id=1):
    return rec(ISSUE, struct.pack("<qqIIIIIIII", t0, t1, corr, tid, op, 0, graph, exec_id, 514, 0))


def copy(t, corr, direction, dst, src, nbytes, data=b""):
    """A copy call (its issue and argument records) and its memcpy activity record."""
    kinds = {HTOD: (1, 1, 3), DTOH: (2, 3, 1), DTOD: (8, 3, 3)}[direction]
    args = struct.pack("<QQQIIII", dst, src, nbytes, corr, direction, len(data), 0) + data
    act = struct.pack("<qqQQIIIIBBBBI", t + 100, t + 900, nbytes, 0, 0, 1, 7, corr, *kinds, 0, 0)
    return [issue(t, t + 50, corr, 4, graph=0, exec_id=0), rec(COPY_ARGS, args), rec(MEMCPY, act)]


def marker(t, mid, flags, name_id=0, domain_id=0, tid=7):
    return rec(MARKER, struct.pack("<qIIIIII", t, mid, flags, name_id, domain_id, tid, 0))


def capture_chain(a, k):
    """The NVTX ranges (outermost first) open when captured kernel k is launched into the graph.
    Default: "capture" > "attn" (even k) or "mlp" (odd k), a new attn/mlp range per kernel.
    --nested L: kernel 0 inside "model" only; kernels 1..F-1 split evenly over "layer0".."layer{L-1}"
    inside "model" (the last takes the remainder), the first half of each layer's kernels (rounded
    up) inside one "attn", the rest inside one "mlp". --no-capture-ranges: none."""
    if a.no_capture_ranges:
        return []
    if not a.nested:
        return ["capture", "attn" if k % 2 == 0 else "mlp"]
    if k == 0:
        return ["model"]
    per = (a.functions - 1) // a.nested
    layer = min((k - 1) // per, a.nested - 1)
    count = per if layer < a.nested - 1 else a.functions - 1 - per * (a.nested - 1)
    pos = k - 1 - layer * per
    return ["model", f"layer{layer}", "attn" if pos < (count + 1) // 2 else "mlp"]


def graph_program(a, out, base):
    """Records of a graph-launched program (see --graph)."""
    f = a.functions
    names = [f"_Z9kj_kernel{i}Pfi" for i in range(f + 1)] + ["_Z9while_bodyPf"]
    for i, n in enumerate(names):
        b = n.encode()
        out.append(rec(STRING, struct.pack("<II", i + 1, len(b)) + b))
    sid = len(names) + 1
    fwd, xla, tsl, cap, attn, mlp = sid, sid + 1, sid + 2, sid + 3, sid + 4, sid + 5
    for i, text in ((fwd, b"forward"), (xla, b"XlaModule:#hlo_module=step#"), (tsl, b"TSL"),
                    (cap, b"capture"), (attn, b"attn"), (mlp, b"mlp")):
        out.append(rec(STRING, struct.pack("<II", i, len(text)) + text))
    ids = {"capture": cap, "attn": attn, "mlp": mlp}
    if a.eager:
        ids["head"] = sid + 6
        out.append(rec(STRING, struct.pack("<II", sid + 6, 4) + b"head"))
    for k in range(f):
        for n in capture_chain(a, k):
            if n not in ids:
                ids[n] = sid + 7 + len(ids)
                out.append(rec(STRING, struct.pack("<II", ids[n], len(n)) + n.encode()))
    t, corr = 500, 1
    stack = []  # open capture-time ranges: (name, marker id)
    for k in range(f):  # stream capture: launches that make nodes and run nothing, each inside the
        # ranges capture_chain names, which fire at capture time only
        chain = capture_chain(a, k)
        # ranges already open stay open (one instance); the default's attn/mlp opens anew per kernel
        same = len(chain) if a.nested else len(chain) - 1
        keep = 0
        while keep < min(len(stack), same) and stack[keep][0] == chain[keep]:
            keep += 1
        while len(stack) > keep:
            out.append(marker(t - 3, stack.pop()[1], 4))
        for n in chain[keep:]:
            stack.append((n, 50000 + 100 * len(stack) + k))
            out.append(marker(t - 2, stack[-1][1], 2, ids[n]))
        out.extend(group_and_launch(0x1000 + k, t, corr, k + 1, base + k * 4096, 7))
        out.append(rec(GRAPHNODE, struct.pack("<QQQ", 1000 + k, corr, 0)))
        t += 10
        corr += 1
    while stack:
        out.append(marker(t, stack.pop()[1], 4))
    if a.graph_memset:  # captured memset: its node's destination, read at instantiation
        out.append(rec(GRAPH_MEMSET, struct.pack("<QQQQQII", MEMSET_NODE, base + 0x300000, 1, 1, 4, 0, 4)))
        if a.graph_memset == "clone":  # child: no clone record leads back (a child graph's node)
            out.append(rec(GRAPHNODE, struct.pack("<QQQ", MEMSET_CLONE, 0, MEMSET_NODE)))
        else:  # and one node of another shape, which must not be taken for it
            out.append(rec(GRAPH_MEMSET, struct.pack("<QQQQQII", MEMSET_NODE + 1, base + 0x400000, 2, 1, 8, 0, 4)))
        if a.graph_memset == "xla":  # the same node read again from two clones the exec's node is not
            for nid in (MEMSET_NODE + 7000, MEMSET_NODE + 8000):
                out.append(rec(GRAPH_MEMSET, struct.pack("<QQQQQII", nid, base + 0x300000, 1, 1, 4, 0, 4)))
    node_corr = 0xC0000000  # a kernel node added node by node, read at instantiation
    if a.full_graph:
        def gnode(nid, typ, deps, corr=0):
            out.append(rec(GRAPH_NODE, struct.pack("<QQIIII", nid, 0, 1, typ, corr, len(deps))
                           + b"".join(struct.pack("<Q", d) for d in deps)))
        mid = [1000 + k for k in range(1, f - 1)]
        gnode(1000, 0, [])
        for m in mid:
            gnode(m, 0, [1000])
        gnode(1000 + f - 1, 0, mid or [1000])
        gnode(4000, 5, [1000 + f - 1])  # an empty node: a dependency only
        gnode(2000, 0, [4000], node_corr)
        if a.host_node:
            gnode(3000, 3, [2000])
    else:
        out.append(rec(GRAPH_NODE, struct.pack("<QQIIII", 2000, 0, 1, 0, node_corr, 1) + struct.pack("<Q", 1000)))
    out.extend(group_and_launch(0x2000, t, node_corr, f + 1, base + 0x100000, 9))
    out.append(rec(GRAPHNODE, struct.pack("<QQQ", 2000, node_corr, 0)))
    out.append(issue(t, t + 50, corr, 2))  # cuGraphInstantiate
    corr += 1
    for k in range(f):
        out.append(rec(GRAPHNODE, struct.pack("<QQQ", 5000 + k, 0, 1000 + k)))
    out.append(rec(GRAPHNODE, struct.pack("<QQQ", 6000, 0, 2000)))
    t = 100000
    for i in range(a.iters):
        out.append(marker(t, 2 * i + 1, 2, fwd))
        for j in range(2):  # framework ranges around the launch, on another thread
            out.append(marker(t + 1 + j, 1000 + 2 * i + j, 2, xla, tsl, tid=8))
        out.append(issue(t + 10, t + 30, corr, 1))  # cuGraphLaunch
        for j in range(2):
            out.append(marker(t + 40 + j, 1000 + 2 * i + j, 4, tid=8))
        if a.eager:  # an eager kernel after the graph launch, inside the range "head"
            out.append(marker(t + 31, 2 * i + 2, 2, ids["head"]))
            gl = group_and_launch(0x3000, t + 32, corr + 1, 1, base + 0x200000, 5)
            out.extend(gl if i == 0 else gl[1:])
            out.append(kernel(t + 400000, t + 402000, corr + 1, 1))
            out.append(marker(t + 35, 2 * i + 2, 4))
        out.append(marker(t + 50, 2 * i + 1, 4))
        g0 = t + (1200000 if a.queued else 200000)  # the graph runs long after its range closed
        if a.while_body and a.while_at == "start":
            for j in range(a.while_body):
                out.append(kernel(g0 + j * 1500, g0 + j * 1500 + 1000, 0, f + 2, 7000, 1))
            g0 += a.while_body * 1500
        for k in range(0 if a.while_only else f):
            out.append(kernel(g0 + k * 3000, g0 + k * 3000 + 2000, corr, k + 1, 5000 + k, 1))
            if a.graph_memset and k == 0:  # between kernel 0 and kernel 1, on their stream
                out.append(rec(MEMSET, struct.pack("<qqQQIIIIBBBBI", g0 + 2200, g0 + 2600, 4, MEMSET_CLONE,
                                                   0, 1, 7, corr, 0, 0, 3, 1, 0)))
        if not a.while_only:
            out.append(kernel(g0 + f * 3000, g0 + f * 3000 + 2000, corr, f + 1, 6000, 1))
        if a.while_body and a.while_at == "end":
            for j in range(a.while_body):
                out.append(kernel(g0 + f * 3000 + 3000 + j * 1500, g0 + f * 3000 + 4000 + j * 1500, 0, f + 2, 7000, 1))
        corr += 2 if a.eager else 1
        t += 1000000
    out.append(rec(END, struct.pack("<qII", t, 0, 0)))


def rec(t, body):
    size = 8 + len(body)
    pad = (-size) % 8
    return struct.pack("<II", t, size + pad) + body + b"\0" * pad


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--launches", type=int, default=1000)
    ap.add_argument("--functions", type=int, default=40)
    ap.add_argument("--per-iter", type=int, default=600)
    ap.add_argument("--pid", type=int, default=4242)
    ap.add_argument("--truncate", type=int, default=0, help="cut this many bytes off the end")
    ap.add_argument("--mixed-registers", action="store_true", help="function 0 alternates 32/40 registers")
    ap.add_argument("--copies", action="store_true", help="three copies start each iteration (see above)")
    ap.add_argument("--modules", action="store_true",
                    help="each function from a module of its own (module id 100 + function), as the tracer"
                         " names them when it saw the load; function 1 shares function 0's name")
    ap.add_argument("--graph", action="store_true", help="a graph-launched program (see above)")
    ap.add_argument("--iters", type=int, default=6, help="--graph: iterations")
    ap.add_argument("--full-graph", action="store_true", help="--graph: record every node (see above)")
    ap.add_argument("--host-node", action="store_true", help="--full-graph: and a host node")
    ap.add_argument("--nested", type=int, default=0, metavar="L",
                    help="--graph: capture inside model > layer0..layer{L-1} > attn/mlp (see capture_chain)")
    ap.add_argument("--no-capture-ranges", action="store_true", help="--graph: no NVTX range open at capture")
    ap.add_argument("--graph-memset", nargs="?", const="clone", choices=["clone", "child", "xla"],
                    help="--graph: a memset node between the first two kernels (see above)")
    ap.add_argument("--while-body", type=int, default=0, metavar="T", help="--graph: a WHILE body kernel T times a launch")
    ap.add_argument("--while-at", choices=["start", "end"], default="end", help="--while-body: before or after the graph's kernels")
    ap.add_argument("--while-only", action="store_true", help="--while-body: the graph's own kernels leave no records")
    ap.add_argument("--queued", action="store_true", help="--graph: each launch's work runs after the next launch's call")
    ap.add_argument("--eager", action="store_true",
                    help="--graph: each iteration also launches one eager kernel inside a range 'head'")
    a = ap.parse_args()
    if a.nested and a.functions - 1 < 2 * a.nested:
        ap.error("--nested L needs --functions of at least 2L + 1")
    os.makedirs(a.dir, exist_ok=True)
    base = 0x7F0000000000
    # spool version 2, kept for the older files' sake: launches carry the words that differ from
    # their group's block, and the field version 3 reads as a whole block's length held a stream (7)
    out = [rec(FILE, struct.pack("<QII", MAGIC, 2, 0))]
    text = b"/usr/bin/python3\0python3\0infer.py\0"
    out.append(rec(PROCESS, struct.pack("<qqqqII", a.pid, 1, 0, 0, len(text), 0) + text))
    if a.graph:
        dev = struct.pack("<IIIIQIIII", 0, 9, 0, 132, 80 << 30, 50 << 20, 1980000, 2619000, 13000)
        dev += bytes([0xAB] + [0] * 15) + b"NVIDIA H200".ljust(128, b"\0") + b"0000:00:00.0".ljust(32, b"\0")
        out.append(rec(DEVICE, dev))
        out.append(rec(MEMORY, struct.pack("<qQQIIIBBBB", 1, base, 1 << 34, 0, 0, 0, 1, 3, 0, 0)))
        graph_program(a, out, base)
        with open(os.path.join(a.dir, f"p{a.pid}.spool"), "wb") as fh:
            fh.write(b"".join(out))
        return
    names = [f"_Z9kj_kernel{i}Pfi" for i in range(a.functions)]
    if a.modules:  # two modules, one function name: what only the module tells apart
        names[1] = names[0]
    for i, n in enumerate(names):
        b = n.encode()
        out.append(rec(STRING, struct.pack("<II", i + 1, len(b)) + b))
    fwd = a.functions + 1
    out.append(rec(STRING, struct.pack("<II", fwd, 7) + b"forward"))
    dev = struct.pack("<IIIIQIIII", 0, 9, 0, 132, 80 << 30, 50 << 20, 1980000, 2619000, 13000)
    dev += bytes([0xAB] + [0] * 15) + b"NVIDIA H200".ljust(128, b"\0") + b"0000:00:00.0".ljust(32, b"\0")
    out.append(rec(DEVICE, dev))
    out.append(rec(MEMORY, struct.pack("<qQQIIIBBBB", 1, base, 1 << 34, 0, 0, 0, 1, 3, 0, 0)))
    t = 1000
    corr = 1
    for i in range(a.launches):
        f = i % a.functions
        if i % a.per_iter == 0:
            if i:
                out.append(rec(MARKER, struct.pack("<qIIIIII", t - 2, i // a.per_iter, 4, 0, 0, 7, 0)))
            out.append(rec(MARKER, struct.pack("<qIIIIII", t - 1, i // a.per_iter + 1, 2, fwd, 0, 7, 0)))
            if a.copies:
                n = i // a.per_iter
                out.extend(copy(t, corr, HTOD, COPY_DST, 0, 8, struct.pack("<Q", n)))
                out.extend(copy(t + 1000, corr + 1, DTOD, COPY_DST + 0x1000, COPY_DST, 4096))
                out.extend(copy(t + 2000, corr + 2, HTOD, COPY_DST + 0x100000, 0, 1 << 20))
                t += 3000
                corr += 3
        group = 0x1000 + f
        ptr, size, junk = base + (i % 97) * 4096, 5 if (i // a.functions) % 2 else 7, 0x7FFD00000000 + i
        if i < a.functions:  # first launch of each function: the group and its reference block
            layout = struct.pack("<IIIIII", 0, 8, 8, 8, 16, 8)
            blob = struct.pack("<QQQ", ptr, size, junk)
            head = struct.pack("<QqII", group, t, corr, f + 1) + struct.pack("<9I", 64, 1, 1, 256, 1, 1, 0, 0, 0)
            # handle kind 2 (a CUkernel, as CUDA 13's runtime passes); 1 (a CUfunction) with --modules
            head += struct.pack("<IIIIIII", 0, 7, 1 if a.modules else 2, 3, len(blob), 100 + f if a.modules else 0, 0)
            if a.modules:  # the module's image (an ELF header, then its number), loaded just before
                image = b"\x7fELF" + struct.pack("<I", f) * 15
                out.append(rec(MODULE, struct.pack("<qQII", t - 10, len(image), 100 + f, 0) + image))
            out.append(rec(GROUP, head + layout + blob))
            diffs = b""
            nd = 0
        else:
            diffs = struct.pack("<IIQ", 0, 0, ptr) + struct.pack("<IIQ", 1, 0, size) + struct.pack("<IIQ", 2, 0, junk)
            nd = 3
        out.append(rec(LAUNCH, struct.pack("<QqIIII", group, t, corr, 7, 7, nd) + diffs))
        k = struct.pack("<qqQIIIIII", t + 5000, t + 8000, 0, 0, 1, 7, corr, f + 1, 0)
        regs = 40 if a.mixed_registers and f == 0 and (i // a.functions) % 3 == 0 else 32
        k += struct.pack("<3i3i3IiiI", 64, 1, 1, 256, 1, 1, 0, 0, 0, 0, 0, regs)
        out.append(rec(KERNEL, k))
        t += 16000
        corr += 1
    out.append(rec(MARKER, struct.pack("<qIIIIII", t, (a.launches - 1) // a.per_iter + 1, 4, 0, 0, 7, 0)))
    out.append(rec(END, struct.pack("<qII", t, 0, 0)))
    data = b"".join(out)
    if a.truncate:
        data = data[:-a.truncate]
    with open(os.path.join(a.dir, f"p{a.pid}.spool"), "wb") as fh:
        fh.write(data)


if __name__ == "__main__":
    main()
