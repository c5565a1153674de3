/* NCCL's calls of a process (libkjoule_nccl.so's p<pid>.nccl beside its spool; the format in
 * kj_spool.h, KJ_NCCL_HEADER) into nccl_call rows. A line that is not a call becomes a warning
 * problem row naming the file and line, and the other lines are kept. */
#include "kj_ingest_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_num.h"
#include "kj_schema.h"

#define NCCL_LINE_MAX 512

static const char *const nccl_ops[] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast",
				       "reduce", "send", "recv", NULL};

/* One call line's fields: t_ns tid op count datatype bytes nranks peer group_depth. */
struct nccl_line {
	int64_t t_ns, tid, count, datatype, bytes, nranks, peer, depth;
	const char *op;
};

/* Parse line (modified in place) into *c. 0, or KJ_EINVAL with the reason in why. */
static int parse_line(char *line, struct nccl_line *c, char *why, size_t len)
{
	static const char *const names[] = {"t_ns", "tid", "op", "count", "datatype", "bytes", "nranks",
					    "peer", "group_depth"};
	int64_t *num[] = {&c->t_ns, &c->tid, NULL, &c->count, &c->datatype, &c->bytes, &c->nranks, &c->peer, &c->depth};
	const int64_t lo[] = {0, 0, 0, 0, INT32_MIN, -1, -1, -1, 0};
	char *save = NULL, *w = strtok_r(line, " ", &save), bad[160];
	int k = 0;
	for (; w && k < 9; k++, w = strtok_r(NULL, " ", &save)) {
		if (!num[k]) {
			c->op = NULL;
			for (int i = 0; nccl_ops[i]; i++)
				if (!strcmp(w, nccl_ops[i]))
					c->op = nccl_ops[i];
			if (!c->op) {
				snprintf(why, len, "op '%.40s' is not an NCCL call kjoule records", w);
				return KJ_EINVAL;
			}
		} else if (kj_num_i64(w, lo[k], INT64_MAX, num[k], bad, sizeof(bad))) {
			snprintf(why, len, "%s: %s", names[k], bad);
			return KJ_EINVAL;
		}
	}
	if (k < 9 || w) {
		snprintf(why, len, k < 9 ? "%d fields, not 9" : "more than 9 fields", k);
		return KJ_EINVAL;
	}
	return 0;
}

/* A warning problem row of the process: "FILE: line N: what" (line 0: the file as a whole). */
static int nccl_problem(struct ingest *in, const char *path, long line, const char *what)
{
	char text[700];
	const char *base = strrchr(path, '/');
	snprintf(text, sizeof(text), "%.300s: line %ld: %.340s", base ? base + 1 : path, line, what);
	kj_warnf("%s", text);
	return kj_db_problem(in->db, in->pid, -1, "warning", text);
}

/* A line that is not a call: left out, with why. */
static int bad_line(struct ingest *in, const char *path, long line, const char *why)
{
	char what[300];
	snprintf(what, sizeof(what), "not an NCCL call (%.200s); the line is left out", why);
	return nccl_problem(in, path, line, what);
}

int ing_put_nccl(struct ingest *in)
{
	char path[4096], line[NCCL_LINE_MAX + 2], head[64], why[200];
	sqlite3_stmt *st = NULL;
	size_t n = strlen(in->path);
	long no = 0;
	int rc = 0;
	FILE *f;
	if (n <= 6 || strcmp(in->path + n - 6, ".spool") || n - 6 + sizeof(KJ_NCCL_SUFFIX) > sizeof(path))
		return 0;
	snprintf(path, sizeof(path), "%.*s" KJ_NCCL_SUFFIX, (int)(n - 6), in->path);
	if (!(f = fopen(path, "r"))) {
		int err = errno;
		if (err == ENOENT)
			return 0;
		snprintf(why, sizeof(why), "cannot be read (%s): its calls are left out", strerror(err));
		return nccl_problem(in, path, 0, why);
	}
	snprintf(head, sizeof(head), KJ_NCCL_HEADER " pid ");
	if (!fgets(line, sizeof(line), f) || strncmp(line, head, strlen(head))) {
		fclose(f);
		return nccl_problem(in, path, 1, "not a kjoule NCCL call file (its first line is not '" KJ_NCCL_HEADER " pid PID'): its calls are left out");
	}
	no = 1;
	if (kj_db_exec(in->db, kj_schema_nccl_sql, "NCCL call table") ||
	    kj_db_prepare(in->db, "INSERT INTO nccl_call(pid, tid, t_ns, op, count, datatype, bytes, nranks,"
				  " peer, group_depth) VALUES(?,?,?,?,?,?,?,?,?,?)", &st)) {
		fclose(f);
		return KJ_EDB;
	}
	while (!rc && fgets(line, sizeof(line), f)) {
		struct nccl_line c;
		size_t l = strlen(line);
		no++;
		if (l && line[l - 1] == '\n') {
			line[--l] = 0;
		} else if (!feof(f)) {
			int ch;
			while ((ch = fgetc(f)) != EOF && ch != '\n')
				;
			rc = bad_line(in, path, no, "longer than 512 bytes");
			continue;
		} else {
			/* the process died while writing: its last line cut short */
			rc = bad_line(in, path, no, "cut short (no end of line)");
			continue;
		}
		if (parse_line(line, &c, why, sizeof(why))) {
			rc = bad_line(in, path, no, why);
			continue;
		}
		int64_t v[] = {in->pid, c.tid, c.t_ns};
		for (int k = 0; k < 3; k++)
			sqlite3_bind_int64(st, k + 1, v[k]);
		sqlite3_bind_text(st, 4, c.op, -1, SQLITE_STATIC);
		int64_t w[] = {c.count, c.datatype, c.bytes, c.nranks, c.peer, c.depth};
		for (int k = 0; k < 6; k++)
			sqlite3_bind_int64(st, k + 5, w[k]);
		rc = ing_step_done(in, st);
	}
	fclose(f);
	sqlite3_finalize(st);
	return rc;
}
