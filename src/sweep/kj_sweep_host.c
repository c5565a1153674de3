/* The sweep's worker processes, hosted by kj_proc: starting them (one kjoule-sweep-worker a GPU,
 * or the ranks of one NCCL communicator, one kjoule-nccl-worker a GPU), requests out, answers in,
 * stopping them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kj_error.h"
#include "kj_proc.h"
#include "kj_sweep.h"
#include "kj_sweep_internal.h"

/* kj_sweep_internal.h */
int kj_sweep_parse_answer(const char *line, struct answer *a)
{
	char *fields[] = {a->f_us, a->b_us, a->f_uj, a->f_uj_unc, a->b_uj, a->b_uj_unc, a->err_f, a->err_b,
			  a->f_mhz, a->b_mhz, a->f_uj_warm, a->f_uj_cold, a->b_uj_warm, a->b_uj_cold};
	static const char *const keys[] = {"f_us=", "b_us=", "f_uj=", "f_uj_unc=", "b_uj=", "b_uj_unc=",
					   "err_f=", "err_b=", "f_mhz=", "b_mhz=", "f_uj_warm=", "f_uj_cold=",
					   "b_uj_warm=", "b_uj_cold="};
	enum { NFIELDS = sizeof(keys) / sizeof(keys[0]) };
	memset(a, 0, sizeof(*a));
	for (int i = 0; i < NFIELDS; i++)
		strcpy(fields[i], "-");
	strcpy(a->f_algo, "-");
	strcpy(a->b_algo, "-");
	if (strncmp(line, "KJ_SWEEP ", 9))
		return -1;
	const char *s = line + 9;
	while (*s) {
		while (*s == ' ')
			s++;
		if (!*s)
			break;
		if (!strncmp(s, "msg=", 4)) {
			s += 4;
			int q = *s == '"';
			s += q;
			size_t n = 0;
			while (*s && (q ? *s != '"' : *s != ' ') && n + 1 < sizeof(a->msg))
				a->msg[n++] = *s++;
			a->msg[n] = '\0';
			while (*s && *s != ' ')
				s++;
			continue;
		}
		size_t len = strcspn(s, " ");
		char tok[128];
		snprintf(tok, sizeof(tok), "%.*s", (int)(len < 127 ? len : 127), s);
		if (!strncmp(tok, "status=", 7))
			snprintf(a->status, sizeof(a->status), "%.15s", tok + 7);
		if (!strncmp(tok, "f_algo=", 7) || !strncmp(tok, "b_algo=", 7)) {
			const char *w = tok + 7; /* cuBLASLt ids, or an implementation's name (flash_atten) */
			int ok = kj_sweep_impl_ok(w) && !strchr(w, '/'); /* '/' joins the two in a CSV */
			snprintf(tok[0] == 'f' ? a->f_algo : a->b_algo, sizeof(a->f_algo), "%.95s", ok ? w : "-");
		}
		for (int i = 0; i < NFIELDS; i++) {
			size_t kl = strlen(keys[i]);
			if (!strncmp(tok, keys[i], kl))
				snprintf(fields[i], 32, "%.31s", kj_sweep_is_number(tok + kl) ? tok + kl : "-");
		}
		s += len;
	}
	if (strcmp(a->status, "ok") && strcmp(a->status, "oom") && strcmp(a->status, "error") &&
	    strcmp(a->status, "unsupported"))
		return -1;
	return 0;
}


/* The entry `index` of CUDA_VISIBLE_DEVICES into dev (the CUDA index itself when unset). */
static void visible_entry(int index, char *dev, size_t len)
{
	const char *vis = getenv("CUDA_VISIBLE_DEVICES");
	dev[0] = '\0';
	if (vis && *vis) {
		const char *s = vis;
		for (int i = 0; i < index && s; i++)
			if ((s = strchr(s, ',')))
				s++;
		if (s)
			snprintf(dev, len, "%.*s", (int)strcspn(s, ","), s);
	}
	if (!dev[0])
		snprintf(dev, len, "%d", index);
}

/* Append "NAME=value" to env[*n] (copies into the caller's store, `left` bytes at *at). */
static void env_add(char **env, int *n, char **at, size_t *left, const char *name, const char *value)
{
	int k = snprintf(*at, *left, "%s=%s", name, value);
	if (k < 0 || (size_t)k >= *left)
		return;
	env[(*n)++] = *at;
	*at += k + 1;
	*left -= (size_t)k + 1;
}

/* Start path as rank `rank` of w's group (rank < 0: a single worker narrowed to its GPU `device`)
 * into *out: the config's iteration counts, NVLink multicast off where the user did not say
 * (collectives through NVLS, PyTorch's symmetric memory and NVSHMEM all use it), the rank's
 * facts. 0 or KJ_E*. */
static int spawn(const char *path, int device, int rank, const struct worker *w,
		 const struct kj_sweep_config *cfg, double timeout_s, struct kj_proc **out)
{
	char store[2048], *at = store, *env[16], num[32], dev[64], devs[256] = "", idf[300];
	size_t left = sizeof(store);
	int n = 0;
	snprintf(num, sizeof(num), "%d", cfg->wait);
	env_add(env, &n, &at, &left, "KJ_SWEEP_WAIT", num);
	snprintf(num, sizeof(num), "%d", cfg->warmup);
	env_add(env, &n, &at, &left, "KJ_SWEEP_WARMUP", num);
	snprintf(num, sizeof(num), "%d", cfg->active);
	env_add(env, &n, &at, &left, "KJ_SWEEP_ACTIVE", num);
	static const char *const multicast_off[][2] = {
		{"NCCL_NVLS_ENABLE", "0"}, {"TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"}, {"NVSHMEM_DISABLE_NVLS", "1"}};
	for (size_t i = 0; i < sizeof(multicast_off) / sizeof(multicast_off[0]); i++)
		if (!getenv(multicast_off[i][0]))
			env_add(env, &n, &at, &left, multicast_off[i][0], multicast_off[i][1]);
	if (rank < 0) {
		visible_entry(device, dev, sizeof(dev));
		env_add(env, &n, &at, &left, "CUDA_VISIBLE_DEVICES", dev);
	} else {
		for (int r = 0; r < w->ranks; r++)
			snprintf(devs + strlen(devs), sizeof(devs) - strlen(devs), "%s%d", r ? "," : "", w->device + r);
		snprintf(num, sizeof(num), "%d", rank);
		env_add(env, &n, &at, &left, "KJ_NCCL_RANK", num);
		snprintf(num, sizeof(num), "%d", w->ranks);
		env_add(env, &n, &at, &left, "KJ_NCCL_NRANKS", num);
		snprintf(num, sizeof(num), "%d", device);
		env_add(env, &n, &at, &left, "KJ_NCCL_DEVICE", num);
		env_add(env, &n, &at, &left, "KJ_NCCL_DEVICES", devs);
		snprintf(idf, sizeof(idf), "%s/nccl.id", w->id_dir);
		env_add(env, &n, &at, &left, "KJ_NCCL_ID_FILE", idf);
	}
	env[n] = NULL;
	char *argv[] = {(char *)path, NULL};
	struct kj_proc_opts o = {.env = (const char *const *)env, .requests = 1, .discard_stdout = rank > 0,
				 .limit_s = rank > 0 ? 0 : timeout_s, .clock = KJ_PROC_REQUEST};
	return kj_proc_spawn(argv, &o, out);
}

int kj_sweep_worker_start(struct worker *w, const char *path, int device, int ranks,
			  const struct kj_sweep_config *cfg, double timeout_s)
{
	memset(w, 0, sizeof(*w));
	w->device = device;
	w->shape = -1;
	w->ranks = ranks < 1 ? 1 : ranks > KJ_SWEEP_MAX_RANKS ? KJ_SWEEP_MAX_RANKS : ranks;
	if (w->ranks > 1) {
		const char *tmp = getenv("TMPDIR");
		snprintf(w->id_dir, sizeof(w->id_dir), "%s/kjoule-nccl-XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(w->id_dir)) {
			w->id_dir[0] = '\0';
			return KJ_EIO;
		}
	}
	if (spawn(path, device, w->ranks > 1 ? 0 : -1, w, cfg, timeout_s, &w->proc)) {
		if (w->id_dir[0])
			rmdir(w->id_dir);
		w->id_dir[0] = '\0';
		return KJ_EIO;
	}
	for (int r = 1; r < w->ranks; r++)
		if (spawn(path, device + r, r, w, cfg, 0, &w->peer[r])) {
			kj_sweep_worker_stop(w);
			return KJ_EIO;
		}
	return 0;
}

void kj_sweep_worker_stop(struct worker *w)
{
	kj_proc_close(w->proc);
	w->proc = NULL;
	for (int r = 1; r < w->ranks; r++) {
		kj_proc_close(w->peer[r]);
		w->peer[r] = NULL;
	}
	if (w->id_dir[0]) {
		char f[300];
		snprintf(f, sizeof(f), "%s/nccl.id", w->id_dir);
		unlink(f);
		rmdir(w->id_dir);
		w->id_dir[0] = '\0';
	}
}

int kj_sweep_worker_peer_died(struct worker *w)
{
	for (int r = 1; w->proc && r < w->ranks; r++)
		if (w->peer[r] && kj_proc_ended(w->peer[r])) {
			kj_proc_close(w->peer[r]);
			w->peer[r] = NULL;
			kj_proc_kill(w->proc); /* rank 0 would wait in the collective for ever */
			return 1;
		}
	return 0;
}

void kj_sweep_request(const struct kj_sweep_config *cfg, int precision, const int64_t *v,
		      int energy, int check, char *buf, size_t len)
{
	char shape[256];
	kj_sweep_shape_format(v, cfg->ncols, shape, sizeof(shape));
	snprintf(buf, len, "%s %s %s %d %d\n", cfg->op->name, kj_precision_name(precision), shape,
		 energy, check);
}

int kj_sweep_worker_send(struct worker *w, const struct kj_sweep_config *cfg, int precision,
			 const int64_t *v, int energy, int check)
{
	char line[512];
	kj_sweep_request(cfg, precision, v, energy, check, line, sizeof(line));
	for (int r = 1; r < w->ranks; r++)
		if (w->peer[r] && kj_proc_send(w->peer[r], line))
			return KJ_EIO;
	return kj_proc_send(w->proc, line) ? KJ_EIO : 0;
}
