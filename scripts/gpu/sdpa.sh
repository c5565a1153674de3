#!/usr/bin/env bash
# On the GPU machine: flash_atten through cuDNN's fused attention (the default) against kjoule's own
# mma.sync kernels (KJ_SWEEP_ATTN=flash2), each checked against the double reference and timed by the
# worker as a sweep times it, with the roofline fraction; the worker's selftest first; last, PyTorch's
# own scaled_dot_product_attention (flash and cuDNN backends) at the head-dim-128 shape for context.
# usage (device, repo root, after building): bash scripts/gpu/sdpa.sh [WORKER]
set -u
here=$(cd "$(dirname "$0")" && pwd)
source "$here/worker_prelude.sh" sdpa "FAIL|flash|selftest:" "${1:-}"
reqs="flash_atten bf16 1,4,32,2048,4096
flash_atten fp16 1,4,32,2048,4096
flash_atten bf16 1,4,64,2048,4096
flash_atten fp16 1,4,64,2048,4096
flash_atten bf16 1,2,16,1000,2048
flash_atten fp16 1,1,4,77,256
flash_atten bf16 1,2,8,333,768
flash_atten bf16 1,8,16,4096,2048
flash_atten fp32 1,1,4,128,256"
: > "$OUT/sdpa_raw.txt"
run() { # env, request
	local ans t0 t1
	t0=$(date +%s.%N)
	ans=$(echo "$2 0 1" | env $1 timeout 200 "$w" 2>>"$OUT/sdpa_worker.err")
	t1=$(date +%s.%N)
	[ -n "$ans" ] || ans="KJ_SWEEP status=error msg=\"no answer (timeout or crash)\""
	printf '%s\t%s\t%s\n' "$1" "$2" "$ans" >> "$OUT/sdpa_raw.txt"
	printf '%s\t%s\t%.2f\n' "$1" "$2" "$(awk "BEGIN{print $t1 - $t0}")" >> "$OUT/sdpa_wall.txt"
}
: > "$OUT/sdpa_wall.txt"
while read -r line; do
	run "KJ_NONE=1" "$line"
	run "KJ_SWEEP_ATTN=flash2" "$line"
done <<< "$reqs"
python3 "$here/roofline_table.py" "$OUT/sdpa_raw.txt" "$ceil" -o "$OUT/sdpa_rows.json"
echo "== worker wall seconds per request (plan build included)"
cat "$OUT/sdpa_wall.txt"
echo "== PyTorch scaled_dot_product_attention, causal, b4 h32 l2048 d128"
timeout 240 python3 - <<'PY' 2>&1 | tail -8 | tee "$OUT/sdpa_torch.txt"
import torch, torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
torch.manual_seed(0)
for dt in (torch.bfloat16, torch.float16):
    q, k, v = (torch.randn(4, 32, 2048, 128, device="cuda", dtype=dt, requires_grad=True) for _ in range(3))
    for be in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION):
        try:
            with sdpa_kernel([be]):
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True); g = torch.randn_like(o)
                o.backward(g); torch.cuda.synchronize()
                ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
                ev[0].record()
                for _ in range(20): o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                ev[1].record()
                for _ in range(20): o.backward(g, retain_graph=True)
                ev[2].record(); torch.cuda.synchronize()
                print(f"torch {str(dt)[6:]} {be.name}: fwd {ev[0].elapsed_time(ev[1])*1e3/20:.1f} us, bwd {ev[1].elapsed_time(ev[2])*1e3/20:.1f} us")
        except Exception as e:
            print(f"torch {str(dt)[6:]} {be.name}: {type(e).__name__}: {str(e)[:120]}")
PY
tar -C "$OUT" -czf "$OUT/sdpa_logs.tgz" sdpa_selftest.log sdpa_raw.txt sdpa_wall.txt sdpa_worker.err sdpa_torch.txt 2>/dev/null
