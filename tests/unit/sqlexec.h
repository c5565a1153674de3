/* Unit tests that build run databases by hand include this (after cmocka.h): exec() runs one
 * printf-formatted SQL statement and fails the test, printing it, when SQLite refuses it. */
#ifndef KJ_TEST_SQLEXEC_H
#define KJ_TEST_SQLEXEC_H

#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>

static inline void exec(sqlite3 *db, const char *fmt, ...)
{
	char sql[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof(sql), fmt, ap);
	va_end(ap);
	char *err = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
		fprintf(stderr, "SQL failed: %s\n%s\n", err, sql);
		fail();
	}
}

#endif
