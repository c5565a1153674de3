# The multi-GPU examples and templates, checked without a GPU: both examples compile and parse
# --help without torch (they import it after parsing), the SLURM templates and the GPU script
# parse as bash, and the bench script compiles.
set -u
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
for f in examples/llama7b_tp.py examples/ddp_train.py bench/multi_gpu/run.py; do
	python3 -c 'import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)' \
		"$SRC/$f" "$T/x.pyc" 2>"$T/err" || fail "$f does not compile: $(cat "$T/err")"
done
for f in examples/llama7b_tp.py examples/ddp_train.py; do
	expect 0 python3 "$SRC/$f" --help
	has "^usage: "
done
python3 "$SRC/examples/llama7b_tp.py" --help | grep -q -- "--decode-steps" || fail "llama7b_tp lacks --decode-steps"
for o in --layers --prompt --batch; do
	python3 "$SRC/examples/llama7b_tp.py" --help | grep -q -- "$o" || fail "llama7b_tp lacks $o"
done
# NVTX ranges and NVLink multicast off, as the docs say
grep -q 'range_push(name("decode"))' "$SRC/examples/llama7b_tp.py" &&
	grep -q 'name = lambda phase: "step" if a.nvtx == "step" else phase' "$SRC/examples/llama7b_tp.py" || fail "no decode range"
python3 "$SRC/examples/llama7b_tp.py" --help | grep -q -- "--cuda-graph" || fail "llama7b_tp lacks --cuda-graph"
grep -q 'range_push("step")' "$SRC/examples/ddp_train.py" || fail "no step range"
for f in examples/llama7b_tp.py examples/ddp_train.py scripts/slurm/nccl_sweep.sbatch scripts/slurm/torchrun.sbatch \
	scripts/gpu/multi_gpu.sh; do
	grep -q "NCCL_NVLS_ENABLE" "$SRC/$f" || fail "$f leaves NVLink multicast on"
done
for f in scripts/slurm/nccl_sweep.sbatch scripts/slurm/torchrun.sbatch scripts/slurm/sweep.sbatch scripts/gpu/multi_gpu.sh; do
	bash -n "$SRC/$f" 2>"$T/err" || fail "$f: $(cat "$T/err")"
done
exit 0
