#!/usr/bin/env python3
"""Table of sweep-worker answers against the roofline: RAW holds lines 'env<TAB>request<TAB>answer'
(scripts/gpu/fastops.sh, sdpa.sh), CEIL the worker's --ceilings line. fraction = max(FLOPs / GEMM
rate, bytes / copy bandwidth) / measured time. With -o, the rows as JSON too."""
import json, re, sys


def kv(s):
    return {k: v.strip('"') for k, v in re.findall(r'(\w+)=("[^"]*"|\S+)', s)}


def rows(raw, ceil):
    c = kv(ceil)
    bw = float(c.get("copy_gbs", "nan")) * 1e9
    peak = float(c.get("gemm_bf16_tflops", "nan")) * 1e12
    out = []
    for ln in open(raw):
        env, req, ans = ln.rstrip("\n").split("\t")
        a = kv(ans)

        def g(k):
            try:
                return float(a[k])
            except (KeyError, ValueError):
                return None

        def frac(us, fl, by):
            if not us:
                return None
            t = max((fl or 0) / peak, (by or 0) / bw)
            return t / (us * 1e-6) if t else None

        out.append({"env": env, "request": req, "answer": ans, "status": a.get("status", "?"),
                    "msg": a.get("msg", ""), "f_us": g("f_us"), "b_us": g("b_us"),
                    "err_f": g("err_f"), "err_b": g("err_b"),
                    "roofline_fraction_f": frac(g("f_us"), g("flops_f"), g("bytes_f")),
                    "roofline_fraction_b": frac(g("b_us"), g("flops_b"), g("bytes_b"))})
    return out


def main():
    args = sys.argv[1:]
    js = None
    if "-o" in args:
        i = args.index("-o")
        js = args[i + 1]
        del args[i:i + 2]
    raw, ceil = args
    rs = rows(raw, ceil)
    s = lambda x, f: format(x, f) if x is not None else "-"
    print(f"{'env':20} {'request':42} {'status':7} {'f_us':>9} {'b_us':>9} {'frac_f':>6} {'frac_b':>6} {'err_f':>8} {'err_b':>8}")
    for r in rs:
        print(f"{r['env']:20} {r['request']:42} {r['status']:7} {s(r['f_us'],'9.1f')} {s(r['b_us'],'9.1f')} "
              f"{s(r['roofline_fraction_f'],'6.2f')} {s(r['roofline_fraction_b'],'6.2f')} {s(r['err_f'],'8.1e')} {s(r['err_b'],'8.1e')}")
        if r["status"] != "ok" or "not used" in r["msg"]:
            print("   ", r["msg"][:300])
    if js:
        json.dump({"ceilings": kv(ceil), "rows": rs}, open(js, "w"), indent=1)


if __name__ == "__main__":
    main()
