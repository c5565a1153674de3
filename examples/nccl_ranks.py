"""One rank of a torchrun job on its own GPU over NCCL, as the multi-GPU examples start it."""
import os


def init_rank():
    """NVLink multicast off unless set (not every machine gives it), this process on the GPU of its
    LOCAL_RANK, the NCCL process group joined. Returns (rank, world size, the rank's torch device)."""
    import torch
    import torch.distributed as dist
    for k, v in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                 ("NVSHMEM_DISABLE_NVLS", "1")):
        os.environ.setdefault(k, v)
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=dev)
    return dist.get_rank(), dist.get_world_size(), dev
