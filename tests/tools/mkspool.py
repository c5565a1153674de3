#!/usr/bin/env python3
"""Write a synthetic trace spool file (the injection library's format, src/trace/kj_spool.h) of N
launches of F kernels, each with a pointer word that changes between launches, a size word with two
values and a stack-junk word, the matching kernel activity records, an allocation and one NVTX
range per iteration. For `kjoule ingest` tests and the ingest speed benchmark.

  mkspool.py DIR [--launches N] [--functions F] [--per-iter K] [--truncate BYTES]
"""
import argparse
import os
import struct

MAGIC = 0x6C6F6F70736A6B
(FILE, PROCESS, STRING, KERNEL, MEMCPY, MEMSET, MEMORY, MARKER, API, LAUNCH, GROUP, MODULE, DEVICE,
 CLOCK, PROBLEM, GRAPHNODE, END) = range(1, 18)


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
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    base = 0x7F0000000000
    out = [rec(FILE, struct.pack("<QII", MAGIC, 2, 0))]
    text = b"/usr/bin/python3\0python3\0infer.py\0"
    out.append(rec(PROCESS, struct.pack("<qqqqII", a.pid, 1, 0, 0, len(text), 0) + text))
    names = [f"_Z9kj_kernel{i}Pfi" for i in range(a.functions)]
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
        group = 0x1000 + f
        ptr, size, junk = base + (i % 97) * 4096, 5 if (i // a.functions) % 2 else 7, 0x7FFD00000000 + i
        if i < a.functions:  # first launch of each function: the group and its reference block
            layout = struct.pack("<IIIIII", 0, 8, 8, 8, 16, 8)
            blob = struct.pack("<QQQ", ptr, size, junk)
            head = struct.pack("<QqII", group, t, corr, f + 1) + struct.pack("<9I", 64, 1, 1, 256, 1, 1, 0, 0, 0)
            head += struct.pack("<IIIIIII", 0, 7, 2, 3, len(blob), 0, 0)
            out.append(rec(GROUP, head + layout + blob))
            diffs = b""
            nd = 0
        else:
            diffs = struct.pack("<IIQ", 0, 0, ptr) + struct.pack("<IIQ", 1, 0, size) + struct.pack("<IIQ", 2, 0, junk)
            nd = 3
        out.append(rec(LAUNCH, struct.pack("<QqIIII", group, t, corr, 7, 7, nd) + diffs))
        k = struct.pack("<qqQIIIIII", t + 5000, t + 8000, 0, 0, 1, 7, corr, f + 1, 0)
        k += struct.pack("<3i3i3IiiI", 64, 1, 1, 256, 1, 1, 0, 0, 0, 0, 0, 32)
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
