#include "kj_db.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "kj_error.h"
#include "kj_migrate.h"
#include "kj_schema.h"

static int pragma_int(sqlite3 *db, const char *sql, int *value)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return rc;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*value = sqlite3_column_int(st, 0);
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	return rc;
}

int kj_db_open(const char *path, int write, sqlite3 **out)
{
	struct stat sb;
	sqlite3 *db = NULL;
	int app = 0, version = 0, rc;

	*out = NULL;
	if (stat(path, &sb) != 0) {
		kj_errorf("%s: %s", path, strerror(errno));
		return KJ_ENOTFOUND;
	}
	if (!S_ISREG(sb.st_mode)) {
		kj_errorf("%s: not a regular file", path);
		return KJ_EINVAL;
	}
	if (sb.st_size == 0) {
		kj_errorf("%s: empty file, not a kjoule run database", path);
		return KJ_ESCHEMA;
	}
	rc = sqlite3_open_v2(path, &db, (write ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY) | SQLITE_OPEN_NOMUTEX,
			     NULL);
	if (rc != SQLITE_OK) {
		kj_errorf("%s: cannot open: %s", path, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		sqlite3_close(db);
		return KJ_EDB;
	}
	sqlite3_busy_timeout(db, 5000);
	rc = pragma_int(db, "PRAGMA application_id", &app);
	if (rc == SQLITE_OK)
		rc = pragma_int(db, "PRAGMA user_version", &version);
	if (rc == SQLITE_OK) {
		/* Reading the schema proves the file is a database and not truncated at the header. */
		sqlite3_stmt *st = NULL;
		rc = sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1, &st, NULL);
		if (rc == SQLITE_OK && sqlite3_step(st) != SQLITE_ROW)
			rc = sqlite3_errcode(db);
		sqlite3_finalize(st);
	}
	if (rc != SQLITE_OK) {
		kj_errorf("%s: not a readable kjoule run database (%s)", path, sqlite3_errmsg(db));
		sqlite3_close(db);
		return KJ_ESCHEMA;
	}
	if (app != KJ_APPLICATION_ID) {
		kj_errorf("%s: not a kjoule run database (application id %d, expected %d)", path, app,
			  KJ_APPLICATION_ID);
		sqlite3_close(db);
		return KJ_ESCHEMA;
	}
	if (version > KJ_SCHEMA_VERSION) {
		char by[64] = "", with[112] = "a newer kjoule";
		if (kj_db_meta_get(db, "kjoule_version", by, sizeof(by)) == 0 && by[0])
			snprintf(with, sizeof(with), "kjoule %s, which wrote it, or later", by);
		kj_errorf("%s: run database schema %d is newer than this kjoule %s reads (schema %d to %d); "
			  "open it with %s", path, version, KJ_VERSION, KJ_SCHEMA_VERSION_MIN, KJ_SCHEMA_VERSION, with);
		sqlite3_close(db);
		return KJ_ESCHEMA;
	}
	if (version < KJ_SCHEMA_VERSION_MIN) {
		kj_errorf("%s: schema version %d is not a complete kjoule run database", path, version);
		sqlite3_close(db);
		return KJ_ESCHEMA;
	}
	/* a writable open brings an older run up to this schema; a read-only one leaves the file as
	 * it is and its readers ask kj_db_caps what it holds */
	if (write && version < KJ_SCHEMA_VERSION && kj_db_migrate(db, path)) {
		sqlite3_close(db);
		return KJ_EDB;
	}
	kj_db_caps_remember(db);
	*out = db;
	return 0;
}

/* path with its folder resolved (realpath) and its last component kept as it is; refuses a last
 * component that is a symbolic link. */
static int resolve_parent(const char *path, char *out, size_t len)
{
	char dir[PATH_MAX], rdir[PATH_MAX];
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	struct stat sb;
	if (!*base) {
		kj_errorf("%s: cannot create: names a folder, not a file", path);
		return -1;
	}
	if (lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode)) {
		kj_errorf("%s: cannot create: it is a symbolic link (name the file it points to)", path);
		return -1;
	}
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (!realpath(dir, rdir)) {
		kj_errorf("%s: cannot create: folder %s: %s", path, dir, strerror(errno));
		return -1;
	}
	if ((size_t)snprintf(out, len, "%s/%s", strcmp(rdir, "/") ? rdir : "", base) >= len) {
		kj_errorf("%s: cannot create: path too long", path);
		return -1;
	}
	return 0;
}

int kj_db_create(const char *path, sqlite3 **out)
{
	sqlite3 *db = NULL;
	char sql[128], real[PATH_MAX];
	int rc;

	*out = NULL;
	if (resolve_parent(path, real, sizeof(real)) != 0)
		return KJ_EDB;
	/* folders above may be symbolic links (home and scratch folders on clusters often are);
	 * the file itself may not: SQLite's no-follow flag refuses a link anywhere in the path,
	 * so the folders are resolved first and the flag then guards the last component alone */
	rc = sqlite3_open_v2(real, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_EXRESCODE | SQLITE_OPEN_NOFOLLOW, NULL);
	if (rc != SQLITE_OK) {
		kj_errorf("%s: cannot create: %s", path, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		sqlite3_close(db);
		return KJ_EDB;
	}
	if (kj_db_count(db, "sqlite_master") != 0) {
		kj_errorf("%s: exists and is not empty", path);
		sqlite3_close(db);
		return KJ_EEXIST;
	}
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d;", KJ_SCHEMA_VERSION);
	if (kj_db_exec(db, "BEGIN", "begin") || kj_db_exec(db, kj_schema_sql, "create schema") ||
	    kj_db_exec(db, sql, "set schema version")) {
		sqlite3_close(db);
		return KJ_EDB;
	}
	snprintf(sql, sizeof(sql), "%d", KJ_SCHEMA_VERSION);
	if (kj_db_meta_set(db, "schema_version", sql) || kj_db_meta_set(db, "kjoule_version", KJ_VERSION) ||
	    kj_db_exec(db, "COMMIT", "commit schema")) {
		sqlite3_close(db);
		return KJ_EDB;
	}
	kj_db_caps_remember(db);
	*out = db;
	return 0;
}

int kj_db_schema_version(sqlite3 *db)
{
	int version = 0;
	return pragma_int(db, "PRAGMA user_version", &version) == SQLITE_OK ? version : KJ_EDB;
}

void kj_db_close(sqlite3 *db)
{
	if (db) {
		kj_db_caps_forget(db);
		sqlite3_close(db);
	}
}

int kj_db_exec(sqlite3 *db, const char *sql, const char *what)
{
	char *msg = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		kj_errorf("database: %s: %s", what, msg ? msg : sqlite3_errmsg(db));
		sqlite3_free(msg);
		return KJ_EDB;
	}
	return 0;
}

int kj_db_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **out)
{
	if (sqlite3_prepare_v2(db, sql, -1, out, NULL) != SQLITE_OK) {
		kj_errorf("database: %s (in: %.80s)", sqlite3_errmsg(db), sql);
		*out = NULL;
		return KJ_EDB;
	}
	return 0;
}

int kj_db_meta_set(sqlite3 *db, const char *key, const char *value)
{
	sqlite3_stmt *st = NULL;
	int rc = kj_db_prepare(db, "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", &st);
	if (rc)
		return rc;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
	rc = sqlite3_step(st) == SQLITE_DONE ? 0 : KJ_EDB;
	if (rc)
		kj_errorf("database: meta %s: %s", key, sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return rc;
}

int kj_db_meta_get(sqlite3 *db, const char *key, char *buf, size_t len)
{
	sqlite3_stmt *st = NULL;
	int rc = KJ_ENOTFOUND;
	if (len)
		buf[0] = '\0';
	if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?", -1, &st, NULL) != SQLITE_OK)
		return KJ_EDB;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW) {
		const unsigned char *v = sqlite3_column_text(st, 0);
		if (v && len)
			snprintf(buf, len, "%s", (const char *)v);
		rc = 0;
	}
	sqlite3_finalize(st);
	return rc;
}

int64_t kj_db_count(sqlite3 *db, const char *table)
{
	char sql[160];
	sqlite3_stmt *st = NULL;
	int64_t n = -1;
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM \"%s\"", table);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

int kj_db_has_row(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	int yes = sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return yes;
}

int kj_db_has_snapshot(sqlite3 *db)
{
	return kj_db_has_row(db, "SELECT 1 FROM snapshot WHERE data IS NOT NULL LIMIT 1") > 0;
}

int64_t kj_db_one_i64(sqlite3 *db, const char *sql, int64_t arg, int64_t dflt)
{
	sqlite3_stmt *st = NULL;
	int64_t v = dflt;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return dflt;
	if (sqlite3_bind_parameter_count(st) > 0)
		sqlite3_bind_int64(st, 1, arg);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

int64_t kj_db_col_i64(sqlite3_stmt *st, int i, int64_t dflt)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? dflt : sqlite3_column_int64(st, i);
}

int kj_db_col_has_i64(sqlite3_stmt *st, int i, int64_t *out)
{
	*out = sqlite3_column_int64(st, i);
	return sqlite3_column_type(st, i) != SQLITE_NULL;
}

int kj_db_walk_end(sqlite3 *db, sqlite3_stmt *st, int rc, const char *what)
{
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		kj_errorf("database: reading %s: %s", what, sqlite3_errmsg(db));
		return KJ_EDB;
	}
	return 0;
}

int kj_db_realtime_offset(sqlite3 *db, int64_t *offset_ns)
{
	sqlite3_stmt *st = NULL;
	int found = 0;
	if (sqlite3_prepare_v2(db, "SELECT realtime_ns - monotonic_ns FROM clock_sync WHERE realtime_ns IS NOT"
			       " NULL AND monotonic_ns IS NOT NULL LIMIT 1", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW) {
		*offset_ns = sqlite3_column_int64(st, 0);
		found = 1;
	}
	sqlite3_finalize(st);
	return found;
}

int kj_db_problem(sqlite3 *db, int64_t pid, int64_t t_ns, const char *severity, const char *what)
{
	sqlite3_stmt *st = NULL;
	int rc = kj_db_prepare(db, "INSERT INTO problem(pid, t_ns, severity, what) VALUES(?,?,?,?)", &st);
	if (rc)
		return rc;
	if (pid >= 0)
		sqlite3_bind_int64(st, 1, pid);
	if (t_ns >= 0)
		sqlite3_bind_int64(st, 2, t_ns);
	sqlite3_bind_text(st, 3, severity, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, what, -1, SQLITE_STATIC);
	rc = sqlite3_step(st) == SQLITE_DONE ? 0 : KJ_EDB;
	sqlite3_finalize(st);
	return rc;
}
