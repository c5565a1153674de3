/* How a traced process ended when it did not close its trace: the signal record the injection
 * library left beside its spool (p<pid>.signal, kj_spool.h), or none, turned into one problem row
 * of the process whose text starts "ended " (a dead rank's reason, kj_ranks.h; docs/multi-gpu.md). */
#include "kj_ingest_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_num.h"

#define SIGREC_MAX 4096 /* a record is well under 1 KiB: anything larger is not one */

struct sigrec {
	int64_t sig, code, pid, t_ns; /* t_ns -1: not recorded */
	int64_t info; /* 1 the signal's details reached the handler, 0 not, -1 not recorded (older) */
	char arg[3][KJ_SIGNAL_ARG_MAX + 1];
	char via[256]; /* the file of the code that relayed it without its details; "" unknown */
};

static const struct {
	int sig;
	const char *name;
} sig_names[] = {{SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
		 {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
		 {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
		 {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"}};

/* "SIGTERM", or "signal N" (in buf) for one without a name here. */
static const char *sig_name(int64_t sig, char *buf, size_t len)
{
	for (size_t i = 0; i < sizeof(sig_names) / sizeof(sig_names[0]); i++)
		if (sig_names[i].sig == sig)
			return sig_names[i].name;
	snprintf(buf, len, "signal %lld", (long long)sig);
	return buf;
}

/* Read and check the record at path into *r. @return 1 read, 0 there is none, KJ_EINVAL with the
 * line and the reason in why (the file is unreadable or not a record). */
static int sigrec_read(const char *path, struct sigrec *r, char *why, size_t len)
{
	char text[SIGREC_MAX + 1], *save = NULL;
	int have_sig = 0, line = 1;
	FILE *f = fopen(path, "r");
	memset(r, 0, sizeof(*r));
	r->t_ns = -1;
	r->info = -1;
	if (!f) {
		if (errno == ENOENT)
			return 0;
		snprintf(why, len, "%s", strerror(errno));
		return KJ_EINVAL;
	}
	size_t n = fread(text, 1, sizeof(text), f);
	fclose(f);
	if (n > SIGREC_MAX) {
		snprintf(why, len, "larger than %d bytes", SIGREC_MAX);
		return KJ_EINVAL;
	}
	text[n] = 0;
	char *l = strtok_r(text, "\n", &save);
	if (!l || strcmp(l, KJ_SIGNAL_HEADER)) {
		snprintf(why, len, "line 1: not '" KJ_SIGNAL_HEADER "'");
		return KJ_EINVAL;
	}
	while ((l = strtok_r(NULL, "\n", &save))) {
		char *v = strchr(l, ' '), bad[160];
		int64_t *num = NULL, lo = INT64_MIN, hi = INT64_MAX;
		line++;
		if (!v) {
			snprintf(why, len, "line %d: no value after '%.40s'", line, l);
			return KJ_EINVAL;
		}
		*v++ = 0;
		if (!strcmp(l, "signal"))
			num = &r->sig, lo = 1, hi = 64, have_sig = 1;
		else if (!strcmp(l, "code"))
			num = &r->code;
		else if (!strcmp(l, "pid"))
			num = &r->pid, lo = 0;
		else if (!strcmp(l, "t_ns"))
			num = &r->t_ns, lo = 0;
		else if (!strcmp(l, "info"))
			num = &r->info, lo = 0, hi = 1;
		else if (!strcmp(l, "via"))
			snprintf(r->via, sizeof(r->via), "%s", v);
		else if (!strncmp(l, "arg", 3) && l[3] >= '0' && l[3] <= '2' && !l[4])
			snprintf(r->arg[l[3] - '0'], sizeof(r->arg[0]), "%s", v);
		/* other keys: a newer injection library's, skipped */
		if (num && kj_num_i64(v, lo, hi, num, bad, sizeof(bad))) {
			snprintf(why, len, "line %d: %s: %s", line, l, bad);
			return KJ_EINVAL;
		}
	}
	if (!have_sig) {
		snprintf(why, len, "no 'signal' line");
		return KJ_EINVAL;
	}
	return 1;
}

static const char *base_of(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* The program a command line runs, for naming a sender: its first word's file name, or, for a
 * Python interpreter, the script it runs ("torchrun") or the module after -m. "" when w0 is. */
static void program_name(const char *w0, const char *w1, const char *w2, char *out, size_t len)
{
	const char *b = base_of(w0);
	if ((!strncmp(b, "python", 6) || !strncmp(b, "pypy", 4)) && w1[0]) {
		if (!strcmp(w1, "-m") && w2[0])
			b = w2;
		else if (w1[0] != '-')
			b = base_of(w1);
	}
	snprintf(out, len, "%s", b);
}

/* The sender's program: from the record's command line, else from the run's process table
 * (a traced sender); "" when neither knows it. */
static int sender_name(struct ingest *in, const struct sigrec *r, char *out, size_t len)
{
	sqlite3_stmt *st = NULL;
	out[0] = 0;
	if (r->arg[0][0]) {
		program_name(r->arg[0], r->arg[1], r->arg[2], out, len);
		return 0;
	}
	if (kj_db_prepare(in->db, "SELECT coalesce(args, ''), coalesce(exe, '') FROM process WHERE pid = ?", &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, r->pid);
	if (sqlite3_step(st) == SQLITE_ROW) {
		char w[3][KJ_SIGNAL_ARG_MAX + 1] = {"", "", ""}, *save = NULL, *t;
		char args[3 * KJ_SIGNAL_ARG_MAX + 3];
		snprintf(args, sizeof(args), "%s", (const char *)sqlite3_column_text(st, 0));
		t = strtok_r(args, " ", &save);
		for (int k = 0; t && k < 3; k++, t = strtok_r(NULL, " ", &save))
			snprintf(w[k], sizeof(w[k]), "%s", t);
		if (!w[0][0])
			snprintf(w[0], sizeof(w[0]), "%s", (const char *)sqlite3_column_text(st, 1));
		program_name(w[0], w[1], w[2], out, len);
	}
	sqlite3_finalize(st);
	return 0;
}

/* What a fault signal the kernel sent says about the crash; NULL for other signals. */
static const char *crash_kind(int64_t sig)
{
	switch (sig) {
	case SIGSEGV: return "a crash: address fault";
	case SIGBUS: return "a crash: bus error (a mapped file cut short, or a misaligned access)";
	case SIGFPE: return "a crash: arithmetic fault (an integer division by zero)";
	case SIGILL: return "a crash: illegal instruction";
	default: return NULL;
	}
}

/* The problem text of a death the record describes, for process victim. */
static void describe(const struct sigrec *r, int64_t victim, const char *sender, char *out, size_t len)
{
	char nb[32];
	const char *name = sig_name(r->sig, nb, sizeof(nb));
	if (r->info == 0)
		snprintf(out, len, "ended by %s (who sent it is not known: kjoule's handler was called by a handler"
			 " installed after it%s%s, which did not pass on the signal's details)", name,
			 r->via[0] ? ", in " : "", base_of(r->via));
	else if (r->code <= 0 && r->pid > 0 && r->pid != victim)
		snprintf(out, len, "ended by %s from pid %lld%s%s%s", name, (long long)r->pid,
			 sender[0] ? " (" : "", sender, sender[0] ? ")" : "");
	else if (r->code <= 0 && r->pid == victim && r->sig == SIGABRT)
		snprintf(out, len, "ended by SIGABRT (abort(): a failed assertion or a fatal error in the"
			 " program or a library)");
	else if (r->code <= 0 && r->pid == victim)
		snprintf(out, len, "ended by %s (raised by the process itself)", name);
	else if (r->code > 0 && crash_kind(r->sig))
		snprintf(out, len, "ended by %s (%s)", name, crash_kind(r->sig));
	else if (r->code > 0)
		snprintf(out, len, "ended by %s (sent by the kernel%s)", name,
			 r->sig == SIGHUP ? ": its terminal closed" : r->sig == SIGINT ? ": Ctrl-C at its terminal" : "");
	else
		snprintf(out, len, "ended by %s (sender not recorded)", name);
}

int ing_note_death(struct ingest *in)
{
	char path[4096], what[512], why[200], sender[KJ_SIGNAL_ARG_MAX + 1];
	struct sigrec r;
	size_t n = strlen(in->path);
	int got = 0, rc;
	if (n > 6 && !strcmp(in->path + n - 6, ".spool") && n - 6 + sizeof(KJ_SIGNAL_SUFFIX) <= sizeof(path)) {
		snprintf(path, sizeof(path), "%.*s" KJ_SIGNAL_SUFFIX, (int)(n - 6), in->path);
		got = sigrec_read(path, &r, why, sizeof(why));
	}
	if (got < 0) {
		kj_warnf("%s: %s: not a signal record; how process %lld ended is not known", path, why,
			 (long long)in->pid);
		snprintf(what, sizeof(what), "ended without closing its trace; its signal record %.100s is not"
			 " one (%s)", base_of(path), why);
		return kj_db_problem(in->db, in->pid, -1, "warning", what);
	}
	if (!got)
		return kj_db_problem(in->db, in->pid, -1, "warning",
				     "ended without closing its trace: SIGKILL (kill -9, the OOM killer) or an exit"
				     " kjoule could not see");
	if ((rc = sender_name(in, &r, sender, sizeof(sender))))
		return rc;
	describe(&r, in->pid, sender, what, sizeof(what));
	return kj_db_problem(in->db, in->pid, r.t_ns, "warning", what);
}
