#!/usr/bin/env python3
"""A stand-in for kjoule-sweep-worker that speaks its line protocol (src/sweep/kj_sweep_op.h)
and answers from a known function, so the sweep driver, merge, fit and predict are tested on
the CPU. For shape v with product P:  f_us = 3 + P/1000,  b_us = 2 * f_us,  f_uj = 50 * f_us,
b_uj = 50 * b_us (uncertainties 1 %), the mean of warm (40 x) and cold (60 x) L2 energies.
Environment: STANDIN_OOM_ABOVE=P  answers status=oom when the product exceeds P;
STANDIN_DIE_AFTER=N  exits (as if killed) after N measured answers, counted in STANDIN_COUNT_FILE
across restarts; STANDIN_LOG=FILE  appends each request line; STANDIN_FAIL=1  answers status=error to all; STANDIN_HANG_AT=V1,V2,..  hangs on that shape.
As a rank of a collective (KJ_NCCL_RANK set: it stands in for kjoule-nccl-worker too), STANDIN_RANKS_LOG=FILE
gets one line a rank at start: rank, ranks, device, devices and the three NVLink multicast variables."""
import os
import sys


def main():
    oom = int(os.environ.get("STANDIN_OOM_ABOVE", "0") or 0)
    die = int(os.environ.get("STANDIN_DIE_AFTER", "0") or 0)
    count_file = os.environ.get("STANDIN_COUNT_FILE")
    log = os.environ.get("STANDIN_LOG")
    rl = os.environ.get("STANDIN_RANKS_LOG")
    if rl and "KJ_NCCL_RANK" in os.environ:
        e = os.environ
        with open(rl, "a") as f:
            f.write("rank=%s ranks=%s device=%s devices=%s id=%s nvls=%s symm=%s nvshmem=%s\n" % (
                e.get("KJ_NCCL_RANK"), e.get("KJ_NCCL_NRANKS"), e.get("KJ_NCCL_DEVICE"),
                e.get("KJ_NCCL_DEVICES"), "set" if e.get("KJ_NCCL_ID_FILE") else "unset",
                e.get("NCCL_NVLS_ENABLE"), e.get("TORCH_SYMM_MEM_DISABLE_MULTICAST"),
                e.get("NVSHMEM_DISABLE_NVLS")))
    for line in sys.stdin:
        if log:
            with open(log, "a") as f:
                f.write(line)
        parts = line.split()
        if len(parts) != 5:
            print('KJ_SWEEP status=error msg="bad request"', flush=True)
            continue
        op, prec, shape, energy, check = parts
        v = [int(x) for x in shape.split(",")]
        p = 1
        for x in v:
            p *= x
        if os.environ.get("STANDIN_FAIL"):
            print('KJ_SWEEP status=error msg="broken (stand-in)"', flush=True)
            continue
        if os.environ.get("STANDIN_HANG_AT") == shape:
            import time
            time.sleep(3600)
        if oom and p > oom:
            print('KJ_SWEEP status=oom msg="out of memory (stand-in)"', flush=True)
            continue
        if die and count_file:
            n = int(open(count_file).read() or 0) if os.path.exists(count_file) else 0
            if n >= die:
                os._exit(9)
            with open(count_file, "w") as f:
                f.write(str(n + 1))
        f_us = 3.0 + p / 1000.0
        b_us = 2.0 * f_us
        e = energy == "1"
        fields = [f"status=ok f_us={f_us:.4f} b_us={b_us:.4f}"]
        if e:
            fields.append(f"f_uj={50 * f_us:.3f} f_uj_unc={0.5 * f_us:.3f} "
                          f"b_uj={50 * b_us:.3f} b_uj_unc={0.5 * b_us:.3f} f_mhz=1755 b_mhz=1980 "
                          f"f_uj_warm={40 * f_us:.3f} f_uj_cold={60 * f_us:.3f} "
                          f"b_uj_warm={40 * b_us:.3f} b_uj_cold={60 * b_us:.3f}")
        else:
            fields.append("f_uj=- f_uj_unc=- b_uj=- b_uj_unc=-")
        fields.append("err_f=1e-4 err_b=2e-4" if check == "1" else "err_f=- err_b=-")
        # the GEMM algorithms of each pass: a good word forward, one kjoule must refuse backward;
        # flash_atten names its implementations (the real worker: cuDNN's or kjoule's kernels)
        if op == "flash_atten":
            fields.append("f_algo=cudnn-sdpa.e2 b_algo=kjoule-flash2")
        else:
            fields.append("f_algo=12.20.1.3.0+7.18.1.2.0 b_algo=x!y")
        print("KJ_SWEEP " + " ".join(fields), flush=True)


main()
