/* How a process that did not close its trace ended: the signal record beside its spool
 * (p<pid>.signal, kj_spool.h) becomes one problem row starting "ended " (kj_ingest_end.c): the
 * signal and its sender named from the record's command line or the run's process table, a
 * crash's kind, abort(); no record: SIGKILL or an unseen exit; a record that is not one is named
 * with its line; a trace closed cleanly gets no such row. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kj_db.h"
#include "kj_ingest.h"
#include "kj_spool.h"

#include "spool_fixture.h"

#define KILL_TEXT "ended without closing its trace: SIGKILL (kill -9, the OOM killer) or an exit kjoule could not see"

/* A spool of process pid (its text block text, tlen bytes), one kernel, closed when end. */
static void spool(const char *sub, int pid, const char *text, size_t tlen, int end)
{
	write_spool(sub, pid, text, tlen, "k", end);
}

/* pid's signal record holding text. */
static void write_record(const char *sub, int pid, const char *text)
{
	write_beside(sub, pid, KJ_SIGNAL_SUFFIX, text);
}

/* The text of pid's only "ended " row into out ("" none); fails on two. */
static const char *ended(sqlite3 *db, int pid, char *out, size_t len, int64_t *t_ns)
{
	sqlite3_stmt *s;
	char sql[200];
	int rows = 0;
	out[0] = 0;
	snprintf(sql, sizeof(sql), "SELECT what, t_ns FROM problem WHERE pid = %d AND what LIKE 'ended %%'", pid);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	while (sqlite3_step(s) == SQLITE_ROW) {
		snprintf(out, len, "%s", (const char *)sqlite3_column_text(s, 0));
		if (t_ns)
			*t_ns = sqlite3_column_type(s, 1) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 1);
		rows++;
	}
	sqlite3_finalize(s);
	assert_true(rows <= 1);
	return out;
}

static const char py[] = "/usr/bin/python3.12\0python3\0/work/tp_mlp.py";

/* Rank 11 SIGKILLed (no record), rank 12 SIGTERMed by torchrun (pid 10, not traced: named from the
 * record's command line), rank 13 closed its trace though a record lies there (ignored). */
static void test_kill_and_term(void **state)
{
	(void)state;
	char t[300];
	int64_t tn = 0;
	mkdir_sub("job");
	spool("job", 11, py, sizeof(py), 0);
	spool("job", 12, py, sizeof(py), 0);
	spool("job", 13, py, sizeof(py), 1);
	write_record("job", 12, KJ_SIGNAL_HEADER "\nsignal 15\ncode 0\npid 10\nt_ns 5000\n"
				"arg0 /usr/bin/python3\narg1 /usr/local/bin/torchrun\narg2 --nproc-per-node\n");
	write_record("job", 13, KJ_SIGNAL_HEADER "\nsignal 15\ncode 0\npid 10\n");
	sqlite3 *db = ingest_sub("job", NULL, NULL);
	assert_string_equal(ended(db, 11, t, sizeof(t), &tn), KILL_TEXT);
	assert_int_equal(tn, -1);
	assert_string_equal(ended(db, 12, t, sizeof(t), &tn), "ended by SIGTERM from pid 10 (torchrun)");
	assert_int_equal(tn, 5000);
	assert_string_equal(ended(db, 13, t, sizeof(t), NULL), "");
	assert_int_equal(q1(db, "SELECT count(*) FROM kernel"), 3); /* every rank's kernels kept */
	kj_db_close(db);
}

/* The sender traced itself (python -m torch.distributed.run, pid 20): named from the process
 * table when the record has no command line; an unknown sender is named by pid alone. */
static void test_sender_from_process_table(void **state)
{
	(void)state;
	static const char launcher[] = "/usr/bin/python3\0python3\0-m\0torch.distributed.run\0--standalone";
	char t[300];
	mkdir_sub("table");
	spool("table", 20, launcher, sizeof(launcher), 1);
	spool("table", 21, py, sizeof(py), 0);
	spool("table", 22, py, sizeof(py), 0);
	write_record("table", 21, KJ_SIGNAL_HEADER "\nsignal 15\ncode 0\npid 20\nt_ns 7\n");
	write_record("table", 22, KJ_SIGNAL_HEADER "\nsignal 1\ncode 0\npid 55\nt_ns 7\n");
	sqlite3 *db = ingest_sub("table", NULL, NULL);
	assert_string_equal(ended(db, 21, t, sizeof(t), NULL), "ended by SIGTERM from pid 20 (torch.distributed.run)");
	assert_string_equal(ended(db, 22, t, sizeof(t), NULL), "ended by SIGHUP from pid 55");
	kj_db_close(db);
}

/* Crashes: a fault the kernel sent names its kind; abort() (SIGABRT from itself); a signal the
 * process sent itself; Ctrl-C from the terminal (the kernel). */
static void test_crashes(void **state)
{
	(void)state;
	char t[300];
	mkdir_sub("crash");
	for (int pid = 31; pid <= 37; pid++)
		spool("crash", pid, py, sizeof(py), 0);
	write_record("crash", 31, KJ_SIGNAL_HEADER "\nsignal 11\ncode 1\npid 0\nt_ns 9\n");
	write_record("crash", 32, KJ_SIGNAL_HEADER "\nsignal 6\ncode -6\npid 32\nt_ns 9\n");
	write_record("crash", 33, KJ_SIGNAL_HEADER "\nsignal 7\ncode 2\npid 0\n");
	write_record("crash", 34, KJ_SIGNAL_HEADER "\nsignal 15\ncode -6\npid 34\nfuture_key x y\n");
	write_record("crash", 35, KJ_SIGNAL_HEADER "\nsignal 2\ncode 128\npid 0\n");
	write_record("crash", 36, KJ_SIGNAL_HEADER "\nsignal 15\ncode 0\npid 0\nt_ns 9\ninfo 0\n");
	write_record("crash", 37, KJ_SIGNAL_HEADER "\nsignal 15\ncode 0\npid 0\ninfo 0\nvia /usr/lib/x86_64-linux-gnu/libcuda.so.1\n");
	sqlite3 *db = ingest_sub("crash", NULL, NULL);
	assert_string_equal(ended(db, 31, t, sizeof(t), NULL), "ended by SIGSEGV (a crash: address fault)");
	assert_string_equal(ended(db, 32, t, sizeof(t), NULL),
			    "ended by SIGABRT (abort(): a failed assertion or a fatal error in the program or a library)");
	assert_non_null(strstr(ended(db, 33, t, sizeof(t), NULL), "ended by SIGBUS (a crash: bus error"));
	assert_string_equal(ended(db, 34, t, sizeof(t), NULL), "ended by SIGTERM (raised by the process itself)");
	assert_string_equal(ended(db, 35, t, sizeof(t), NULL), "ended by SIGINT (sent by the kernel: Ctrl-C at its terminal)");
	assert_string_equal(ended(db, 36, t, sizeof(t), NULL),
			    "ended by SIGTERM (who sent it is not known: kjoule's handler was called by a handler"
			    " installed after it, which did not pass on the signal's details)");
	assert_string_equal(ended(db, 37, t, sizeof(t), NULL),
			    "ended by SIGTERM (who sent it is not known: kjoule's handler was called by a handler"
			    " installed after it, in libcuda.so.1, which did not pass on the signal's details)");
	kj_db_close(db);
}

/* A record that is not one: the row says so and names the line; the trace is still ingested. */
static void test_bad_records(void **state)
{
	(void)state;
	char t[300];
	mkdir_sub("bad");
	for (int pid = 41; pid <= 44; pid++)
		spool("bad", pid, py, sizeof(py), 0);
	write_record("bad", 41, KJ_SIGNAL_HEADER "\nsignal x15\ncode 0\n");
	write_record("bad", 42, "kjoule-signal 9\nsignal 15\n");
	write_record("bad", 43, KJ_SIGNAL_HEADER "\ncode 0\npid 3\n");
	write_record("bad", 44, KJ_SIGNAL_HEADER "\nsignal 15\ncode 0\npid -4\n");
	sqlite3 *db = ingest_sub("bad", NULL, NULL);
	assert_non_null(strstr(ended(db, 41, t, sizeof(t), NULL), "its signal record p41.signal is not one (line 2: signal: "));
	assert_non_null(strstr(ended(db, 42, t, sizeof(t), NULL), "(line 1: not '" KJ_SIGNAL_HEADER "')"));
	assert_non_null(strstr(ended(db, 43, t, sizeof(t), NULL), "(no 'signal' line)"));
	assert_non_null(strstr(ended(db, 44, t, sizeof(t), NULL), "(line 4: pid: "));
	assert_int_equal(q1(db, "SELECT count(*) FROM kernel"), 4);
	kj_db_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kill_and_term),
		cmocka_unit_test(test_sender_from_process_table),
		cmocka_unit_test(test_crashes),
		cmocka_unit_test(test_bad_records),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
