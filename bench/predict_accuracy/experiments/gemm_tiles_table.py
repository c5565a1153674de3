#!/usr/bin/env python3
"""Tile table for gemm_tile_features.patch from bench/results/gemm_algos.json: one line per GEMM
shape, "OP V1,V2,V3,V4 fwd_tm fwd_tn fwd_splitk bwd1_tm bwd1_tn bwd1_splitk bwd2_tm bwd2_tn
bwd2_splitk", the tile sizes read from cublasLt.h's CUBLASLT_MATMUL_TILE_AxB enum.

usage: gemm_tiles_table.py [--header /usr/local/cuda/include/cublasLt.h] [ALGOS.json] > tiles.txt
Then: git apply bench/predict_accuracy/experiments/gemm_tile_features.patch; make build;
KJ_X_TILES=tiles.txt python3 bench/predict_accuracy/grouped_cv.py ... (the sets in ALGOS.json's
"cv" entry)."""
import argparse
import json
import re
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--header", default="/usr/local/cuda/include/cublasLt.h")
    ap.add_argument("algos", nargs="?", default="bench/results/gemm_algos.json")
    a = ap.parse_args()
    tiles = {}
    for line in open(a.header):
        m = re.match(r"\s*CUBLASLT_MATMUL_TILE_(\d+)x(\d+)\s*=\s*(\d+)", line)
        if m:
            tiles[int(m.group(3))] = (int(m.group(1)), int(m.group(2)))
    d = json.load(open(a.algos))

    def dims(algo):
        out = []
        for g in algo.split("+"):
            f = g.split(".")  # id.tile.splitk.stages.cluster
            out += list(tiles.get(int(f[1]), (0, 0))) + [int(f[2])]
        return out + [0] * (6 - len(out))

    for op, rows in d["ops"].items():
        for r in rows:
            f = dims(r["f_algo"])[:3]
            b = dims(r["b_algo"])
            sys.stdout.write(f"{op} {r['shape']} {' '.join(map(str, f + b[:6]))}\n")


if __name__ == "__main__":
    main()
