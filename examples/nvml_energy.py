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


def handle(pynvml, torch_device=None, use_torch=True):
    """NVML's handle of the GPU this process computes on. NVML numbers every GPU of the machine
    and ignores CUDA_VISIBLE_DEVICES, so CUDA's device k is found by its UUID (torch), else by its
    PCI address (torch), else by the k-th entry of CUDA_VISIBLE_DEVICES, else by index k.
    use_torch=False (a JAX program) skips torch, which would start CUDA in the process."""
    import os
    k = 0 if torch_device is None else int(torch_device)
    try:
        if not use_torch:
            raise ImportError("torch not asked")
        import torch
        props = torch.cuda.get_device_properties(k)
        uuid = str(getattr(props, "uuid", "") or "")
        if uuid:
            try:
                return pynvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else "GPU-" + uuid)
            except Exception:
                pass
        if hasattr(props, "pci_bus_id"):
            bus = f"{props.pci_domain_id:08x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0"
            try:
                return pynvml.nvmlDeviceGetHandleByPciBusId(bus)
            except Exception:
                pass
    except Exception:
        pass
    vis = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    if k < len(vis):
        v = vis[k]
        return (pynvml.nvmlDeviceGetHandleByIndex(int(v)) if v.isdigit()
                else pynvml.nvmlDeviceGetHandleByUUID(v))
    return pynvml.nvmlDeviceGetHandleByIndex(k)
