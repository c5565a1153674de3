/* The GPU harness built without cuDNN: the fused attention falls back to kjoule's own kernels,
 * and the answer says why. */
#include "kj_gpu_sdpa.h"

int kj_gpu_sdpa_supported(int dt, int64_t d)
{
	(void)dt, (void)d;
	return 1; /* asked, so that the answer names the reason */
}

int kj_gpu_sdpa_fwd(int dt, const void *q, const void *k, const void *v, void *o, float *lse, int64_t bh, int64_t l,
		   int64_t d, float scale, int causal, cudaStream_t s)
{
	(void)dt, (void)q, (void)k, (void)v, (void)o, (void)lse, (void)bh, (void)l, (void)d, (void)scale;
	(void)causal, (void)s;
	return -1;
}

int kj_gpu_sdpa_bwd(int dt, const void *q, const void *k, const void *v, const void *o, const void *dout,
		   const float *lse, void *dq, void *dk, void *dv, int64_t bh, int64_t l, int64_t d, float scale, int causal,
		   cudaStream_t s)
{
	(void)dt, (void)q, (void)k, (void)v, (void)o, (void)dout, (void)lse, (void)dq, (void)dk, (void)dv, (void)bh;
	(void)l, (void)d, (void)scale, (void)causal, (void)s;
	return -1;
}

const char *kj_gpu_sdpa_why(void)
{
	return "this worker was built without cuDNN";
}

int64_t kj_gpu_sdpa_engine(int bwd)
{
	(void)bwd;
	return -1;
}

void kj_gpu_sdpa_keep_plans(int keep)
{
	(void)keep;
}

void kj_gpu_sdpa_release(void)
{
}
