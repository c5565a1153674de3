/* The sweep's worker processes: starting them (one kjoule-sweep-worker a GPU, or the ranks of
 * one NCCL communicator, one kjoule-nccl-worker a GPU), requests out, answers in, stopping them. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kj_error.h"
#include "kj_gpu.h"
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

/* In a child before exec: the config's iteration counts and NVLink multicast off where the user
 * did not say (collectives through NVLS, PyTorch's symmetric memory and NVSHMEM all use it). */
static void child_env(const struct kj_sweep_config *cfg)
{
	char num[32];
	snprintf(num, sizeof(num), "%d", cfg->wait);
	setenv("KJ_SWEEP_WAIT", num, 1);
	snprintf(num, sizeof(num), "%d", cfg->warmup);
	setenv("KJ_SWEEP_WARMUP", num, 1);
	snprintf(num, sizeof(num), "%d", cfg->active);
	setenv("KJ_SWEEP_ACTIVE", num, 1);
	setenv("NCCL_NVLS_ENABLE", "0", 0);
	setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1", 0);
	setenv("NVSHMEM_DISABLE_NVLS", "1", 0);
}

/* Fork and exec path with stdin from in_fd and stdout to out_fd (-1: /dev/null); rank < 0: a
 * single worker narrowed to its GPU, else rank `rank` of w's group. The pid, or -1. */
static pid_t spawn(const char *path, int in_fd, int out_fd, int device, int rank, const struct worker *w,
		   const struct kj_sweep_config *cfg)
{
	char dev[64], num[32], devs[256] = "", idf[300];
	if (rank < 0)
		visible_entry(device, dev, sizeof(dev));
	for (int r = 0; rank >= 0 && r < w->ranks; r++)
		snprintf(devs + strlen(devs), sizeof(devs) - strlen(devs), "%s%d", r ? "," : "", w->device + r);
	fflush(NULL);
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	dup2(in_fd, 0);
	if (out_fd >= 0) {
		dup2(out_fd, 1);
	} else {
		int nul = open("/dev/null", O_WRONLY);
		if (nul >= 0)
			dup2(nul, 1);
	}
	child_env(cfg);
	if (rank < 0) {
		setenv("CUDA_VISIBLE_DEVICES", dev, 1);
	} else {
		snprintf(num, sizeof(num), "%d", rank);
		setenv("KJ_NCCL_RANK", num, 1);
		snprintf(num, sizeof(num), "%d", w->ranks);
		setenv("KJ_NCCL_NRANKS", num, 1);
		snprintf(num, sizeof(num), "%d", device);
		setenv("KJ_NCCL_DEVICE", num, 1);
		setenv("KJ_NCCL_DEVICES", devs, 1);
		snprintf(idf, sizeof(idf), "%s/nccl.id", w->id_dir);
		setenv("KJ_NCCL_ID_FILE", idf, 1);
	}
	execl(path, path, (char *)NULL);
	fprintf(stderr, "kjoule: cannot start %s: %s\n", path, strerror(errno));
	_exit(127);
}

/* A pipe whose ends no other child inherits (it would hold a worker's stdin open). */
static int pipe_cloexec(int p[2])
{
	if (pipe(p))
		return -1;
	fcntl(p[0], F_SETFD, FD_CLOEXEC);
	fcntl(p[1], F_SETFD, FD_CLOEXEC);
	return 0;
}

int kj_sweep_worker_start(struct worker *w, const char *path, int device, int ranks,
			  const struct kj_sweep_config *cfg)
{
	int in[2], out[2];
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
	if (pipe_cloexec(in))
		goto fail;
	if (pipe_cloexec(out)) {
		close(in[0]);
		close(in[1]);
		goto fail;
	}
	w->pid = spawn(path, in[0], out[1], device, w->ranks > 1 ? 0 : -1, w, cfg);
	close(in[0]);
	close(out[1]);
	w->in_fd = in[1];
	w->out_fd = out[0];
	if (w->pid < 0) {
		w->pid = 0;
		close(w->in_fd);
		close(w->out_fd);
		goto fail;
	}
	for (int r = 1; r < w->ranks; r++) {
		int p[2];
		if (pipe_cloexec(p)) {
			kj_sweep_worker_stop(w);
			return KJ_EIO;
		}
		w->peer_pid[r] = spawn(path, p[0], -1, device + r, r, w, cfg);
		close(p[0]);
		w->peer_in[r] = p[1];
		if (w->peer_pid[r] < 0) {
			w->peer_pid[r] = 0;
			kj_sweep_worker_stop(w);
			return KJ_EIO;
		}
	}
	return 0;
fail:
	if (w->id_dir[0])
		rmdir(w->id_dir);
	w->id_dir[0] = '\0';
	return KJ_EIO;
}

/* Reap pid: wait up to grace_ms for it to end, then SIGKILL it and wait. */
static void reap(pid_t pid, int grace_ms)
{
	int st;
	for (int t = 0; t < grace_ms; t += 50) {
		if (waitpid(pid, &st, WNOHANG) != 0)
			return;
		struct timespec ts = {0, 50 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
}

void kj_sweep_worker_stop(struct worker *w)
{
	int st;
	if (w->pid > 0) {
		close(w->in_fd);
		close(w->out_fd);
		if (w->ranks > 1)
			reap(w->pid, 5000);
		else
			waitpid(w->pid, &st, 0);
		w->pid = 0;
	}
	for (int r = 1; r < w->ranks; r++)
		if (w->peer_pid[r] > 0) {
			close(w->peer_in[r]);
			reap(w->peer_pid[r], 5000);
			w->peer_pid[r] = 0;
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
	int st;
	for (int r = 1; w->pid > 0 && r < w->ranks; r++)
		if (w->peer_pid[r] > 0 && waitpid(w->peer_pid[r], &st, WNOHANG) == w->peer_pid[r]) {
			w->peer_pid[r] = 0;
			kill(w->pid, SIGKILL); /* rank 0 would wait in the collective for ever */
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
	ssize_t n = (ssize_t)strlen(line);
	w->sent_s = kj_now_ns() / 1e9;
	for (int r = 1; r < w->ranks; r++)
		if (w->peer_pid[r] > 0 && write(w->peer_in[r], line, n) != n)
			return KJ_EIO;
	return write(w->in_fd, line, n) == n ? 0 : KJ_EIO;
}

int kj_sweep_worker_line(struct worker *w, char *line, size_t len)
{
	char *nl = memchr(w->buf, '\n', w->have);
	if (!nl)
		return 0;
	size_t n = nl - w->buf;
	snprintf(line, len, "%.*s", (int)n, w->buf);
	memmove(w->buf, nl + 1, w->have - n - 1);
	w->have -= n + 1;
	return 1;
}
