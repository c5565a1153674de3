#!/usr/bin/env python3
"""Check a run database's recorded launch parameters against the functions its modules define.

For every unique kernel with captured parameters and CUPTI's register count, the captured modules
(cubins, zstd-compressed in the `module` table) that define its name are read: each function's
register count (EIATTR_REGCOUNT in `.nv.info`) and parameter block size (EIATTR_KPARAM_INFO in
`.nv.info.<name>`). A kernel is *consistent* when some function of its name has its traced
registers and a parameter block of the recorded size; *mismatched* when functions with its traced
registers exist but all take another size: the trace recorded another function's parameters (a
tracer before session 13 kept a freed handle's facts after XLA's autotuner unloaded a candidate
module); *not checkable* otherwise (no cubin, no registers, a PTX or library image).

  scripts/param_layout_check.py RUN.kjdb [--list N]

Needs the `zstd` command (Debian package zstd). Prints one summary line and up to N examples."""
import argparse
import collections
import sqlite3
import struct
import subprocess
import sys


def elf_functions(img):
    """{function: (registers or None, parameter bytes)} of a cubin; {} when it is not one."""
    if img[:4] != b"\x7fELF" or img[4] != 2:
        return {}
    shoff = struct.unpack_from("<Q", img, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", img, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", img, shoff + i * shentsize) for i in range(shnum)]
    so = secs[shstrndx][4]
    cstr = lambda base, off: img[base + off: img.index(b"\0", base + off)].decode(errors="replace")
    symtabs = [s for s in secs if s[1] == 2]
    if not symtabs:
        return {}
    symtab = symtabs[0]
    strtab = secs[symtab[6]]
    syms = [cstr(strtab[4], struct.unpack_from("<I", img, symtab[4] + i * 24)[0])
            for i in range(symtab[5] // 24)]
    regs, psize = {}, collections.defaultdict(int)
    for s in secs:
        name = cstr(so, s[0])
        if name != ".nv.info" and not name.startswith(".nv.info."):
            continue
        fn = name[len(".nv.info."):] if name.startswith(".nv.info.") else None
        off, end = s[4], s[4] + s[5]
        while off + 4 <= end:
            fmt, attr, size = struct.unpack_from("<BBH", img, off)
            if fmt != 0x04:  # not EIFMT_SVAL: a 4-byte entry
                off += 4
                continue
            if attr == 0x2F and fn is None:  # EIATTR_REGCOUNT: (symbol, registers)
                sym, count = struct.unpack_from("<II", img, off + 4)
                if sym < len(syms):
                    regs[syms[sym]] = count
            elif attr == 0x17 and fn:  # EIATTR_KPARAM_INFO: offset and size of one parameter
                _, _, offset, bits = struct.unpack_from("<IHHI", img, off + 4)
                psize[fn] = max(psize[fn], offset + ((bits >> 18) & 0x3FFF))
            off += 4 + size
    return {f: (regs.get(f), psize.get(f, 0)) for f in set(regs) | set(psize)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run")
    ap.add_argument("--list", type=int, default=5)
    a = ap.parse_args()
    db = sqlite3.connect(f"file:{a.run}?mode=ro", uri=True)
    funcs = collections.defaultdict(list)
    for codec, data in db.execute("SELECT codec, data FROM module WHERE data IS NOT NULL"):
        img = bytes(data)
        if codec == "zstd":
            img = subprocess.run(["zstd", "-dcq"], input=img, capture_output=True).stdout
        try:
            for fn, facts in elf_functions(img).items():
                funcs[fn].append(facts)
        except (struct.error, ValueError, IndexError):
            continue
    counts, examples = collections.Counter(), []
    for name, regs, blen in db.execute(
            "SELECT n.mangled, u.registers, (SELECT length(p.params) FROM launch_params p WHERE p.unique_id = u.id"
            " LIMIT 1) FROM unique_kernel u JOIN kernel_name n ON n.id = u.name_id"):
        same_regs = [p for r, p in funcs.get(name, []) if r == regs] if regs is not None and blen else []
        if not same_regs:
            counts["not checkable"] += 1
        elif blen in same_regs:
            counts["consistent"] += 1
        else:
            counts["mismatched"] += 1
            examples.append(f"  {name[:60]}: {regs} registers, {blen}-byte parameters recorded; "
                            f"its functions with {regs} registers take {sorted(set(same_regs))} bytes")
    print(f"{a.run}: {counts['consistent']} consistent, {counts['mismatched']} mismatched "
          f"(the trace recorded another function's parameters), {counts['not checkable']} not checkable")
    print("\n".join(examples[:a.list]))
    return 1 if counts["mismatched"] else 0


if __name__ == "__main__":
    sys.exit(main())
