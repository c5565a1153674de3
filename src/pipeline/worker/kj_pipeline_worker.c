/* kjoule-pipeline-worker: the GPU side of `kjoule pipeline`. Reads one phase per line on stdin
 * (kj_phase_format's "key=value" words), measures it (kj_kernel_iter) and answers one KJ_PHASE
 * line on stdout; "type=ceiling precision=P" measures the copy bandwidth and GEMM rate instead
 * (a KJ_CEILING line, then KJ_PHASE). Exits 3 after a failure that leaves the CUDA context
 * unusable (the parent restarts it for the next phase).
 * usage: kjoule-pipeline-worker [--device D] [--unroll U] [--iters I] [--energy-seconds S]
 *                               [--no-energy] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "kj_gpu.h"
#include "kj_phase_api.h"
#include "worker_ops.h"

static void ceiling(const char *line, int device)
{
	struct kj_phase_result r;
	char prec[8] = "fp16";
	const char *p = strstr(line, "precision=");
	if (p)
		sscanf(p + 10, "%7s", prec);
	memset(&r, 0, sizeof(r));
	snprintf(r.status, sizeof(r.status), "failed");
	(void)device;
	/* copy: 1 GiB device to device, bytes read + written */
	size_t bytes = (size_t)1 << 30;
	void *a = NULL, *b = NULL;
	cudaEvent_t e0, e1;
	float ms = 0, ms2 = 0;
	double gbs = 0, tflops = 0;
	cudaEventCreate(&e0);
	cudaEventCreate(&e1);
	if (!cudaMalloc(&a, bytes) && !cudaMalloc(&b, bytes)) {
		kj_fill_random(a, bytes / 2, "fp16", 5, 1.0f, 0);
		for (int i = 0; i < 3; i++)
			cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, 0);
		cudaEventRecord(e0, 0);
		for (int i = 0; i < 20; i++)
			cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, 0);
		cudaEventRecord(e1, 0);
		cudaEventSynchronize(e1);
		cudaEventElapsedTime(&ms, e0, e1);
		gbs = ms > 0 ? 2.0 * (double)bytes * 20 / (ms * 1e-3) * 1e-9 : 0;
	}
	cudaFree(a);
	cudaFree(b);
	cudaGetLastError();
	struct kj_phase g;
	void *st = NULL;
	memset(&g, 0, sizeof(g));
	g.kind = KJ_PHASE_MATMUL;
	g.M = g.N = g.K = 8192;
	g.count = 1;
	snprintf(g.precision, sizeof(g.precision), "%s", prec);
	if (!kjw_matmul_setup(&g, &st, r.error, sizeof(r.error))) {
		for (int i = 0; i < 5; i++)
			kjw_matmul_capture(st, 0);
		cudaEventRecord(e0, 0);
		for (int i = 0; i < 20; i++)
			kjw_matmul_capture(st, 0);
		cudaEventRecord(e1, 0);
		cudaEventSynchronize(e1);
		cudaEventElapsedTime(&ms2, e0, e1);
		tflops = ms2 > 0 ? 2.0 * 8192.0 * 8192.0 * 8192.0 * 20 / (ms2 * 1e-3) * 1e-12 : 0;
		kjw_matmul_teardown(st);
	}
	cudaEventDestroy(e0);
	cudaEventDestroy(e1);
	printf("KJ_CEILING tflops=%.3f gbs=%.1f precision=%s\n", tflops, gbs, prec);
	if (tflops > 0 && gbs > 0)
		snprintf(r.status, sizeof(r.status), "ok");
	kj_phase_result_emit(stdout, &r);
}

int main(int argc, char **argv)
{
	struct kj_kernel_iter_opts o = {100, 1000, 1, 1.0, 0, -1, ""};
	char line[2048];
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--no-energy")) {
			o.energy = 0;
			continue;
		}
		if (!v) {
			fprintf(stderr, "kjoule-pipeline-worker: %s needs a value\n", a);
			return 2;
		}
		if (!strcmp(a, "--device"))
			o.device = atoi(v);
		else if (!strcmp(a, "--unroll"))
			o.unroll = atoi(v);
		else if (!strcmp(a, "--iters"))
			o.iters = atoll(v);
		else if (!strcmp(a, "--energy-seconds"))
			o.energy_s = atof(v);
		else {
			fprintf(stderr, "kjoule-pipeline-worker: unknown option %s\n", a);
			return 2;
		}
		i++;
	}
	cudaError_t e = cudaSetDevice(o.device);
	if (!e)
		e = cudaFree(NULL);
	if (e) {
		fprintf(stderr, "kjoule-pipeline-worker: device %d: %s (%s)\n", o.device, cudaGetErrorName(e),
			cudaGetErrorString(e));
		struct kj_phase_result r;
		memset(&r, 0, sizeof(r));
		snprintf(r.status, sizeof(r.status), "failed");
		snprintf(r.error, sizeof(r.error), "no usable GPU %d: %s (%s)", o.device, cudaGetErrorName(e),
			 cudaGetErrorString(e));
		/* answer every request so the parent moves on */
		while (fgets(line, sizeof(line), stdin))
			kj_phase_result_emit(stdout, &r);
		return 1;
	}
	char pci[64];
	if (cudaDeviceGetPCIBusId(pci, sizeof(pci), o.device) == cudaSuccess)
		o.nvml_index = kj_gpu_nvml_index_by_pci(pci, o.nvml_why, sizeof(o.nvml_why));
	else
		snprintf(o.nvml_why, sizeof(o.nvml_why), "no PCI bus id for CUDA device %d", o.device);
	while (fgets(line, sizeof(line), stdin)) {
		struct kj_phase ph;
		struct kj_phase_result r;
		const struct kj_phase_ops *ops = NULL;
		char err[256];
		memset(&r, 0, sizeof(r));
		snprintf(r.status, sizeof(r.status), "failed");
		line[strcspn(line, "\n")] = 0;
		if (!line[0])
			continue;
		if (!strncmp(line, "type=ceiling", 12)) {
			ceiling(line, o.device);
			continue;
		}
		if (kj_phase_parse(line, &ph)) {
			snprintf(r.error, sizeof(r.error), "malformed request: %.200s", line);
			kj_phase_result_emit(stdout, &r);
			continue;
		}
		if (kj_phase_check(&ph, err, sizeof(err))) {
			snprintf(r.error, sizeof(r.error), "shape: %s", err);
			kj_phase_result_emit(stdout, &r);
			continue;
		}
		kj_phase_cost(&ph, &r.flops, &r.bytes);
		switch (ph.kind) {
		case KJ_PHASE_CONV:
			ops = &kjw_conv_ops;
			break;
		case KJ_PHASE_MATMUL:
			ops = &kjw_matmul_ops;
			break;
		case KJ_PHASE_CUSTOM:
			ops = kj_custom_phase_find(ph.op);
			if (!ops)
				snprintf(r.error, sizeof(r.error), "kernel: no custom phase named '%s' in this worker "
					 "(src/pipeline/worker/worker_custom.c lists them)", ph.op);
			break;
		case KJ_PHASE_SEQ:
			snprintf(r.error, sizeof(r.error), "type: seq phases are replayed by kjoule-replay-worker");
			break;
		default:
			ops = &kjw_simple_ops;
		}
		if (!ops) {
			kj_phase_result_emit(stdout, &r);
			continue;
		}
		int rc = kj_kernel_iter(&ph, ops, &o, &r);
		kj_phase_result_emit(stdout, &r);
		if (rc == KJ_EGPU) {
			fprintf(stderr, "kjoule-pipeline-worker: the CUDA context is unusable after '%s': exiting\n",
				ph.name);
			return 3;
		}
	}
	return 0;
}
