/* The launch handler on this machine's CPU, without a GPU: replays one traced iteration's launches
 * (function, geometry, parameter layout and block, as dump_iteration.py wrote them) through the
 * injection library's kj_launch_record, over a stand-in driver and the real spool, and prints one
 * JSON line: nanoseconds a launch (each round's mean; median and quartiles over rounds) and the
 * spool's bytes a launch, beside the bytes the same spool would take with every block whole.
 *   usage: launch_path ITERATION.txt [ROUNDS] [--no-params] [--cold KIB]
 *   --cold KIB reads KIB of other memory before each launch (a program's work between launches),
 *   then the launch's arguments (which the program has just written), outside the timed part. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "inject.h"

#define MAXF 1024
#define MAXP 64
#define MAXL 65536

/* ---- the stand-in driver: function handle(i) has the layout the iteration gave it ---- */
static uint32_t layout[MAXF][2 * MAXP], nparams[MAXF], nfn;
static char names[MAXF][24];

/* Handles spaced as a driver's function objects are in its heap, not 1 apart: the injection's
 * per-thread caches index by them. */
#define HANDLE_BASE ((uintptr_t)0x7f3a40000000ULL)
#define HANDLE_STRIDE ((uintptr_t)0x2c0)
static uintptr_t handle(uint32_t i)
{
	return HANDLE_BASE + i * HANDLE_STRIDE;
}

static int fn_index(CUfunction f, uint32_t *i)
{
	uintptr_t h = (uintptr_t)f;
	if (h < HANDLE_BASE || (h - HANDLE_BASE) % HANDLE_STRIDE)
		return 0;
	*i = (uint32_t)((h - HANDLE_BASE) / HANDLE_STRIDE);
	return *i < nfn;
}
CUresult cuFuncGetParamInfo(CUfunction f, size_t p, size_t *off, size_t *size)
{
	uint32_t i;
	if (!fn_index(f, &i))
		return CUDA_ERROR_INVALID_HANDLE;
	if (p >= nparams[i])
		return CUDA_ERROR_INVALID_VALUE;
	*off = layout[i][2 * p], *size = layout[i][2 * p + 1];
	return CUDA_SUCCESS;
}
CUresult cuFuncGetName(const char **name, CUfunction f)
{
	uint32_t i;
	if (!fn_index(f, &i))
		return CUDA_ERROR_INVALID_HANDLE;
	*name = names[i];
	return CUDA_SUCCESS;
}

#include "launch_stand_ins.h" /* the rest of what the launch path calls */

/* ---- the launch records' bytes, as sent and as they would be with every block whole (the
 * harness is linked with --wrap=kj_spool_write2) ---- */
static uint32_t current_len; /* the launch being recorded: its block's bytes */
static int group_made;        /* ... made its group (its record then carries no block) */
static uint64_t sent_bytes, whole_bytes;

void __real_kj_spool_write2(void *head, size_t head_size, const void *payload, size_t payload_size);
void __wrap_kj_spool_write2(void *head, size_t head_size, const void *payload, size_t payload_size)
{
	const struct kj_rec_launch *r = head;
	if (r->h.type == KJ_REC_GROUP)
		group_made = 1;
	if (r->h.type == KJ_REC_LAUNCH) {
		uint64_t sent = KJ_REC_ALIGN(head_size + payload_size);
		sent_bytes += sent;
		whole_bytes += group_made || !kj_cfg.params_k ? sent : KJ_REC_ALIGN(head_size + current_len);
	}
	__real_kj_spool_write2(head, head_size, payload, payload_size);
}

/* ---- the iteration ---- */
struct launch {
	struct kj_launch l;
	unsigned char *block;
	uint32_t len;
	void *params[MAXP];
};
static struct launch launches[MAXL];
static uint32_t nl;

static void die(const char *path, unsigned line, const char *what)
{
	fprintf(stderr, "launch_path: %s:%u: %s\n", path, line, what);
	exit(2);
}

/* One launch a line: FN GX GY GZ BX BY BZ SHMEM LAYOUT HEX (LAYOUT "off:size,...", "-" for none). */
static void load(const char *path)
{
	static char line[1 << 17], lay[1 << 14], hex[1 << 17];
	FILE *f = fopen(path, "r");
	unsigned ln = 0;
	if (!f)
		die(path, 0, "cannot open");
	while (fgets(line, sizeof(line), f)) {
		struct launch *x = &launches[nl];
		unsigned fn, g[3], b[3], sh;
		ln++;
		if (nl == MAXL)
			die(path, ln, "more launches than the harness holds");
		if (sscanf(line, "%u %u %u %u %u %u %u %u %16383s %131071s", &fn, &g[0], &g[1], &g[2], &b[0],
			   &b[1], &b[2], &sh, lay, hex) != 10 || fn >= MAXF)
			die(path, ln, "not FN GX GY GZ BX BY BZ SHMEM LAYOUT HEX");
		if (fn >= nfn) {
			for (const char *s = lay; strcmp(lay, "-") && *s;) {
				unsigned off, size;
				int used;
				if (sscanf(s, "%u:%u%n", &off, &size, &used) != 2 || nparams[fn] == MAXP)
					die(path, ln, "bad layout");
				layout[fn][2 * nparams[fn]] = off, layout[fn][2 * nparams[fn] + 1] = size;
				nparams[fn]++;
				s += used + (s[used] == ',');
			}
			snprintf(names[fn], sizeof(names[fn]), "fn%u", fn);
			nfn = fn + 1;
		}
		x->len = strcmp(hex, "-") ? (uint32_t)(strlen(hex) / 2) : 0;
		x->block = calloc(x->len + 8, 1);
		for (uint32_t i = 0; i < x->len; i++)
			if (sscanf(hex + 2 * i, "%2hhx", &x->block[i]) != 1)
				die(path, ln, "bad block");
		for (uint32_t p = 0; p < nparams[fn]; p++) {
			if (layout[fn][2 * p] + layout[fn][2 * p + 1] > x->len)
				die(path, ln, "block shorter than its layout");
			x->params[p] = x->block + layout[fn][2 * p];
		}
		x->l.f = handle(fn);
		memcpy(x->l.grid, g, sizeof(g));
		memcpy(x->l.block, b, sizeof(b));
		x->l.shmem = sh;
		x->l.params = x->params;
		nl++;
	}
	fclose(f);
	if (!nl)
		die(path, ln, "no launches");
}

static volatile unsigned long sink; /* what --cold reads, so that the reads are made */

static int64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int rounds = 200;
	size_t cold = 0;
	if (argc < 2) {
		fprintf(stderr, "usage: launch_path ITERATION.txt [ROUNDS] [--no-params] [--cold KIB]\n");
		return 2;
	}
	for (int i = 2; i < argc; i++)
		if (!strcmp(argv[i], "--no-params"))
			kj_cfg.params_k = 0;
		else if (!strcmp(argv[i], "--cold") && i + 1 < argc)
			cold = (size_t)atol(argv[++i]) * 1024;
		else if ((rounds = atoi(argv[i])) < 2)
			return fprintf(stderr, "launch_path: %s: not a round count of 2 or more\n", argv[i]), 2;
	load(argv[1]);
	unsigned char *other = cold ? malloc(cold * 64) : NULL; /* 64 launches' worth, cycled */
	if (cold && !other)
		return 2;
	if (other)
		memset(other, 1, cold * 64);
	char dir[] = "/tmp/kj_launch_pathXXXXXX";
	if (!mkdtemp(dir) || kj_spool_open(dir) != 0)
		return fprintf(stderr, "launch_path: no spool folder in /tmp\n"), 2;
	double *per = malloc(sizeof(double) * (size_t)rounds);
	uint32_t corr = 1;
	for (int r = 0; r < rounds; r++) {
		int64_t spent = 0;
		for (uint32_t i = 0; i < nl; i++) {
			for (size_t j = 0; j < cold; j += 64)
				sink += other[(size_t)(i % 64) * cold + j];
			for (uint32_t j = 0; cold && j < launches[i].len; j += 64) /* the program has just */
				sink += launches[i].block[j];                     /* written its arguments */
			current_len = launches[i].len, group_made = 0;
			int64_t t0 = now_ns();
			kj_launch_record(corr++, NULL, &launches[i].l);
			spent += now_ns() - t0;
		}
		per[r] = (double)spent / nl;
	}
	kj_spool_close(1);
	char path[256];
	struct stat st;
	snprintf(path, sizeof(path), "%s/p%ld.spool", dir, (long)getpid());
	if (stat(path, &st) != 0)
		return fprintf(stderr, "launch_path: no spool at %s\n", path), 2;
	unlink(path);
	rmdir(dir);
	qsort(per, (size_t)rounds, sizeof(double), cmp_double);
	printf("{\"launches\": %u, \"rounds\": %d, \"params\": %s, \"cold_kib\": %zu, \"ns_per_launch\": "
	       "{\"median\": %.1f, \"q25\": %.1f, \"q75\": %.1f}, \"spool_bytes_per_launch\": %.1f, "
	       "\"spool_bytes_per_launch_blocks_whole\": %.1f}\n",
	       nl, rounds, kj_cfg.params_k ? "true" : "false", cold / 1024, per[rounds / 2],
	       per[rounds / 4], per[3 * rounds / 4], (double)st.st_size / ((double)nl * rounds),
	       ((double)st.st_size - (double)sent_bytes + (double)whole_bytes) / ((double)nl * rounds));
	return 0;
}
