/* kjoule-nccl-worker: the GPU side of `kjoule sweep` for the NCCL collectives. `kjoule sweep`
 * starts one a GPU (KJ_NCCL_RANK, KJ_NCCL_NRANKS, KJ_NCCL_DEVICE, KJ_NCCL_DEVICES, KJ_NCCL_ID_FILE:
 * src/sweep/kj_sweep_internal.h); rank 0 makes the ncclUniqueId and leaves it in the file, the
 * others wait for it, and all join one communicator (ncclCommInitRank). Then every rank reads the
 * same request lines on stdin and runs the same collectives; rank 0's answer on stdout is the
 * row (protocol: src/sweep/kj_sweep_op.h; the driver does not read the other ranks' answers).
 * --list prints the operators it implements. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kj_sweep_op.h"
#include "nccl_worker.h"

static int env_int(const char *name, int dflt)
{
	const char *s = getenv(name);
	char *end;
	long x = s && *s ? strtol(s, &end, 10) : dflt;
	return s && *s && *end ? dflt : (int)x;
}

/* Rank 0: NVML's index of every GPU of the communicator (CUDA devices KJ_NCCL_DEVICES, matched by
 * PCI bus id: NVML ignores CUDA_VISIBLE_DEVICES). nvml_ok set when all are found. */
static void nvml_map(struct nw_ctx *c)
{
	const char *devs = getenv("KJ_NCCL_DEVICES");
	if (kj_gpu_nvml_open(&c->nvml, c->nvml_why, sizeof(c->nvml_why)))
		return;
	for (int r = 0; r < c->nranks; r++) {
		int cuda = devs ? atoi(devs) : c->device + r;
		char pci[64];
		if (cudaDeviceGetPCIBusId(pci, sizeof(pci), cuda) != cudaSuccess) {
			cudaGetLastError();
			snprintf(c->nvml_why, sizeof(c->nvml_why), "no PCI bus id for CUDA device %d", cuda);
			return;
		}
		c->nvml_index[r] = kj_gpu_nvml_index_by_pci(pci, c->nvml_why, sizeof(c->nvml_why));
		if (c->nvml_index[r] < 0) {
			snprintf(c->nvml_why, sizeof(c->nvml_why), "no NVML device at PCI %s (rank %d)", pci, r);
			return;
		}
		if (devs && (devs = strchr(devs, ',')))
			devs++;
	}
	c->nvml_ok = 1;
}

/* Rank 0 writes the id to KJ_NCCL_ID_FILE (a temporary name renamed into place); the others read
 * it once it appears, waiting up to 120 s. 0, or -1 with why. */
static int share_id(struct nw_ctx *c, ncclUniqueId *id, char *why, size_t len)
{
	const char *path = getenv("KJ_NCCL_ID_FILE");
	char tmp[1100];
	if (!path || !*path) {
		snprintf(why, len, "KJ_NCCL_ID_FILE is not set (kjoule sweep starts this worker)");
		return -1;
	}
	if (c->rank == 0) {
		ncclResult_t e = ncclGetUniqueId(id);
		if (e != ncclSuccess) {
			snprintf(why, len, "ncclGetUniqueId: %s", ncclGetErrorString(e));
			return -1;
		}
		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		FILE *f = fopen(tmp, "wb");
		if (!f || fwrite(id, sizeof(*id), 1, f) != 1 || fclose(f) || rename(tmp, path)) {
			snprintf(why, len, "%s: %s", path, strerror(errno));
			return -1;
		}
		return 0;
	}
	for (int i = 0; i < 120 * 20; i++) {
		FILE *f = fopen(path, "rb");
		if (f) {
			size_t got = fread(id, sizeof(*id), 1, f);
			fclose(f);
			if (got == 1)
				return 0;
		}
		struct timespec ts = {0, 50 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	snprintf(why, len, "%s did not appear in 120 s (rank 0 did not start?)", path);
	return -1;
}

/* one answer line; figures < 0 are written '-' */
static void answer(const char *status, const struct nw_result *r, const char *msg)
{
	char us[32] = "-", uj[32] = "-", unc[32] = "-", err[32] = "-";
	if (r && r->us > 0)
		snprintf(us, sizeof(us), "%.4f", r->us);
	if (r && r->uj >= 0) {
		snprintf(uj, sizeof(uj), "%.3f", r->uj);
		snprintf(unc, sizeof(unc), "%.3f", r->uj_unc);
	}
	if (r && r->err >= 0)
		snprintf(err, sizeof(err), "%.3g", r->err);
	char clean[400];
	snprintf(clean, sizeof(clean), "%s", msg ? msg : "");
	for (char *s = clean; *s; s++)
		if (*s == '"' || *s == '\n')
			*s = '\'';
	printf("KJ_SWEEP status=%s f_us=%s b_us=- f_uj=%s f_uj_unc=%s b_uj=- b_uj_unc=- err_f=%s err_b=- "
	       "msg=\"%s\"\n", status, us, uj, unc, err, clean);
	fflush(stdout);
}

/* one request: "OP PRECISION GPUS,BYTES ENERGY CHECK" */
static void serve(struct nw_ctx *c, const char *line)
{
	char op[64], prec[16], shape[128];
	int energy = 0, check = 0, p;
	long long g = 0, bytes = 0;
	struct nw_result r;
	char msg[300] = "";
	const struct kj_sweep_op *o;
	if (sscanf(line, "%63s %15s %127s %d %d", op, prec, shape, &energy, &check) != 5 ||
	    sscanf(shape, "%lld,%lld", &g, &bytes) != 2) {
		answer("error", NULL, "malformed request (OP PRECISION GPUS,BYTES ENERGY CHECK)");
		return;
	}
	if (!(o = kj_sweep_op_find(op)) || !o->collective) {
		answer("unsupported", NULL, "not a collective kjoule-nccl-worker runs");
		return;
	}
	if ((p = kj_precision_parse(prec)) < 0 || g != c->nranks || bytes < 1) {
		snprintf(msg, sizeof(msg), "%s %s: this communicator has %d ranks; the shape asks gpus=%lld, bytes=%lld",
			 op, prec, c->nranks, g, bytes);
		answer("error", NULL, msg);
		return;
	}
	int rc = nw_measure(c, op, p, bytes, energy, check, &r, msg, sizeof(msg));
	if (rc == 1)
		answer("oom", NULL, msg);
	else if (rc < 0)
		answer("error", NULL, msg);
	else
		answer("ok", &r, r.why[0] ? r.why : "");
}

int main(int argc, char **argv)
{
	struct nw_ctx c;
	char why[400], *line = NULL;
	size_t cap = 0;
	ncclUniqueId id;
	if (argc > 1 && !strcmp(argv[1], "--list")) {
		for (int i = 0; i < kj_sweep_op_count(); i++) {
			const struct kj_sweep_op *o = kj_sweep_op_at(i);
			if (o->collective)
				printf("%s %s,%s\n", o->name, o->columns[0], o->columns[1]);
		}
		return 0;
	}
	memset(&c, 0, sizeof(c));
	c.rank = env_int("KJ_NCCL_RANK", 0);
	c.nranks = env_int("KJ_NCCL_NRANKS", 0);
	c.device = env_int("KJ_NCCL_DEVICE", c.rank);
	c.warmup = env_int("KJ_SWEEP_WARMUP", 2);
	c.active = env_int("KJ_SWEEP_ACTIVE", 10);
	c.energy_s = getenv("KJ_NCCL_ENERGY_S") ? atof(getenv("KJ_NCCL_ENERGY_S")) : 2.0;
	if (!(c.energy_s > 0.2 && c.energy_s < 600))
		c.energy_s = 2.0;
	if (c.nranks < 2 || c.nranks > NW_MAX_RANKS || c.rank < 0 || c.rank >= c.nranks) {
		fprintf(stderr, "kjoule-nccl-worker: KJ_NCCL_RANK %d of KJ_NCCL_NRANKS %d: not a rank of a "
			"communicator of 2 to %d (kjoule sweep starts this worker)\n", c.rank, c.nranks, NW_MAX_RANKS);
		return 2;
	}
	cudaError_t ce = cudaSetDevice(c.device);
	if (ce == cudaSuccess)
		ce = cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking);
	if (ce == cudaSuccess)
		ce = cudaMalloc((void **)&c.d_agree, 2 * sizeof(int64_t));
	if (ce != cudaSuccess) {
		fprintf(stderr, "kjoule-nccl-worker rank %d: CUDA device %d: %s\n", c.rank, c.device,
			cudaGetErrorString(ce));
		return 1;
	}
	if (share_id(&c, &id, why, sizeof(why))) {
		fprintf(stderr, "kjoule-nccl-worker rank %d: %s\n", c.rank, why);
		return 1;
	}
	ncclResult_t ne = ncclCommInitRank(&c.comm, c.nranks, id, c.rank);
	if (ne != ncclSuccess) {
		fprintf(stderr, "kjoule-nccl-worker rank %d: ncclCommInitRank: %s\n", c.rank, ncclGetErrorString(ne));
		return 1;
	}
	if (c.rank == 0)
		nvml_map(&c);
	while (getline(&line, &cap, stdin) > 0)
		if (line[0] != '\n')
			serve(&c, line);
	free(line);
	ncclCommDestroy(c.comm);
	if (c.nvml.ctx)
		kj_gpu_backend_close(&c.nvml);
	cudaFree(c.d_agree);
	cudaStreamDestroy(c.stream);
	return 0;
}
