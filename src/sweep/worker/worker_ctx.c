/* kjoule-sweep-worker: the context's device buffers (freed all at once, so failures leak nothing),
 * error text with the vendor's message, the op and the shape, and host-side conversions. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "kj_gpu.h"
#include "sweep_worker.h"

int sw_fail(struct sw_ctx *c, const char *what, const char *fmt, ...)
{
	char text[384];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (!strcmp(what, "shape") || !strcmp(what, "precision"))
		c->unsupported = 1;
	if (!c->err[0])
		snprintf(c->err, sizeof(c->err), "%s %s: %s: %s", c->op ? c->op : "?", c->shape, what, text);
	return KJ_EGPU;
}

/* Records a CUDA runtime failure (name and vendor text); memory errors set c->oom. */
int sw_cuda(struct sw_ctx *c, cudaError_t e, const char *what)
{
	if (e == cudaSuccess)
		return 0;
	if (e == cudaErrorMemoryAllocation)
		c->oom = 1;
	cudaGetLastError(); /* clear a sticky non-fatal error so the worker keeps serving */
	return sw_fail(c, what, "%s (%s)", cudaGetErrorName(e), cudaGetErrorString(e));
}

size_t sw_dtype_bytes(int dtype)
{
	switch (dtype) {
	case SW_F16:
	case SW_BF16:
		return 2;
	case SW_U8:
		return 1;
	default:
		return 4;
	}
}

int sw_dtype_of(int precision)
{
	return precision == KJ_FP16 ? SW_F16 : precision == KJ_BF16 ? SW_BF16 : SW_F32;
}

void *sw_alloc(struct sw_ctx *c, size_t n, int dtype, float scale)
{
	void *d = NULL;
	if (c->nbufs == SW_MAX_BUFS) {
		sw_fail(c, "alloc", "more than %d buffers", SW_MAX_BUFS);
		return NULL;
	}
	size_t bytes = (n ? n : 1) * sw_dtype_bytes(dtype);
	if (sw_cuda(c, cudaMalloc(&d, bytes), "cudaMalloc"))
		return NULL;
	c->bufs[c->nbufs++] = (struct sw_buf){d, n, dtype};
	if (scale != 0 && sw_cuda(c, (cudaError_t)kj_gpu_fill(d, n, dtype, KJ_GPU_FILL_UNIFORM, scale, c->seed++, c->stream),
				  "random fill"))
		return NULL;
	return d;
}

void sw_bufs_free(struct sw_ctx *c)
{
	if (c->stream)
		cudaStreamSynchronize(c->stream);
	sw_gemm_free_all(c);
	for (int i = 0; i < c->nbufs; i++)
		cudaFree(c->bufs[i].d);
	c->nbufs = 0;
	cudaGetLastError();
}

int sw_sync(struct sw_ctx *c, const char *what)
{
	if (sw_cuda(c, cudaGetLastError(), what))
		return KJ_EGPU;
	return sw_cuda(c, cudaStreamSynchronize(c->stream), what);
}

static double half_to_double(uint16_t h)
{
	int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
	double v;
	if (e == 0)
		v = ldexp(m, -24);
	else if (e == 31)
		v = m ? NAN : INFINITY;
	else
		v = ldexp(m + 1024, e - 25);
	return s ? -v : v;
}

static double bf16_to_double(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;
	memcpy(&f, &u, sizeof(f));
	return f;
}

/* Convert n raw elements of dtype to doubles. */
static void to_double(const void *raw, size_t n, int dtype, double *out)
{
	for (size_t i = 0; i < n; i++) {
		switch (dtype) {
		case SW_F16:
			out[i] = half_to_double(((const uint16_t *)raw)[i]);
			break;
		case SW_BF16:
			out[i] = bf16_to_double(((const uint16_t *)raw)[i]);
			break;
		case SW_F32:
			out[i] = ((const float *)raw)[i];
			break;
		case SW_I32:
			out[i] = ((const int32_t *)raw)[i];
			break;
		default:
			out[i] = ((const uint8_t *)raw)[i];
		}
	}
}

double *sw_download_rows(struct sw_ctx *c, const void *d, size_t r0, size_t nr, size_t ncols, int dtype)
{
	return sw_download_range(c, d, r0 * ncols, nr * ncols, dtype);
}

/* The copy is checked against the buffer sw_alloc recorded (when d is one of the context's), so a
 * window past the end fails with its numbers rather than CUDA's bare invalid argument. */
double *sw_download_range(struct sw_ctx *c, const void *d, size_t off, size_t n, int dtype)
{
	size_t eb = sw_dtype_bytes(dtype);
	for (int i = 0; i < c->nbufs; i++) {
		size_t have = c->bufs[i].n * sw_dtype_bytes(c->bufs[i].dtype);
		if (c->bufs[i].d == d && (off * eb > have || n * eb > have - off * eb)) {
			sw_fail(c, "download", "elements [%zu, %zu) of a buffer of %zu", off, off + n, have / eb);
			return NULL;
		}
	}
	void *raw = malloc(n * eb + 1);
	double *out = malloc(n * sizeof(*out) + 1);
	if (!raw || !out) {
		free(raw);
		free(out);
		sw_fail(c, "check", "host memory for %zu elements", n);
		return NULL;
	}
	if (sw_cuda(c, cudaStreamSynchronize(c->stream), "before download") ||
	    sw_cuda(c, cudaMemcpy(raw, (const char *)d + off * eb, n * eb, cudaMemcpyDeviceToHost),
		    "download")) {
		free(raw);
		free(out);
		return NULL;
	}
	to_double(raw, n, dtype, out);
	free(raw);
	return out;
}

double *sw_download(struct sw_ctx *c, const void *d, size_t n, int dtype)
{
	return sw_download_rows(c, d, 0, 1, n, dtype);
}

/* ||out - ref|| / ||ref||; NaN anywhere (or an all-zero reference with nonzero output) gives a
 * large value so the check fails, never a silent pass. */
double sw_rel_err(const double *out, const double *ref, size_t n)
{
	double num = 0, den = 0;
	for (size_t i = 0; i < n; i++) {
		double d = out[i] - ref[i];
		if (isnan(out[i]) || isinf(out[i]))
			return 1e30;
		num += d * d;
		den += ref[i] * ref[i];
	}
	if (den == 0)
		return num == 0 ? 0 : 1e30;
	return sqrt(num / den);
}

int sw_nvml_index(int cuda_device, char *why, size_t why_len)
{
	char pci[64];
	if (cudaDeviceGetPCIBusId(pci, sizeof(pci), cuda_device) != cudaSuccess) {
		cudaGetLastError();
		snprintf(why, why_len, "no PCI bus id for CUDA device %d", cuda_device);
		return -1;
	}
	return kj_gpu_nvml_index_by_pci(pci, why, why_len);
}
