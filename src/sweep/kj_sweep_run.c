/* The sweep driver: resumes from the CSV, feeds the remaining shapes to one worker process per
 * GPU over the line protocol of kj_sweep_op.h, appends and fsyncs one row per answer (so a
 * killed sweep loses at most the shapes in flight) and logs progress as the seed does. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kj_atomic.h"
#include "kj_error.h"
#include "kj_gpu.h"
#include "kj_proc.h"
#include "kj_sweep.h"
#include "kj_sweep_internal.h"

static void fmt_remaining(double s, char *buf, size_t len)
{
	long t = s > 0 ? (long)(s + 0.5) : 0;
	snprintf(buf, len, "%ldd%ldh%ldm%lds", t / 86400, t / 3600 % 24, t / 60 % 60, t % 60);
}

static double now_s(void)
{
	return kj_now_ns() / 1e9;
}

struct run_state {
	const struct kj_sweep_config *cfg;
	const struct kj_sweep_opts *opts;
	int csv_fd;
	FILE *log;
	int64_t total, done_before, done_now, skipped, failed;
	int errors_in_a_row;
	char last_error[256];
	double t0, last_print;
	int write_csv;
};

static void progress(struct run_state *st, int force)
{
	double t = now_s(), el = t - st->t0;
	int64_t n = st->done_before + st->done_now;
	double speed = st->done_now ? el / st->done_now : 0.0;
	char rem[64], when[64], line[512];
	time_t wall = time(NULL);
	struct tm tm;
	localtime_r(&wall, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	fmt_remaining(speed * (st->total - n), rem, sizeof(rem));
	snprintf(line, sizeof(line), "[%s]Kernel: %s_%s | Progress: %lld/%lld=%.2f%% | Speed: %.3fs/sample | Remaining: %s",
		 when, st->cfg->op->name, kj_precision_name(st->opts->precision), (long long)n,
		 (long long)st->total, st->total ? 100.0 * n / st->total : 100.0, speed, rem);
	if (st->log) {
		fprintf(st->log, "%s\n", line);
		fflush(st->log);
	}
	if (!st->opts->quiet && (force || t - st->last_print >= 1.0)) {
		fprintf(stderr, "%s\n", line);
		st->last_print = t;
	}
}

/* Record one answer: a CSV row (ok, oom, unsupported) appended with one write and fsynced, or
 * for an error only a log line, so that a resumed sweep tries the shape again. */
static int record(struct run_state *st, const int64_t *v, const struct answer *a)
{
	char shape[256], row[1024];
	int ok = !strcmp(a->status, "ok");
	kj_sweep_shape_format(v, st->cfg->ncols, shape, sizeof(shape));
	if (!strcmp(a->status, "error") || (ok && !strcmp(a->f_us, "-") && !strcmp(a->b_us, "-"))) {
		st->failed++;
		st->errors_in_a_row++;
		snprintf(st->last_error, sizeof(st->last_error), "%s", a->msg[0] ? a->msg : "no figures");
		if (st->log)
			fprintf(st->log, "error at shape %s: %s\n", shape, a->msg[0] ? a->msg : "no figures");
		kj_warnf("%s %s: shape %s failed: %s", st->cfg->op->name,
			 kj_precision_name(st->opts->precision), shape, a->msg[0] ? a->msg : "no figures");
		return 0;
	}
	st->errors_in_a_row = 0;
	if (!ok) {
		st->skipped++;
		if (st->log)
			fprintf(st->log, "skipped shape %s (%s): %s\n", shape, a->status, a->msg);
	}
	if (!st->write_csv) {
		printf("%s %s F_dur(us)=%s B_dur(us)=%s err_f=%s err_b=%s%s%s\n", shape, a->status,
		       a->f_us, a->b_us, a->err_f, a->err_b, a->msg[0] ? " " : "", a->msg);
		return 0;
	}
	/* the SM clock the energy windows ran at: a clock held down by the power limit shows here */
	if (ok && st->opts->energy && st->log && (strcmp(a->f_mhz, "-") || strcmp(a->b_mhz, "-")))
		fprintf(st->log, "shape %s: SM clock %s MHz forward, %s MHz backward (mean over each energy window)\n",
			shape, a->f_mhz, a->b_mhz);
	/* the energies with warm and cold L2 whose mean the CSV holds ('-' where the cold one was lost
	 * in the flush's, or not asked for: then the CSV holds the warm one) */
	if (ok && st->opts->energy && st->log && (strcmp(a->f_uj_cold, "-") || strcmp(a->b_uj_cold, "-")))
		fprintf(st->log, "shape %s: energy with warm/cold L2 %s/%s uJ forward, %s/%s uJ backward (the CSV"
			" holds the mean where both are known)\n", shape, a->f_uj_warm, a->f_uj_cold, a->b_uj_warm,
			a->b_uj_cold);
	/* the GEMM kernels cuBLASLt chose (where a shape's time jumps from its neighbours', they show
	 * why), or the implementation that ran (flash_atten: cuDNN's or kjoule's, never to be mixed
	 * in one model unnoticed) */
	if (ok && st->log && (strcmp(a->f_algo, "-") || strcmp(a->b_algo, "-"))) {
		int ids = strspn(a->f_algo, "0123456789.+-") == strlen(a->f_algo) &&
			  strspn(a->b_algo, "0123456789.+-") == strlen(a->b_algo);
		if (ids)
			fprintf(st->log, "shape %s: cuBLASLt algorithms %s forward, %s backward (id.tile.splitk.stages.cluster)\n",
				shape, a->f_algo, a->b_algo);
		else
			fprintf(st->log, "shape %s: implementation %s forward, %s backward\n", shape, a->f_algo, a->b_algo);
	}
	int n;
	char impl[200] = "";
	if (st->cfg->op->impl_column) { /* forward/backward implementation, '-' where not named */
		int named = ok && strcmp(a->f_algo, "-") && strcmp(a->b_algo, "-");
		snprintf(impl, sizeof(impl), ",%s%s%s", named ? a->f_algo : "-", named ? "/" : "",
			 named ? a->b_algo : "");
	}
	if (st->cfg->op->collective) { /* nccl-tests' algbw and busbw, GB/s, from the row's time */
		double us = ok && kj_sweep_is_number(a->f_us) ? atof(a->f_us) : 0.0;
		double f = kj_sweep_busbw_factor(st->cfg->op, v[0]);
		if (us > 0)
			snprintf(impl, sizeof(impl), ",%.6g,%.6g", (double)v[1] / us / 1e3,
				 (double)v[1] / us / 1e3 * f);
		else
			snprintf(impl, sizeof(impl), ",-,-");
	}
	if (st->opts->energy)
		n = snprintf(row, sizeof(row), "%s,%s,%s,%s,%s,%s,%s,%s%s\n", shape, ok ? a->f_us : "-",
			     ok ? a->b_us : "-", ok ? a->f_uj : "-", ok ? a->f_uj_unc : "-",
			     ok ? a->b_uj : "-", ok ? a->b_uj_unc : "-", a->status, impl);
	else
		n = snprintf(row, sizeof(row), "%s,%s,%s,%s%s\n", shape, ok ? a->f_us : "-",
			     ok ? a->b_us : "-", a->status, impl);
	if (write(st->csv_fd, row, n) != n || fsync(st->csv_fd)) {
		kj_errorf("writing the sweep CSV: %s", strerror(errno));
		return KJ_EIO;
	}
	return 0;
}

static int mkdir_p(const char *dir)
{
	char p[2048];
	snprintf(p, sizeof(p), "%s", dir);
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			if (mkdir(p, 0777) && errno != EEXIST)
				return -1;
			*s = '/';
		}
	return mkdir(p, 0777) && errno != EEXIST ? -1 : 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* kj_write_atomic's writer of a fresh CSV: its header line */
static int write_header(FILE *f, void *header)
{
	fprintf(f, "%s\n", (const char *)header);
	return ferror(f) ? KJ_EIO : 0;
}

/* Open the CSV for appending: a fresh one gets the header (written to a temporary file and
 * renamed in); an existing one must carry the same header, loses a torn last line, and its
 * shapes become *done (sorted strings, caller frees). */
static int open_csv(const char *path, const char *header, const struct kj_sweep_op *op,
		    int *fd_out, char ***done, int64_t *ndone)
{
	struct stat sb;
	char err[1024];
	*done = NULL;
	*ndone = 0;
	if (stat(path, &sb) == 0 && sb.st_size > 0) {
		int fd = open(path, O_RDWR);
		if (fd < 0)
			goto io;
		/* drop a torn tail: bytes after the last newline */
		off_t end = sb.st_size;
		char c;
		while (end > 0 && pread(fd, &c, 1, end - 1) == 1 && c != '\n')
			end--;
		if (end != sb.st_size) {
			kj_warnf("%s: dropping a torn last line (%lld bytes)", path, (long long)(sb.st_size - end));
			if (ftruncate(fd, end)) {
				close(fd);
				goto io;
			}
		}
		close(fd);
		struct kj_sweep_csv csv;
		int rc = kj_sweep_csv_read(path, op->name, &csv, err, sizeof(err));
		if (rc) {
			kj_errorf("cannot resume: %s", err);
			return rc;
		}
		char have[1024] = "";
		for (int j = 0; j < csv.ncols; j++)
			snprintf(have + strlen(have), sizeof(have) - strlen(have), "%s%s", j ? "," : "", csv.cols[j]);
		if (strcmp(have, header)) {
			kj_errorf("cannot resume %s: its header is\n  %s\nbut this sweep writes\n  %s\n"
				  "(with and without --energy write different files' columns; use another --out)",
				  path, have, header);
			kj_sweep_csv_free(&csv);
			return KJ_EINVAL;
		}
		*done = calloc(csv.nrows + 1, sizeof(char *));
		for (int64_t r = 0; *done && r < csv.nrows; r++) {
			char s[256] = "";
			for (int j = 0; j < op->ncolumns; j++)
				snprintf(s + strlen(s), sizeof(s) - strlen(s), "%s%s", j ? "," : "", csv.rows[r][j]);
			(*done)[(*ndone)++] = strdup(s);
		}
		kj_sweep_csv_free(&csv);
		qsort(*done, *ndone, sizeof(char *), cmp_str);
		*fd_out = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
		return *fd_out < 0 ? KJ_EIO : 0;
	}
	if (kj_write_atomic(path, write_header, (void *)header))
		return KJ_EIO;
	*fd_out = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	return *fd_out < 0 ? KJ_EIO : 0;
io:
	kj_errorf("%s: %s", path, strerror(errno));
	return KJ_EIO;
}

/* The GPU's name for file names: opts->gpu_name, else NVML's name of the device, else "GPU". */
static void gpu_name(const struct kj_sweep_opts *opts, char *tag, size_t len)
{
	if (opts->gpu_name) {
		kj_sweep_gpu_tag(opts->gpu_name, tag, len);
		return;
	}
	struct kj_gpu_backend be = {0};
	struct kj_gpu_info info;
	char why[256];
	snprintf(tag, len, "GPU");
	if (kj_gpu_nvml_open(&be, why, sizeof(why)) == 0) {
		memset(&info, 0, sizeof(info));
		if (be.info(be.ctx, opts->device, &info) == 0 && info.name[0])
			kj_sweep_gpu_tag(info.name, tag, len);
		kj_gpu_backend_close(&be);
	}
}

void kj_sweep_file_base(const struct kj_sweep_config *cfg, const struct kj_sweep_opts *opts,
			char *buf, size_t len)
{
	char tag[128];
	gpu_name(opts, tag, sizeof(tag));
	snprintf(buf, len, "%s_%s_%s_%d_%d", tag, cfg->op->name, kj_precision_name(opts->precision),
		 opts->parts, opts->part);
}

int kj_sweep_run(const struct kj_sweep_config *cfg, const struct kj_sweep_opts *opts)
{
	struct run_state st = {.cfg = cfg, .opts = opts, .csv_fd = -1};
	struct worker w[MAX_WORKERS];
	int nw = opts->gpus < 1 ? 1 : opts->gpus > MAX_WORKERS ? MAX_WORKERS : opts->gpus;
	/* a collective: one worker, the group of --gpus ranks of one communicator */
	int ranks = cfg->op->collective ? nw : 1;
	int64_t *shapes = NULL, nshapes = 0, invalid = 0, *todo = NULL, ntodo = 0, next = 0;
	char **done = NULL, base[1024], path[1200], header[1024];
	int64_t ndone = 0;
	int rc = 0, check = cfg->run == KJ_RUN_FUNCTION;
	int nc = cfg->ncols;

	signal(SIGPIPE, SIG_IGN);
	memset(w, 0, sizeof(w));
	if (cfg->run == KJ_RUN_GET_ALL) {
		if ((rc = kj_sweep_shapes(cfg, opts->parts, opts->part, &shapes, &nshapes, &invalid)))
			return rc;
	} else {
		char why[128];
		shapes = malloc(nc * sizeof(*shapes));
		if (!shapes)
			return KJ_ENOMEM;
		memcpy(shapes, cfg->shapes, nc * sizeof(*shapes));
		nshapes = 1;
		if (!kj_sweep_shape_valid(cfg->op, shapes, why, sizeof(why))) {
			kj_errorf("%s: key 'shapes': %s", cfg->path, why);
			free(shapes);
			return KJ_EINVAL;
		}
	}
	st.write_csv = cfg->run == KJ_RUN_GET_ALL || cfg->run == KJ_RUN_GET_ONE;
	kj_sweep_file_base(cfg, opts, base, sizeof(base));
	if (st.write_csv) {
		snprintf(path, sizeof(path), "%s/sampling_data", opts->out_dir);
		if (mkdir_p(path)) {
			kj_errorf("%s: %s", path, strerror(errno));
			rc = KJ_EIO;
			goto out;
		}
		snprintf(path, sizeof(path), "%s/sampling_log", opts->out_dir);
		if (mkdir_p(path)) {
			kj_errorf("%s: %s", path, strerror(errno));
			rc = KJ_EIO;
			goto out;
		}
		snprintf(path, sizeof(path), "%s/sampling_log/%s.txt", opts->out_dir, base);
		st.log = fopen(path, "ae");
		kj_sweep_csv_header(cfg->op, opts->energy, header, sizeof(header));
		snprintf(path, sizeof(path), "%s/sampling_data/%s.csv", opts->out_dir, base);
		if ((rc = open_csv(path, header, cfg->op, &st.csv_fd, &done, &ndone)))
			goto out;
	}
	todo = malloc((nshapes + 1) * sizeof(*todo));
	if (!todo) {
		rc = KJ_ENOMEM;
		goto out;
	}
	if (cfg->op->collective) { /* the grid's points of other communicator sizes are other sweeps' */
		int64_t k = 0;
		for (int64_t i = 0; i < nshapes; i++)
			if (shapes[i * nc] == ranks)
				memmove(shapes + k++ * nc, shapes + i * nc, nc * sizeof(*shapes));
		nshapes = k;
	}
	for (int64_t i = 0; i < nshapes; i++) {
		char s[256], *key = s;
		kj_sweep_shape_format(shapes + i * nc, nc, s, sizeof(s));
		if (done && bsearch(&key, done, ndone, sizeof(char *), cmp_str))
			st.done_before++;
		else
			todo[ntodo++] = i;
	}
	st.total = nshapes;
	if (!opts->quiet)
		fprintf(stderr, "kjoule sweep: %s %s part %d/%d: %lld shapes (%lld already in %s), "
			"%lld grid points dropped as not Megatron-divisible\n", cfg->op->name,
			kj_precision_name(opts->precision), opts->part, opts->parts, (long long)nshapes,
			(long long)st.done_before, st.write_csv ? path : "-", (long long)invalid);
	if (ntodo == 0)
		goto out;
	if (cfg->op->collective)
		nw = 1;
	if (nw > ntodo)
		nw = (int)ntodo;
	for (int i = 0; i < nw; i++) {
		if ((rc = kj_sweep_worker_start(&w[i], opts->worker, opts->device + i, ranks, cfg, opts->timeout_s))) {
			kj_errorf("cannot start %s: %s", opts->worker, strerror(errno));
			goto out;
		}
		/* the warmup shape first; its answer is read and dropped */
		int64_t warm[KJ_SWEEP_MAX_COLS];
		memcpy(warm, cfg->warmup_shapes, sizeof(warm));
		if (cfg->op->collective)
			warm[0] = ranks; /* the communicator the group has */
		if (kj_sweep_worker_send(&w[i], cfg, opts->precision, warm, opts->energy, 0) == 0)
			w[i].shape = -2;
	}
	st.t0 = now_s();
	for (;;) {
		int busy = 0;
		for (int i = 0; i < nw; i++) {
			if (w[i].proc && w[i].shape == -1 && next < ntodo) {
				if (kj_sweep_worker_send(&w[i], cfg, opts->precision, shapes + todo[next] * nc,
						opts->energy, check) == 0)
					w[i].shape = next++;
			}
			busy += w[i].proc && w[i].shape != -1;
		}
		if (!busy)
			break;
		/* the busy workers' answers; one whose shape takes longer than --timeout is killed
		 * (its end is read below as a death, and the shape retried on resume) */
		struct kj_proc *pp[MAX_WORKERS];
		for (int i = 0; i < nw; i++)
			pp[i] = w[i].shape != -1 ? w[i].proc : NULL;
		if (kj_proc_poll(pp, (size_t)nw, 1000)) {
			rc = KJ_EIO;
			break;
		}
		/* a rank of a collective that ended leaves rank 0 waiting: end the group (read below as
		 * a death, and restarted) */
		for (int i = 0; cfg->op->collective && i < nw; i++)
			if (kj_sweep_worker_peer_died(&w[i]))
				kj_warnf("a rank of the collective on GPUs %d..%d ended; restarting the group",
					 w[i].device, w[i].device + ranks - 1);
		for (int i = 0; i < nw && !rc; i++) {
			char line[KJ_PROC_LINE_MAX + 1];
			if (!pp[i])
				continue;
			while (w[i].shape != -1 && kj_proc_next_line(w[i].proc, line, sizeof(line))) {
				struct answer a;
				if (kj_sweep_parse_answer(line, &a))
					continue; /* not an answer: the worker's own chatter */
				w[i].deaths = 0;
				if (w[i].shape >= 0) {
					rc = record(&st, shapes + todo[w[i].shape] * nc, &a);
					st.done_now++;
					progress(&st, 0);
					/* a worker that fails every shape is broken, not the shapes */
					if (!rc && st.errors_in_a_row >= 10 && st.errors_in_a_row == st.done_now) {
						kj_errorf("the first %d shapes all failed (last: %s); stopping",
							  st.errors_in_a_row, st.last_error);
						rc = KJ_EGPU;
					}
				} else if (!strcmp(a.status, "error")) {
					kj_warnf("warmup shape failed on GPU %d: %s", w[i].device, a.msg);
				}
				w[i].shape = -1;
			}
			if (rc || !kj_proc_eof(w[i].proc))
				continue;
			/* the worker died: its shape is lost (retried on resume); start a new one */
			int64_t s = w[i].shape;
			int timed_out = kj_proc_timed_out(w[i].proc);
			char shape[256] = "(warmup)";
			if (s >= 0)
				kj_sweep_shape_format(shapes + todo[s] * nc, nc, shape, sizeof(shape));
			kj_warnf("worker on GPU %d %s during shape %s; starting another", w[i].device,
				 timed_out ? "killed after --timeout" : "ended", shape);
			if (st.log)
				fprintf(st.log, "worker %s during shape %s\n",
					timed_out ? "killed after --timeout" : "ended", shape);
			st.failed += s >= 0;
			int deaths = w[i].deaths + 1;
			kj_sweep_worker_stop(&w[i]);
			/* a worker that dies three times running, or in its warmup, is given up */
			if (s == -2 || deaths >= 3 ||
			    kj_sweep_worker_start(&w[i], opts->worker, w[i].device, ranks, cfg, opts->timeout_s)) {
				kj_errorf("the worker on GPU %d cannot run (%s)", w[i].device, opts->worker);
			} else {
				w[i].deaths = deaths;
			}
		}
		if (rc)
			break;
	}
	progress(&st, 1);
	if (!rc && next < ntodo) {
		kj_errorf("no worker left; %lld shapes not measured", (long long)(ntodo - next));
		rc = KJ_EGPU;
	}
	if (!rc && st.failed) {
		kj_errorf("%lld shapes failed (see the warnings above); run again to retry them",
			  (long long)st.failed);
		rc = KJ_EGPU;
	}
	if (!opts->quiet && st.skipped)
		fprintf(stderr, "kjoule sweep: %lld shapes recorded as skipped (out of memory or "
			"unsupported)\n", (long long)st.skipped);
out:
	for (int i = 0; i < nw; i++)
		kj_sweep_worker_stop(&w[i]);
	if (st.csv_fd >= 0)
		close(st.csv_fd);
	if (st.log)
		fclose(st.log);
	for (int64_t i = 0; i < ndone; i++)
		free(done[i]);
	free(done);
	free(todo);
	free(shapes);
	return rc;
}
