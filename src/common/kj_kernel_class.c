#include "kj_kernel_class.h"

#include <stdlib.h>
#include <string.h>

/* The C++ runtime's demangler (libstdc++/libc++abi, extern "C"); the kjoule binary links stdc++. */
extern char *__cxa_demangle(const char *mangled_name, char *output_buffer, size_t *length,
			    int *status);

char *kj_demangle(const char *mangled)
{
	char *out;
	int status = 0;

	if (!mangled)
		mangled = "";
	/* Only Itanium-mangled names: "_Z..." (and the "__Z" spelling some tools emit). */
	if (!strncmp(mangled, "_Z", 2) || !strncmp(mangled, "__Z", 3)) {
		out = __cxa_demangle(mangled[1] == '_' ? mangled + 1 : mangled, NULL, NULL, &status);
		if (out && status == 0)
			return out;
		free(out);
	}
	return strdup(mangled);
}

const char *const kj_tier_names[KJ_TIER_COUNT] = {
	"copy", "gemm", "attention", "norm", "elementwise", "reduction", "communication", "other",
};

const char *kj_tier_canonical(const char *name)
{
	if (!name)
		return NULL;
	for (int i = 0; i < KJ_TIER_COUNT; i++)
		if (!strcmp(name, kj_tier_names[i]))
			return kj_tier_names[i];
	return NULL;
}

/* One rule: the name starts with prefix (when set) and contains substr (when set). */
struct tier_rule {
	const char *prefix;
	const char *substr;
	const char *tier;
};

/* Priority order: the first match wins. Triton (Inductor) kernels first, by the kind Inductor
 * encodes in the name; then libraries whose names embed other words (NCCL's "AllReduce",
 * flash attention's cutlass template arguments, cuBLAS's split-K "reduce"). */
static const struct tier_rule tier_rules[] = {
	/* Triton / Inductor: triton_{poi,red,per,tem}_fused_<ops>_<n>; the kind prefix decides,
	 * except that templates can be attention and reductions can be normalisations. */
	{"triton_tem_", "attention", "attention"},
	{"triton_tem_", "flash", "attention"},
	{"triton_tem_", NULL, "gemm"},
	{"triton_poi_", NULL, "elementwise"},
	{"triton_red_", "layer_norm", "norm"},
	{"triton_red_", "rms_norm", "norm"},
	{"triton_red_", "group_norm", "norm"},
	{"triton_red_", "batch_norm", "norm"},
	{"triton_per_", "layer_norm", "norm"},
	{"triton_per_", "rms_norm", "norm"},
	{"triton_per_", "group_norm", "norm"},
	{"triton_per_", "batch_norm", "norm"},
	{"triton_red_", NULL, "reduction"},
	{"triton_per_", NULL, "reduction"},
	{"triton_", "attention", "attention"},
	{"triton_", "flash", "attention"},
	{"triton_", "mm", "gemm"},
	{"triton_", "matmul", "gemm"},
	{"triton_", "norm", "norm"},
	{"triton_", "softmax", "reduction"},
	{"triton_", "reduce", "reduction"},
	{"triton_", NULL, "other"},
	/* Collectives. */
	{NULL, "nccl", "communication"},
	{NULL, "Nccl", "communication"},
	{NULL, "NCCL", "communication"},
	/* Attention (before GEMM: FMHA kernels are often CUTLASS-based). */
	{NULL, "pytorch_flash::", "attention"},
	{NULL, "flash_fwd", "attention"},
	{NULL, "flash_bwd", "attention"},
	{NULL, "flash::", "attention"},
	{NULL, "fmha", "attention"},
	{NULL, "Fmha", "attention"},
	{NULL, "FMHA", "attention"},
	{NULL, "sdpa", "attention"},
	/* cuDNN's fused attention backward runs two helpers beside its main kernel: D = rowsum(dO * O)
	 * first, the fp32 dQ accumulator converted to half last */
	{NULL, "cudnn::fusion::compute_dot_do_o", "attention"},
	{NULL, "cudnn::fusion::convert_dq_to", "attention"},
	{NULL, "attention", "attention"},
	{NULL, "Attention", "attention"},
	{NULL, "flashinfer", "attention"},
	{NULL, "mha_fwd", "attention"},
	{NULL, "mha_bwd", "attention"},
	{NULL, "paged_attn", "attention"},
	/* Normalisation (before reduction and elementwise: they reduce and map too). */
	{NULL, "layer_norm", "norm"},
	{NULL, "LayerNorm", "norm"},
	{NULL, "layernorm", "norm"},
	{NULL, "rms_norm", "norm"},
	{NULL, "RMSNorm", "norm"},
	{NULL, "RmsNorm", "norm"},
	{NULL, "rmsnorm", "norm"},
	{NULL, "batch_norm", "norm"},
	{NULL, "BatchNorm", "norm"},
	{NULL, "batchnorm", "norm"},
	{NULL, "group_norm", "norm"},
	{NULL, "GroupNorm", "norm"},
	{NULL, "instance_norm", "norm"},
	{NULL, "weight_norm", "norm"},
	/* GEMM and matrix-vector: cuBLAS, cuBLASLt, CUTLASS, nvjet, xmma, per-architecture kernels. */
	{NULL, "nvjet", "gemm"},
	{NULL, "gemm", "gemm"},
	{NULL, "Gemm", "gemm"},
	{NULL, "GEMM", "gemm"},
	{NULL, "gemv", "gemm"},
	{NULL, "Gemv", "gemm"},
	{NULL, "cutlass", "gemm"},
	{NULL, "cublas", "gemm"},
	{NULL, "cuBLAS", "gemm"},
	{NULL, "xmma", "gemm"},
	{NULL, "splitKreduce", "gemm"},
	{NULL, "wmma", "gemm"},
	{"ampere_", NULL, "gemm"},
	{"sm80_", NULL, "gemm"},
	{"sm86_", NULL, "gemm"},
	{"sm89_", NULL, "gemm"},
	{"sm90_", NULL, "gemm"},
	{"sm100_", NULL, "gemm"},
	{"volta_", NULL, "gemm"},
	{"turing_", NULL, "gemm"},
	{"maxwell_", NULL, "gemm"},
	{NULL, "void ampere_", "gemm"},
	{NULL, "void sm90_", "gemm"},
	/* Reductions: torch's reduce_kernel, softmax, arg-reductions, scans, cub. */
	{NULL, "reduce_kernel", "reduction"},
	{NULL, "Reduce", "reduction"},
	{NULL, "reduction", "reduction"},
	{NULL, "Reduction", "reduction"},
	{NULL, "softmax", "reduction"},
	{NULL, "SoftMax", "reduction"},
	{NULL, "Softmax", "reduction"},
	{NULL, "argmax", "reduction"},
	{NULL, "argmin", "reduction"},
	{NULL, "ArgMax", "reduction"},
	{NULL, "cross_entropy", "reduction"},
	{NULL, "nll_loss", "reduction"},
	{NULL, "tensor_kernel_scan", "reduction"},
	{NULL, "DeviceScan", "reduction"},
	/* Element-wise maps and data movement inside kernels: indexing, gather/scatter, cat. */
	{NULL, "vectorized_elementwise_kernel", "elementwise"},
	{NULL, "unrolled_elementwise_kernel", "elementwise"},
	{NULL, "elementwise_kernel", "elementwise"},
	{NULL, "index_elementwise_kernel", "elementwise"},
	{NULL, "indexSelect", "elementwise"},
	{NULL, "index_select", "elementwise"},
	{NULL, "indexing_backward", "elementwise"},
	{NULL, "index_put", "elementwise"},
	{NULL, "gather", "elementwise"},
	{NULL, "scatter", "elementwise"},
	{NULL, "CatArrayBatchedCopy", "elementwise"},
	{NULL, "cat_", "elementwise"},
	{NULL, "embedding", "elementwise"},
	{NULL, "Embedding", "elementwise"},
	{NULL, "triu_tril", "elementwise"},
	{NULL, "masked_fill", "elementwise"},
	{NULL, "fused_dropout", "elementwise"},
	{NULL, "fill_kernel", "elementwise"},
	{NULL, "FillFunctor", "elementwise"},
	{NULL, "copy_kernel", "elementwise"},
	{NULL, "transpose", "elementwise"},
	{NULL, "upsample", "elementwise"},
	{NULL, "im2col", "elementwise"},
	{NULL, "col2im", "elementwise"},
	{NULL, "rotary", "elementwise"},
	{NULL, "Rotary", "elementwise"},
};

static int rule_matches(const struct tier_rule *r, const char *name)
{
	if (!name)
		return 0;
	if (r->prefix && strncmp(name, r->prefix, strlen(r->prefix)))
		return 0;
	if (r->substr && !strstr(name, r->substr))
		return 0;
	return 1;
}

const char *kj_tier_classify(const char *mangled, const char *demangled)
{
	for (size_t i = 0; i < sizeof(tier_rules) / sizeof(tier_rules[0]); i++) {
		const struct tier_rule *r = &tier_rules[i];
		if (rule_matches(r, demangled) || rule_matches(r, mangled))
			return r->tier;
	}
	return "other";
}
