"""The turns protocol of bench/trace_overhead/turns.py for a torchrun job: rank 0 talks to the
coordinator on stdin and stdout, and the other ranks follow it over a CPU channel, so that several
jobs can stay alive on the same GPUs and take turns (a job waiting for its turn spins no kernel).

Protocol (as bench/trace_overhead/turn_worker.py's, one line each way, rank 0 only):
  coordinator -> job   "go N"   every rank runs N steps, each synchronised and timed
  job -> coordinator   {"ms": [the slowest rank's ms, a step], "ranks": {"0": [...], "1": [...]}}
  coordinator -> job   "quit"   the ranks leave, rank 0 answering {"vmhwm_mb": its peak RSS}
Rank 0 says {"ready": true, "pid": ..., "ranks": N} first. A line that is neither is answered
{"error": "..."} and changes nothing."""
import json
import os
import time


def protocol_stdout():
    """A duplicate of stdout for the protocol, and stdout itself sent to stderr, so that nothing
    else the process prints can break a line of the protocol."""
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    return out


def say(obj, out):
    out.write(json.dumps(obj) + "\n")
    out.flush()


def peak_rss_mb():
    """The process's peak resident memory in MB (-1.0 where /proc says nothing)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return -1.0


def timed_steps(n, step, sync, clock=time.perf_counter):
    """n steps, each between two syncs: their ms."""
    ms = []
    for _ in range(n):
        sync()
        t0 = clock()
        step()
        sync()
        ms.append((clock() - t0) * 1e3)
    return ms


def serve(rank, world, step, sync, share, gather, lines=None, out=None, clock=time.perf_counter):
    """Rank `rank` of `world` serving turns. share(n) on rank 0 sends n (steps; 0: leave) to every
    rank and returns it; elsewhere it returns rank 0's n. gather(ms) returns every rank's list on
    rank 0 (None elsewhere). lines: rank 0's commands (stdin); out: rank 0's protocol stream."""
    if rank == 0:
        say({"ready": True, "pid": os.getpid(), "ranks": world}, out)
        for line in lines:
            word = line.split()
            if not word:
                continue
            if word[0] == "quit":
                break
            if word[0] != "go" or len(word) != 2 or not word[1].isdigit() or int(word[1]) < 1:
                say({"error": f"not a command: {line.strip()!r} (go N, quit)"}, out)
                continue
            n = share(int(word[1]))
            per_rank = gather(timed_steps(n, step, sync, clock))
            say({"ms": [max(r[i] for r in per_rank) for i in range(n)],
                 "ranks": {str(r): per_rank[r] for r in range(world)}}, out)
        share(0)
        say({"vmhwm_mb": peak_rss_mb()}, out)
        return
    while True:
        n = share(None)
        if n <= 0:
            return
        gather(timed_steps(n, step, sync, clock))


def torch_channel(dist, torch):
    """share and gather over a gloo group: the ranks wait for a turn on the CPU, not in a kernel."""
    group = dist.new_group(backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()

    def share(n):
        t = torch.tensor([n if n is not None else 0], dtype=torch.int64)
        dist.broadcast(t, 0, group=group)
        return int(t.item())

    def gather(ms):
        got = [None] * world if rank == 0 else None
        dist.gather_object(ms, got, dst=0, group=group)
        return got

    return share, gather


def kjoule_cost_study(bits):
    """turns.py's cupti_activity_only contestant: kjoule's callbacks set by its cost study (the
    injection library the driver loaded, in this process)."""
    import ctypes
    lib = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])  # the copy the driver loaded
    if lib.kjoule_cost_study_set_api(bits) < 0:
        raise SystemExit("--kjoule-cost: kjoule's CUPTI subscriber is not active")
