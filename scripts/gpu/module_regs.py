#!/usr/bin/env python3
"""Diagnostics for a run database: each unique kernel's traced registers against the registers
cuobjdump gives the functions of that name in the run's captured modules.

usage: module_regs.py RUN.kjdb [--name SUBSTRING] [--dump DIR] [--slim OUT.kjdb]
  --name   only kernels whose mangled name contains SUBSTRING
  --dump   also write the matching modules' cubins there, with `cuobjdump -elf` of each
  --slim   a copy of the run keeping only the module images that define the matching kernels
Needs libzstd; cuobjdump (CUDA toolkit) for --dump.
"""
import argparse
import ctypes
import ctypes.util
import os
import re
import shutil
import struct
import sqlite3
import subprocess
import tempfile

CUOBJDUMP = shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump"
_zstd = ctypes.CDLL(ctypes.util.find_library("zstd") or "libzstd.so.1")
_zstd.ZSTD_decompress.restype = ctypes.c_size_t
_zstd.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]
_zstd.ZSTD_isError.argtypes = [ctypes.c_size_t]


def image(codec, data, nbytes):
    if codec != "zstd":
        return bytes(data)
    out = ctypes.create_string_buffer(nbytes)
    n = _zstd.ZSTD_decompress(out, nbytes, bytes(data), len(data))
    if _zstd.ZSTD_isError(n):
        raise RuntimeError("zstd error")
    return out.raw[:n]


def res_usage(path):
    """{function: registers} of one cubin, from the global .nv.info's REGCOUNT entries
    ({format 4, attribute 0x2f, size, symbol u32, registers u32}), as kj_cubin_function_facts."""
    with open(path, "rb") as f:
        b = f.read()
    if b[:4] != b"\x7fELF" or b[4] != 2:
        return {}
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3A)
    # name, type, flags, addr, offset, size, link, info, align, entsize
    secs = [struct.unpack_from("<IIQQQQIIQQ", b, shoff + i * shentsize) for i in range(shnum)]

    def cstr(sec, off):
        start = secs[sec][4] + off
        return b[start:b.index(b"\0", start)].decode(errors="replace")
    symtab = next((s for s in secs if s[1] == 2), None)
    if not symtab:
        return {}
    syms = []
    for k in range(symtab[5] // symtab[9]):
        nm, info = struct.unpack_from("<IB", b, symtab[4] + k * symtab[9])
        syms.append(cstr(symtab[6], nm) if (info & 0xF) == 2 else None)
    regs = {}
    for s in secs:
        if cstr(shstrndx, s[0]) != ".nv.info":
            continue
        off, end = s[4], s[4] + s[5]
        while off + 4 <= end:
            fmt, attr, ln = struct.unpack_from("<BBH", b, off)
            if fmt != 4:
                off += 4
                continue
            if attr == 0x2F and ln >= 8:
                sym, count = struct.unpack_from("<II", b, off + 4)
                if sym < len(syms) and syms[sym]:
                    regs[syms[sym]] = count
            off += 4 + ln
    return regs


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("db")
    ap.add_argument("--name", default="")
    ap.add_argument("--dump")
    ap.add_argument("--slim")
    a = ap.parse_args()
    c = sqlite3.connect(a.db)
    kernels = c.execute("SELECT u.id, n.mangled, u.registers, u.grid_x, u.block_x,"
                        " (SELECT count(*) FROM kernel k WHERE k.unique_id = u.id)"
                        " FROM unique_kernel u JOIN kernel_name n ON n.id = u.name_id"
                        " WHERE instr(n.mangled, ?) > 0", (a.name,)).fetchall()
    names = {k[1] for k in kernels}
    hashes = {}
    for name in names:
        for (h,) in c.execute("SELECT hash FROM module_function WHERE mangled = ?", (name,)):
            hashes.setdefault(h, set()).add(name)
    tmp = tempfile.mkdtemp()
    regs = {}  # (name) -> [(hash, regs)]
    for h in sorted(hashes):
        row = c.execute("SELECT codec, data, bytes FROM module WHERE hash = ? AND data IS NOT NULL", (h,)).fetchone()
        if not row:
            continue
        path = os.path.join(a.dump or tmp, h + ".cubin")
        with open(path, "wb") as f:
            f.write(image(row[0], row[1], row[2]))
        for fn, r in res_usage(path).items():
            if fn in names:
                regs.setdefault(fn, []).append((h[:12], r))
        if a.dump:
            with open(path + ".elf.txt", "w") as f:
                subprocess.run([CUOBJDUMP, "-elf", path], stdout=f, stderr=subprocess.STDOUT)
    pairs = {}
    print("unique\ttraced_regs\tcubin_regs\tlaunches\tgrid\tblock\tname")
    for uid, name, r, gx, bx, n in kernels:
        cand = regs.get(name, [])
        pairs.setdefault((r, tuple(sorted({x[1] for x in cand}))), []).append(uid)
        mark = "" if any(x[1] == r for x in cand) else "\t<-- no cubin function with the traced registers"
        print(f"{uid}\t{r}\t{','.join(f'{x[0]}:{x[1]}' for x in cand) or '-'}\t{n}\t{gx}\t{bx}\t{name[:100]}{mark}")
    print("\ntraced registers -> cubin registers of the same name: unique kernels")
    for (r, cr), ids in sorted(pairs.items(), key=lambda x: (x[0][0] or 0, x[0][1])):
        print(f"  {r} -> {list(cr)}: {len(ids)}")
    if a.slim:
        shutil.copy(a.db, a.slim)
        s = sqlite3.connect(a.slim)
        keep = ",".join("'%s'" % h for h in hashes)
        s.execute(f"UPDATE module SET data = NULL WHERE hash NOT IN ({keep or 'NULL'})")
        s.commit()
        s.execute("VACUUM")
        s.close()
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
