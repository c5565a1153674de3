#!/usr/bin/env bash
# examples/rank_turns.py, the turns protocol of a torchrun job, on two threads standing in for two
# ranks (queues for the CPU channel): rank 0 answers each "go N" with the slowest rank's ms a step
# and every rank's own, both ranks run exactly the steps asked, a bad line is answered with an
# error and changes nothing, and "quit" sends every rank home.
set -u
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
python3 - "$SRC/examples" <<'P' >"$T/out" 2>&1 || fail "rank turns: $(tail -8 "$T/out")"
import io, json, queue, sys, threading
sys.path.insert(0, sys.argv[1])
import rank_turns

world = 2
to_rank = [queue.Queue() for _ in range(world)]
to_root = queue.Queue()
steps = [0] * world
clocks = [[0.0] for _ in range(world)]


def make(rank):
    def share(n):
        if rank == 0:
            for q in to_rank[1:]:
                q.put(n)
            return n
        return to_rank[rank].get(timeout=10)

    def gather(ms):
        if rank:
            to_root.put((rank, ms))
            return None
        got = [ms] + [None] * (world - 1)
        for _ in range(world - 1):
            r, m = to_root.get(timeout=10)
            got[r] = m
        return got

    def step():  # rank r's step takes (r + 1) ms on its own clock
        steps[rank] += 1
        clocks[rank][0] += (rank + 1) / 1e3

    return share, gather, step


out = io.StringIO()
ths, left = [], []
for r in range(world):
    share, gather, step = make(r)
    kw = {"lines": ["go 3\n", "\n", "go x\n", "go 0\n", "go 2\n", "quit\n"], "out": out} if r == 0 else {}
    clock = (lambda c: (lambda: c[0]))(clocks[r])  # each rank's own clock
    def run(r=r, share=share, gather=gather, step=step, kw=kw, clock=clock):
        rank_turns.serve(r, world, step, lambda: None, share, gather, clock=clock, **kw)
        left.append(r)  # left the loop as told, not by an exception
    ths.append(threading.Thread(target=run))
for t in ths:
    t.start()
for t in ths:
    t.join(timeout=20)
assert not any(t.is_alive() for t in ths) and sorted(left) == [0, 1], ("a rank never left", left)
lines = [json.loads(x) for x in out.getvalue().splitlines()]
assert lines[0]["ready"] is True and lines[0]["ranks"] == 2, lines[0]
assert len(lines[1]["ms"]) == 3 and lines[1]["ranks"]["0"] and lines[1]["ranks"]["1"], lines[1]
for i in range(3):  # the slowest rank's step: rank 1's 2 ms
    assert abs(lines[1]["ms"][i] - 2.0) < 1e-6 and abs(lines[1]["ranks"]["0"][i] - 1.0) < 1e-6, lines[1]
assert "error" in lines[2] and "error" in lines[3], lines[2:4]   # go x, go 0: never run
assert len(lines[4]["ms"]) == 2, lines[4]
assert "vmhwm_mb" in lines[5] and len(lines) == 6, lines
assert steps == [5, 5], steps                                                             # 3 + 2 on each rank
print("ok")
P
grep -q "^ok$" "$T/out" || fail "no ok: $(tail -3 "$T/out")"
finish
