#!/usr/bin/env python3
"""Diagnostics: load every captured module of a run that defines a kernel and try the kernel's
recorded launch geometry on each, through the driver API (ctypes), with fresh buffers for its
pointer parameters. Prints what the driver says of each function and of each launch.

usage: launch_probe.py RUN.kjdb UNIQUE_ID [--carveout PCT]
"""
import argparse
import ctypes
import sqlite3
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from module_regs import image  # noqa: E402

cu = ctypes.CDLL("libcuda.so.1")
ATTR = {"max_threads": 0, "shared_static": 1, "const": 2, "local": 3, "num_regs": 4, "ptx": 5,
        "binary": 6, "max_dyn_smem": 8, "carveout": 9, "cluster_must_be_set": 10,
        "required_cluster_w": 11, "non_portable_cluster": 14}


def err(rc):
    s = ctypes.c_char_p()
    cu.cuGetErrorName(rc, ctypes.byref(s))
    return s.value.decode() if s.value else str(rc)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("db")
    ap.add_argument("unique", type=int)
    ap.add_argument("--carveout", type=int, default=-1)
    a = ap.parse_args()
    c = sqlite3.connect(a.db)
    name, gx, gy, gz, bx, by, bz, shm = c.execute(
        "SELECT n.mangled, u.grid_x, u.grid_y, u.grid_z, u.block_x, u.block_y, u.block_z,"
        " coalesce(u.shmem_dynamic, 0) FROM unique_kernel u JOIN kernel_name n ON n.id = u.name_id"
        " WHERE u.id = ?", (a.unique,)).fetchone()
    layout, blob = c.execute("SELECT layout, params FROM launch_params WHERE unique_id = ? LIMIT 1",
                             (a.unique,)).fetchone()
    print(f"kernel {name[:100]}\n  grid {gx},{gy},{gz} block {bx},{by},{bz} dyn smem {shm}; layout {layout}")
    assert cu.cuInit(0) == 0
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    cu.cuDeviceGet(ctypes.byref(dev), 0)
    cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
    cu.cuCtxSetCurrent(ctx)
    # every 8-byte parameter gets its own 64 MiB buffer; 4-byte ones keep their recorded value
    params = []
    for item in layout.split(","):
        off, size = (int(x) for x in item.split(":"))
        raw = bytearray(blob[off:off + size])
        if size == 8:
            p = ctypes.c_uint64()
            cu.cuMemAlloc_v2(ctypes.byref(p), 64 << 20)
            cu.cuMemsetD8_v2(p, 0, 64 << 20)
            raw = bytearray(p.value.to_bytes(8, "little"))
        params.append((ctypes.c_char * size).from_buffer_copy(bytes(raw)))
    argv = (ctypes.c_void_p * len(params))(*[ctypes.addressof(p) for p in params])
    for (h,) in c.execute("SELECT hash FROM module_function WHERE mangled = ?", (name,)).fetchall():
        row = c.execute("SELECT codec, data, bytes FROM module WHERE hash = ? AND data IS NOT NULL", (h,)).fetchone()
        if not row:
            print(f"  module {h[:12]}: no image")
            continue
        img = image(*row)
        mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
        rc = cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(img))
        if rc:
            print(f"  module {h[:12]}: load {err(rc)}")
            continue
        rc = cu.cuModuleGetFunction(ctypes.byref(fn), mod, name.encode())
        attrs = {}
        for k, v in ATTR.items():
            x = ctypes.c_int(-1)
            cu.cuFuncGetAttribute(ctypes.byref(x), v, fn)
            attrs[k] = x.value
        if a.carveout >= 0:
            print("    set carveout", err(cu.cuFuncSetAttribute(fn, 9, a.carveout)))
        res = []
        for blk in sorted({bx, 32, 64, 128, 256, 512}):
            rc = cu.cuLaunchKernel(fn, gx, gy, gz, blk, by, bz, shm, None, argv, None)
            s = cu.cuCtxSynchronize()
            res.append(f"block {blk}: {err(rc)}/{err(s)}")
            if s:
                print("    context lost:", err(s))
                return
        print(f"  module {h[:12]}: {attrs}\n    " + "; ".join(res))
        cu.cuModuleUnload(mod)


if __name__ == "__main__":
    main()
