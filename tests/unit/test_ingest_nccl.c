/* NCCL's calls (libkjoule_nccl.so's p<pid>.nccl beside a spool, kj_spool.h) into nccl_call rows
 * (kj_ingest_nccl.c): every field of each call line kept; a malformed line is one warning problem
 * row naming the file and line, and the lines around it are kept; a file with a wrong header is
 * left out with a row; a process without a file gets no table. */
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

#define NCCL_KERNEL "ncclDevKernel_AllReduce_Sum_f32_RING_LL"

/* A closed spool of process pid with one NCCL kernel. */
static void nccl_spool(const char *sub, int pid)
{
	write_spool(sub, pid, "x", 2, NCCL_KERNEL, 1);
}

/* Two processes: 21's calls (a group of two sends, a broadcast with root 1, an unknown datatype)
 * kept field by field; 22 has no file. */
static void test_calls_kept(void **state)
{
	(void)state;
	mkdir_sub("ok");
	nccl_spool("ok", 21);
	nccl_spool("ok", 22);
	write_beside("ok", 21, KJ_NCCL_SUFFIX,
		     KJ_NCCL_HEADER " pid 21\n"
		     "1000 21 all_reduce 1024 7 4096 2 -1 0\n"
		     "1100 23 send 10 9 20 2 1 1\n"
		     "1200 23 recv 10 9 20 2 1 1\n"
		     "1300 21 broadcast 8 1 8 4 1 0\n"
		     "1400 21 all_gather 5 42 -1 -1 -1 0\n");
	sqlite3 *db = ingest_sub("ok", NULL, NULL);
	assert_int_equal(q1(db, "SELECT count(*) FROM nccl_call"), 5);
	assert_int_equal(q1(db, "SELECT count(*) FROM nccl_call WHERE pid = 21"), 5);
	assert_int_equal(q1(db, "SELECT count(*) FROM nccl_call WHERE pid = 21 AND tid = 21 AND t_ns = 1000 AND"
				" op = 'all_reduce' AND count = 1024 AND datatype = 7 AND bytes = 4096 AND nranks = 2"
				" AND peer = -1 AND group_depth = 0"), 1);
	assert_int_equal(q1(db, "SELECT count(*) FROM nccl_call WHERE tid = 23 AND op IN ('send', 'recv') AND"
				" peer = 1 AND group_depth = 1 AND bytes = 20"), 2);
	assert_int_equal(q1(db, "SELECT nranks * 10 + peer FROM nccl_call WHERE op = 'broadcast'"), 41);
	assert_int_equal(q1(db, "SELECT bytes + nranks FROM nccl_call WHERE op = 'all_gather'"), -2);
	assert_int_equal(q1(db, "SELECT count(*) FROM problem"), 0);
	kj_db_close(db);
}

/* Malformed lines: each one row naming the file and line, the good lines around them kept; a file
 * whose header is wrong is left out with one row. */
static void test_bad_lines(void **state)
{
	(void)state;
	mkdir_sub("bad");
	nccl_spool("bad", 31);
	nccl_spool("bad", 32);
	write_beside("bad", 31, KJ_NCCL_SUFFIX,
		     KJ_NCCL_HEADER " pid 31\n"
		     "1000 31 all_reduce 1024 7 4096 2 -1 0\n"
		     "1100 31 all_to_all 1 7 4 2 -1 0\n"
		     "1200 31 all_reduce 1024 7\n"
		     "1300 31 all_reduce x 7 4 2 -1 0\n"
		     "1400 31 all_reduce 2 7 8 2 -1 0\n"
		     "1500 31 all_reduce 2 7 8 2");
	write_beside("bad", 32, KJ_NCCL_SUFFIX, "kjoule-nccl 9 pid 32\n1000 32 all_reduce 1 7 4 2 -1 0\n");
	sqlite3 *db = ingest_sub("bad", NULL, NULL);
	assert_int_equal(q1(db, "SELECT count(*) FROM nccl_call WHERE pid = 31"), 2);
	assert_int_equal(q1(db, "SELECT sum(t_ns) FROM nccl_call"), 2400);
	assert_int_equal(q1(db, "SELECT count(*) FROM problem WHERE pid = 31 AND severity = 'warning' AND"
				" what LIKE 'p31.nccl: line 3: not an NCCL call (op ''all_to_all''%'"), 1);
	assert_int_equal(q1(db, "SELECT count(*) FROM problem WHERE what LIKE 'p31.nccl: line 4: %(5 fields, not 9)%'"), 1);
	assert_int_equal(q1(db, "SELECT count(*) FROM problem WHERE what LIKE 'p31.nccl: line 5: %count%'"), 1);
	assert_int_equal(q1(db, "SELECT count(*) FROM problem WHERE what LIKE 'p31.nccl: line 7: %cut short%'"), 1);
	assert_int_equal(q1(db, "SELECT count(*) FROM problem WHERE pid = 32 AND what LIKE 'p32.nccl: line 1:%"
				"its calls are left out'"), 1);
	assert_int_equal(q1(db, "SELECT count(*) FROM problem"), 5);
	assert_int_equal(q1(db, "SELECT count(*) FROM kernel"), 2); /* the spools whole */
	kj_db_close(db);
}

/* No .nccl file anywhere: no table (a reader takes its absence as no call recorded). */
static void test_no_file(void **state)
{
	(void)state;
	mkdir_sub("none");
	nccl_spool("none", 41);
	sqlite3 *db = ingest_sub("none", NULL, NULL);
	assert_int_equal(q1(db, "SELECT count(*) FROM sqlite_master WHERE name = 'nccl_call'"), 0);
	kj_db_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_calls_kept),
		cmocka_unit_test(test_bad_lines),
		cmocka_unit_test(test_no_file),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
