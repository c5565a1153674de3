/* NVML back-end reached at run time through dlopen(): the few declarations kjoule needs are
 * written here by hand (values from NVIDIA's nvml.h), so kjoule builds and runs without NVML.
 * Only query functions are resolved; no setter is ever looked up. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kj_error.h"
#include "kj_gpu.h"

#define NVML_SUCCESS 0
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_FUNCTION_NOT_FOUND 13
#define NVML_CLOCK_SM 1
#define NVML_CLOCK_MEM 2
#define NVML_TEMPERATURE_GPU 0
#define NVML_FI_DEV_POWER_INSTANT 186
#define NVML_VALUE_TYPE_DOUBLE 0
#define NVML_VALUE_TYPE_UNSIGNED_INT 1
#define NVML_VALUE_TYPE_UNSIGNED_LONG 2
#define NVML_VALUE_TYPE_UNSIGNED_LONG_LONG 3
#define NVML_VALUE_TYPE_SIGNED_LONG_LONG 4
#define NVML_VALUE_TYPE_SIGNED_INT 5
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define KJ_NVML_MAX_GPUS 64
#define KJ_NVML_MAX_PROCS 256

typedef void *nvml_dev;
typedef struct {
	unsigned gpu, memory;
} nvml_util;
typedef struct {
	unsigned long long total, free, used;
} nvml_memory;
typedef union {
	double dVal;
	int siVal;
	unsigned uiVal;
	unsigned long ulVal;
	unsigned long long ullVal;
	long long sllVal;
} nvml_value;
typedef struct {
	unsigned fieldId;
	unsigned scopeId;
	long long timestamp;
	long long latencyUsec;
	int valueType;
	int nvmlReturn;
	nvml_value value;
} nvml_field;

/* nvmlProcessInfo_v2_t, the layout the _v3 and _v2 process lists fill */
typedef struct {
	unsigned pid;
	unsigned long long usedGpuMemory;
	unsigned gpuInstanceId, computeInstanceId;
} nvml_proc;
/* nvmlProcessUtilizationSample_t */
typedef struct {
	unsigned pid;
	unsigned long long timeStamp;
	unsigned smUtil, memUtil, encUtil, decUtil;
} nvml_proc_util;
#define NVML_VALUE_NOT_AVAILABLE_ULL 0xFFFFFFFFFFFFFFFFULL

struct nvml_ctx {
	void *lib;
	int n;
	nvml_dev dev[KJ_NVML_MAX_GPUS];
	int instant_ok[KJ_NVML_MAX_GPUS]; /* 0 unknown, 1 works, -1 not supported */
	int (*init)(void);
	int (*shutdown)(void);
	const char *(*error_string)(int);
	int (*get_count)(unsigned *);
	int (*get_handle)(unsigned, nvml_dev *);
	int (*get_uuid)(nvml_dev, char *, unsigned);
	int (*get_name)(nvml_dev, char *, unsigned);
	int (*get_pci)(nvml_dev, void *);
	int (*get_driver)(char *, unsigned);
	int (*get_power_limit)(nvml_dev, unsigned *);
	int (*get_memory)(nvml_dev, nvml_memory *);
	int (*get_max_clock)(nvml_dev, int, unsigned *);
	int (*get_power)(nvml_dev, unsigned *);
	int (*get_fields)(nvml_dev, int, nvml_field *);
	int (*get_energy)(nvml_dev, unsigned long long *);
	int (*get_clock)(nvml_dev, int, unsigned *);
	int (*get_temp)(nvml_dev, int, unsigned *);
	int (*get_util)(nvml_dev, nvml_util *);
	int (*get_reasons)(nvml_dev, unsigned long long *);
	int (*get_compute_procs)(nvml_dev, unsigned *, nvml_proc *);
	int (*get_graphics_procs)(nvml_dev, unsigned *, nvml_proc *);
	int (*get_proc_util)(nvml_dev, nvml_proc_util *, unsigned *, unsigned long long);
	int (*get_mig_mode)(nvml_dev, unsigned *, unsigned *);
	int (*get_proc_name)(unsigned, char *, unsigned);
	unsigned long long util_seen[KJ_NVML_MAX_GPUS]; /* newest per-process sample read */
};

int64_t kj_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t kj_realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *sym(void *lib, const char *a, const char *b)
{
	void *p = dlsym(lib, a);
	if (!p && b)
		p = dlsym(lib, b);
	return p;
}

static int n_count(void *c, int *n)
{
	*n = ((struct nvml_ctx *)c)->n;
	return 0;
}

static int bad_index(struct nvml_ctx *c, int idx)
{
	return idx < 0 || idx >= c->n;
}

static int n_info(void *vc, int idx, struct kj_gpu_info *o)
{
	struct nvml_ctx *c = vc;
	unsigned u = 0;
	unsigned long long e = 0;
	char pci[256];
	nvml_memory m;
	int rc;

	memset(o, 0, sizeof(*o));
	o->power_limit_mw = o->memory_bytes = -1;
	o->sm_clock_max_mhz = o->mem_clock_max_mhz = -1;
	if (bad_index(c, idx))
		return 2; /* NVML_ERROR_INVALID_ARGUMENT */
	rc = c->get_uuid(c->dev[idx], o->uuid, sizeof(o->uuid));
	if (rc)
		return rc;
	if (c->get_name)
		c->get_name(c->dev[idx], o->name, sizeof(o->name));
	memset(pci, 0, sizeof(pci));
	/* the first 16 bytes of nvmlPciInfo_t are the bus id in every version of the struct */
	if (c->get_pci && !c->get_pci(c->dev[idx], pci)) {
		memcpy(o->pci_bus_id, pci, 16);
		o->pci_bus_id[15] = 0;
	}
	if (c->get_driver)
		c->get_driver(o->driver_version, sizeof(o->driver_version));
	if (c->get_power_limit && !c->get_power_limit(c->dev[idx], &u))
		o->power_limit_mw = u;
	if (c->get_memory && !c->get_memory(c->dev[idx], &m))
		o->memory_bytes = (int64_t)m.total;
	if (c->get_max_clock && !c->get_max_clock(c->dev[idx], NVML_CLOCK_SM, &u))
		o->sm_clock_max_mhz = (int)u;
	if (c->get_max_clock && !c->get_max_clock(c->dev[idx], NVML_CLOCK_MEM, &u))
		o->mem_clock_max_mhz = (int)u;
	o->energy_counter = c->get_energy && !c->get_energy(c->dev[idx], &e);
	return 0;
}

static int64_t field_value(const nvml_field *f)
{
	switch (f->valueType) {
	case NVML_VALUE_TYPE_DOUBLE: return (int64_t)f->value.dVal;
	case NVML_VALUE_TYPE_UNSIGNED_INT: return f->value.uiVal;
	case NVML_VALUE_TYPE_UNSIGNED_LONG: return (int64_t)f->value.ulVal;
	case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: return (int64_t)f->value.ullVal;
	case NVML_VALUE_TYPE_SIGNED_LONG_LONG: return f->value.sllVal;
	case NVML_VALUE_TYPE_SIGNED_INT: return f->value.siVal;
	default: return -1;
	}
}

static int n_power(void *vc, int idx, int64_t *inst_mw, int64_t *avg_mw)
{
	struct nvml_ctx *c = vc;
	unsigned u = 0;
	int rc;

	*inst_mw = *avg_mw = -1;
	if (bad_index(c, idx))
		return 2;
	if (c->get_fields && c->instant_ok[idx] >= 0) {
		nvml_field f;
		memset(&f, 0, sizeof(f));
		f.fieldId = NVML_FI_DEV_POWER_INSTANT;
		rc = c->get_fields(c->dev[idx], 1, &f);
		if (!rc && !f.nvmlReturn) {
			*inst_mw = field_value(&f);
			c->instant_ok[idx] = 1;
		} else if (c->instant_ok[idx] == 0) {
			c->instant_ok[idx] = -1; /* never worked: stop asking */
		}
	}
	rc = c->get_power(c->dev[idx], &u);
	if (rc)
		return rc;
	*avg_mw = u;
	return 0;
}

static int n_energy(void *vc, int idx, uint64_t *mj)
{
	struct nvml_ctx *c = vc;
	unsigned long long e = 0;
	int rc;
	if (bad_index(c, idx))
		return 2;
	if (!c->get_energy)
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	rc = c->get_energy(c->dev[idx], &e);
	if (!rc)
		*mj = e;
	return rc;
}

static int n_sm_clock(void *vc, int idx, int *mhz)
{
	struct nvml_ctx *c = vc;
	unsigned u = 0;
	int rc;
	if (bad_index(c, idx))
		return 2;
	rc = c->get_clock(c->dev[idx], NVML_CLOCK_SM, &u);
	if (!rc)
		*mhz = (int)u;
	return rc;
}

static int n_reasons(void *vc, int idx, uint64_t *mask)
{
	struct nvml_ctx *c = vc;
	unsigned long long r = 0;
	int rc;
	if (bad_index(c, idx))
		return 2;
	if (!c->get_reasons)
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	rc = c->get_reasons(c->dev[idx], &r);
	if (!rc)
		*mask = (uint64_t)r;
	return rc;
}

static int n_state(void *vc, int idx, struct kj_gpu_state *o)
{
	struct nvml_ctx *c = vc;
	unsigned u = 0;
	unsigned long long r = 0;
	nvml_util ut;
	int rc;

	o->sm_clock_mhz = o->mem_clock_mhz = o->temp_c = o->util_gpu_pct = o->util_mem_pct = -1;
	o->throttle_reasons = -1;
	if (bad_index(c, idx))
		return 2;
	rc = c->get_clock(c->dev[idx], NVML_CLOCK_SM, &u);
	if (rc && rc != NVML_ERROR_NOT_SUPPORTED)
		return rc;
	if (!rc)
		o->sm_clock_mhz = (int)u;
	if (!c->get_clock(c->dev[idx], NVML_CLOCK_MEM, &u))
		o->mem_clock_mhz = (int)u;
	if (c->get_temp && !c->get_temp(c->dev[idx], NVML_TEMPERATURE_GPU, &u))
		o->temp_c = (int)u;
	if (c->get_util && !c->get_util(c->dev[idx], &ut)) {
		o->util_gpu_pct = (int)ut.gpu;
		o->util_mem_pct = (int)ut.memory;
	}
	if (c->get_reasons && !c->get_reasons(c->dev[idx], &r))
		o->throttle_reasons = (int64_t)r;
	return 0;
}

/* Adds the processes of one list (compute or graphics) to out[], merging a pid listed twice. */
static int add_procs(int (*get)(nvml_dev, unsigned *, nvml_proc *), nvml_dev d, int type,
		     struct kj_gpu_proc *out, int max, int *n)
{
	nvml_proc buf[KJ_NVML_MAX_PROCS];
	unsigned cnt = KJ_NVML_MAX_PROCS;
	int rc = get(d, &cnt, buf);
	if (rc == NVML_ERROR_INSUFFICIENT_SIZE)
		cnt = KJ_NVML_MAX_PROCS; /* more than we keep: the first ones are filled */
	else if (rc)
		return rc;
	if (cnt > KJ_NVML_MAX_PROCS)
		cnt = KJ_NVML_MAX_PROCS;
	for (unsigned i = 0; i < cnt; i++) {
		int j;
		for (j = 0; j < *n; j++)
			if (out[j].pid == (int64_t)buf[i].pid)
				break;
		if (j == *n) {
			if (*n >= max)
				continue;
			out[j].pid = buf[i].pid;
			out[j].used_memory_bytes = -1;
			out[j].sm_util_pct = -1;
			out[j].type = 0;
			(*n)++;
		}
		out[j].type |= type;
		if (buf[i].usedGpuMemory != NVML_VALUE_NOT_AVAILABLE_ULL)
			out[j].used_memory_bytes = (int64_t)buf[i].usedGpuMemory;
	}
	return 0;
}

/* The compute and graphics processes of a GPU, with their SM utilisation where the driver keeps
 * per-process samples. Fails only when neither list can be read. */
static int n_processes(void *vc, int idx, struct kj_gpu_proc *out, int max, int *n)
{
	struct nvml_ctx *c = vc;
	int rc1 = NVML_ERROR_FUNCTION_NOT_FOUND, rc2 = NVML_ERROR_FUNCTION_NOT_FOUND;
	*n = 0;
	if (bad_index(c, idx))
		return 2;
	if (c->get_compute_procs)
		rc1 = add_procs(c->get_compute_procs, c->dev[idx], 1, out, max, n);
	if (c->get_graphics_procs)
		rc2 = add_procs(c->get_graphics_procs, c->dev[idx], 2, out, max, n);
	if (rc1 && rc2)
		return rc1 != NVML_ERROR_FUNCTION_NOT_FOUND ? rc1 : rc2;
	if (c->get_proc_util && *n > 0) {
		nvml_proc_util u[KJ_NVML_MAX_PROCS];
		unsigned cnt = KJ_NVML_MAX_PROCS;
		if (!c->get_proc_util(c->dev[idx], u, &cnt, c->util_seen[idx])) {
			for (unsigned i = 0; i < cnt && i < KJ_NVML_MAX_PROCS; i++) {
				if (u[i].timeStamp > c->util_seen[idx])
					c->util_seen[idx] = u[i].timeStamp;
				for (int j = 0; j < *n; j++)
					if (out[j].pid == (int64_t)u[i].pid && (int)u[i].smUtil > out[j].sm_util_pct)
						out[j].sm_util_pct = (int)(u[i].smUtil > 100 ? 100 : u[i].smUtil);
			}
		}
	}
	return 0;
}

static int n_mig_mode(void *vc, int idx, int *on)
{
	struct nvml_ctx *c = vc;
	unsigned cur = 0, pending = 0;
	int rc;
	*on = 0;
	if (bad_index(c, idx))
		return 2;
	if (!c->get_mig_mode)
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	rc = c->get_mig_mode(c->dev[idx], &cur, &pending);
	if (!rc)
		*on = cur == 1;
	return rc;
}

static int n_process_name(void *vc, int64_t pid, char *out, size_t len)
{
	struct nvml_ctx *c = vc;
	if (len)
		out[0] = 0;
	if (!c->get_proc_name || pid <= 0 || pid > 0xffffffffLL)
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	return c->get_proc_name((unsigned)pid, out, (unsigned)len);
}

static const char *n_strerror(void *vc, int code)
{
	struct nvml_ctx *c = vc;
	if (code == NVML_ERROR_FUNCTION_NOT_FOUND && !c->get_energy)
		return "function not found in this NVML";
	return c->error_string ? c->error_string(code) : "NVML error";
}

static int n_unsupported(void *vc, int code)
{
	(void)vc;
	return code == NVML_ERROR_NOT_SUPPORTED || code == NVML_ERROR_FUNCTION_NOT_FOUND;
}

static void n_close(void *vc)
{
	struct nvml_ctx *c = vc;
	if (!c)
		return;
	if (c->shutdown)
		c->shutdown();
	if (c->lib)
		dlclose(c->lib);
	free(c);
}

int kj_gpu_nvml_open(struct kj_gpu_backend *be, char *why, size_t why_len)
{
	struct nvml_ctx *c;
	unsigned n = 0;
	int rc;

	memset(be, 0, sizeof(*be));
	c = calloc(1, sizeof(*c));
	if (!c)
		return KJ_ENOMEM;
	/* KJ_NVML_LIB: a stand-in library for tests (tests/tools/fake_nvml.c) */
	const char *path = getenv("KJ_NVML_LIB");
	if (!path || !*path)
		path = "libnvidia-ml.so.1";
	c->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!c->lib) {
		snprintf(why, why_len, "NVML is absent (dlopen %s: %s): no NVIDIA driver "
			 "on this machine", path, dlerror());
		goto fail;
	}
	c->init = sym(c->lib, "nvmlInit_v2", "nvmlInit");
	c->shutdown = sym(c->lib, "nvmlShutdown", NULL);
	c->error_string = sym(c->lib, "nvmlErrorString", NULL);
	c->get_count = sym(c->lib, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
	c->get_handle = sym(c->lib, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
	c->get_uuid = sym(c->lib, "nvmlDeviceGetUUID", NULL);
	c->get_name = sym(c->lib, "nvmlDeviceGetName", NULL);
	c->get_pci = sym(c->lib, "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo");
	c->get_driver = sym(c->lib, "nvmlSystemGetDriverVersion", NULL);
	c->get_power_limit = sym(c->lib, "nvmlDeviceGetEnforcedPowerLimit", NULL);
	c->get_memory = sym(c->lib, "nvmlDeviceGetMemoryInfo", NULL);
	c->get_max_clock = sym(c->lib, "nvmlDeviceGetMaxClockInfo", NULL);
	c->get_power = sym(c->lib, "nvmlDeviceGetPowerUsage", NULL);
	c->get_fields = sym(c->lib, "nvmlDeviceGetFieldValues", NULL);
	c->get_energy = sym(c->lib, "nvmlDeviceGetTotalEnergyConsumption", NULL);
	c->get_clock = sym(c->lib, "nvmlDeviceGetClockInfo", NULL);
	c->get_temp = sym(c->lib, "nvmlDeviceGetTemperature", NULL);
	c->get_util = sym(c->lib, "nvmlDeviceGetUtilizationRates", NULL);
	c->get_reasons = sym(c->lib, "nvmlDeviceGetCurrentClocksEventReasons",
			     "nvmlDeviceGetCurrentClocksThrottleReasons");
	c->get_compute_procs = sym(c->lib, "nvmlDeviceGetComputeRunningProcesses_v3",
				   "nvmlDeviceGetComputeRunningProcesses_v2");
	c->get_graphics_procs = sym(c->lib, "nvmlDeviceGetGraphicsRunningProcesses_v3",
				    "nvmlDeviceGetGraphicsRunningProcesses_v2");
	c->get_proc_util = sym(c->lib, "nvmlDeviceGetProcessUtilization", NULL);
	c->get_mig_mode = sym(c->lib, "nvmlDeviceGetMigMode", NULL);
	c->get_proc_name = sym(c->lib, "nvmlSystemGetProcessName", NULL);
	if (!c->init || !c->get_count || !c->get_handle || !c->get_uuid || !c->get_power ||
	    !c->get_clock) {
		snprintf(why, why_len, "NVML library lacks required functions (too old a driver?)");
		c->shutdown = NULL;
		goto fail;
	}
	rc = c->init();
	if (rc) {
		snprintf(why, why_len, "nvmlInit failed: %s (error %d)",
			 c->error_string ? c->error_string(rc) : "?", rc);
		c->shutdown = NULL;
		goto fail;
	}
	rc = c->get_count(&n);
	if (rc || n == 0) {
		snprintf(why, why_len, "NVML sees no GPU%s%s", rc ? ": " : "",
			 rc && c->error_string ? c->error_string(rc) : "");
		goto fail;
	}
	if (n > KJ_NVML_MAX_GPUS)
		n = KJ_NVML_MAX_GPUS;
	for (unsigned i = 0; i < n; i++) {
		rc = c->get_handle(i, &c->dev[i]);
		if (rc) {
			snprintf(why, why_len, "nvmlDeviceGetHandleByIndex(%u): %s", i,
				 c->error_string ? c->error_string(rc) : "?");
			goto fail;
		}
	}
	c->n = (int)n;
	be->name = "nvml";
	be->ctx = c;
	be->count = n_count;
	be->info = n_info;
	be->power = n_power;
	be->energy = n_energy;
	be->state = n_state;
	be->sm_clock = n_sm_clock;
	be->processes = c->get_compute_procs || c->get_graphics_procs ? n_processes : NULL;
	be->mig_mode = n_mig_mode;
	be->process_name = n_process_name;
	be->clocks_event_reasons = c->get_reasons ? n_reasons : NULL;
	be->strerror = n_strerror;
	be->unsupported = n_unsupported;
	be->close = n_close;
	return 0;
fail:
	n_close(c);
	return KJ_ENODEV;
}

void kj_gpu_backend_close(struct kj_gpu_backend *be)
{
	if (be && be->close)
		be->close(be->ctx);
	if (be)
		memset(be, 0, sizeof(*be));
}

/* "0000:65:00.0" (CUDA) and "00000000:65:00.0" (NVML) as numbers; 0 or -1. */
static int pci_parse(const char *s, unsigned *dom, unsigned *bus, unsigned *dev, unsigned *fn)
{
	return s && sscanf(s, "%x:%x:%x.%x", dom, bus, dev, fn) == 4 ? 0 : -1;
}

int kj_gpu_nvml_index_by_pci(const char *pci, char *why, size_t why_len)
{
	struct kj_gpu_backend be;
	unsigned d0, b0, v0, f0;
	int n = 0, found = -1;
	if (pci_parse(pci, &d0, &b0, &v0, &f0)) {
		snprintf(why, why_len, "'%s' is not a PCI bus id", pci ? pci : "");
		return -1;
	}
	if (kj_gpu_nvml_open(&be, why, why_len))
		return -1;
	if (be.count(be.ctx, &n) == 0) {
		for (int i = 0; i < n && found < 0; i++) {
			struct kj_gpu_info info;
			unsigned d, b, v, f;
			memset(&info, 0, sizeof(info));
			if (be.info(be.ctx, i, &info) == 0 && !pci_parse(info.pci_bus_id, &d, &b, &v, &f) && d == d0 &&
			    b == b0 && v == v0 && f == f0)
				found = i;
		}
	}
	kj_gpu_backend_close(&be);
	if (found < 0)
		snprintf(why, why_len, "no NVML device at PCI %s", pci);
	return found;
}
