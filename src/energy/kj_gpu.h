/* GPU telemetry back-end: a table of function pointers (nvtop style) so the sampler and the
 * amortised primitive read NVML through dlopen() and tests can plug in a fake back-end.
 * Read-only by design: nothing here changes any GPU setting. */
#ifndef KJ_GPU_H
#define KJ_GPU_H

#include <stddef.h>
#include <stdint.h>

/** Facts about one GPU (strings empty and numbers -1 when the driver does not say). */
struct kj_gpu_info {
	char uuid[96];
	char name[96];
	char pci_bus_id[32];
	char driver_version[64];
	int64_t power_limit_mw;
	int64_t memory_bytes;
	int sm_clock_max_mhz;
	int mem_clock_max_mhz;
	int energy_counter; /* 1: nvmlDeviceGetTotalEnergyConsumption works on this GPU */
};

/** Slowly changing state; fields not read are -1. */
struct kj_gpu_state {
	int sm_clock_mhz;
	int mem_clock_mhz;
	int temp_c;
	int util_gpu_pct;
	int util_mem_pct;
	int64_t throttle_reasons; /* NVML clocks-event reason bits */
};

/** One process the driver lists as running on a GPU (nvmlDeviceGet*RunningProcesses). */
struct kj_gpu_proc {
	int64_t pid;               /* as the driver reports it: possibly another pid namespace's */
	int64_t used_memory_bytes; /* -1: not reported */
	int sm_util_pct;           /* -1: no per-process utilisation sample */
	int type;                  /* 1 compute, 2 graphics, 3 both */
};

/**
 * Back-end operations. Each returns 0 or the vendor's positive error code; strerror() turns such
 * a code into the vendor's text. unsupported(code) says whether the code means "this GPU does not
 * have that reading" (so a field is absent, not an error). Functions may be called from several
 * threads at once for different or the same device.
 */
struct kj_gpu_backend {
	const char *name;
	void *ctx;
	int (*count)(void *ctx, int *n);
	int (*info)(void *ctx, int idx, struct kj_gpu_info *out);
	/* inst_mw: instantaneous power (-1 if absent); avg_mw: the driver's averaged power */
	int (*power)(void *ctx, int idx, int64_t *inst_mw, int64_t *avg_mw);
	int (*energy)(void *ctx, int idx, uint64_t *mj);
	int (*state)(void *ctx, int idx, struct kj_gpu_state *out);
	int (*sm_clock)(void *ctx, int idx, int *mhz);
	const char *(*strerror)(void *ctx, int code);
	int (*unsupported)(void *ctx, int code);
	void (*close)(void *ctx);
	/* optional (NULL: not available): the processes running on a GPU, up to max in out[], their
	 * number in *n; 0, or the vendor's code (no permission, not supported) */
	int (*processes)(void *ctx, int idx, struct kj_gpu_proc *out, int max, int *n);
	/* optional: *on = 1 when MIG mode is enabled on the GPU */
	int (*mig_mode)(void *ctx, int idx, int *on);
	/* optional: the process name the driver knows for pid (empty when unknown) */
	int (*process_name)(void *ctx, int64_t pid, char *out, size_t len);
	/* optional: the clocks-event (throttle) reason bits now (nvmlDeviceGetCurrentClocksEventReasons;
	 * kj_clock_state.h names them); cheap enough to read beside sm_clock */
	int (*clocks_event_reasons)(void *ctx, int idx, uint64_t *mask);
};

/**
 * @brief Open NVML through dlopen("libnvidia-ml.so.1") and fill *be.
 * @param why  on failure receives a sentence saying why (library absent, nvmlInit error text)
 * @return 0, or KJ_ENODEV when NVML is absent or fails to initialise.
 */
int kj_gpu_nvml_open(struct kj_gpu_backend *be, char *why, size_t why_len);

/**
 * @brief NVML's index of the GPU at PCI bus id pci ("0000:65:00.0" as CUDA writes it, or NVML's
 *        "00000000:65:00.0"). NVML ignores CUDA_VISIBLE_DEVICES, so a CUDA ordinal is not an NVML
 *        index: every reader of a GPU's energy counter goes through this.
 * @return the index, or -1 with a sentence in why (NVML absent, no GPU at that address).
 */
int kj_gpu_nvml_index_by_pci(const char *pci, char *why, size_t why_len);

/** @brief Release a back-end opened by kj_gpu_nvml_open(); accepts a zeroed struct. */
void kj_gpu_backend_close(struct kj_gpu_backend *be);

/** @brief CLOCK_MONOTONIC now, in nanoseconds. */
int64_t kj_now_ns(void);
/** @brief CLOCK_REALTIME now, in nanoseconds since the Unix epoch. */
int64_t kj_realtime_ns(void);

#endif
