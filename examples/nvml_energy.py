"""NVML's total-energy counter over an example's timed loop, as a per-call figure or its absence.

The counter advances about every 100 ms: a loop shorter than a few of its periods, or one over
which it did not advance, has no figure. per_call gives (joules per call, None) or (None, why),
never a silent 0."""


def per_call(e0_mj, e1_mj, window_s, calls, have_nvml=True):
    if not have_nvml or e0_mj is None or e1_mj is None:
        return None, "no NVML (pynvml missing or no device)"
    if window_s < 0.5 or e1_mj <= e0_mj:
        return None, (f"the loop ({window_s:.3f} s) is too short for NVML's energy counter "
                      "(it updates about every 0.1 s): run more iterations")
    return (e1_mj - e0_mj) * 1e-3 / calls, None
