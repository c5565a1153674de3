/* What inject_launch.c calls besides the function facts, stood in for a program without a GPU or
 * CUPTI (test_launch_record.c, bench/launch_path): CUkernel handles unknown, 32 registers, stream
 * 7, module 3, parameter capture on, no snapshots. Definitions: include it in one file a program,
 * beside that file's own cuFuncGetParamInfo and cuFuncGetName. */
#ifndef KJ_LAUNCH_STAND_INS_H
#define KJ_LAUNCH_STAND_INS_H

#include "inject.h"

CUresult cuKernelGetName(const char **name, CUkernel k)
{
	(void)name, (void)k;
	return CUDA_ERROR_INVALID_HANDLE;
}
CUresult cuKernelGetParamInfo(CUkernel k, size_t i, size_t *off, size_t *size)
{
	(void)k, (void)i, (void)off, (void)size;
	return CUDA_ERROR_INVALID_HANDLE;
}
CUresult cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f)
{
	(void)a, (void)f;
	*v = 32;
	return CUDA_SUCCESS;
}
CUptiResult cuptiGetStreamIdEx(CUcontext c, CUstream s, uint8_t ptsz, uint32_t *id)
{
	(void)c, (void)s, (void)ptsz;
	*id = 7;
	return CUPTI_SUCCESS;
}

struct kj_inject_config kj_cfg = {.params_k = 1};
int kj_module_of_function(CUfunction f, uint32_t *module_id, uint64_t *content)
{
	(void)f;
	*module_id = 3, *content = 0;
	return 0;
}
int kj_snapshot_before(CUstream s, uint32_t corr, const unsigned char *blob, uint32_t len)
{
	(void)s, (void)corr, (void)blob, (void)len;
	return 0;
}
void kj_snapshot_graph_words(const unsigned char *blob, uint32_t len) { (void)blob, (void)len; }

#endif
