/* Typed readers for the iteration model, compare's regions and energy, and diff
 * (kj_store_a_iter.h). */
#include "kj_store_a_iter.h"

#include <stdio.h>

#include "kj_db.h"
#include "kj_error.h"

int kj_store_a_items_each(sqlite3 *db, int64_t pid, int (*fn)(void *ud, const struct kj_store_a_item *it),
			  void *ud)
{
	char sql[640];
	const char *cl = kj_db_caps(db)->memcpy_launch_ns ? "launch_ns" : "NULL";
	const char *sl = kj_db_caps(db)->memset_launch_ns ? "launch_ns" : "NULL";
	sqlite3_stmt *st = NULL;
	int rc;
	snprintf(sql, sizeof(sql),
		 "SELECT launch_ns, start_ns, end_ns FROM kernel WHERE ?1 < 0 OR pid = ?1"
		 " UNION ALL SELECT %s, start_ns, end_ns FROM memcpy WHERE ?1 < 0 OR pid = ?1"
		 " UNION ALL SELECT %s, start_ns, end_ns FROM memset WHERE ?1 < 0 OR pid = ?1",
		 cl, sl);
	if (kj_db_prepare(db, sql, &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, pid);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct kj_store_a_item it = {0};
		int stop;
		it.has_times = sqlite3_column_type(st, 1) != SQLITE_NULL && sqlite3_column_type(st, 2) != SQLITE_NULL;
		if (it.has_times) {
			it.start_ns = sqlite3_column_int64(st, 1);
			it.end_ns = sqlite3_column_int64(st, 2);
			it.has_launch = sqlite3_column_type(st, 0) != SQLITE_NULL;
			it.launch_ns = it.has_launch ? sqlite3_column_int64(st, 0) : 0;
		}
		if ((stop = fn(ud, &it)) != 0) {
			sqlite3_finalize(st);
			return stop;
		}
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : KJ_EDB;
}

int kj_store_a_top_ranges_each(sqlite3 *db, int64_t pid,
			       int (*fn)(void *ud, const struct kj_store_a_top_range *r), void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc;
	/* u, the ranges never closed, is made once (MATERIALIZED): left a view, SQLite read the whole
	 * table again for each nested range, and 40,000 NVTX ranges inside 20 steps took 100 s */
	if (kj_db_prepare(db, "WITH u AS MATERIALIZED (SELECT pid, tid, start_ns FROM nvtx_range WHERE end_ns IS NULL"
			      " AND start_ns IS NOT NULL) SELECT coalesce(domain, ''), name, start_ns, end_ns"
			      " FROM nvtx_range r WHERE name IS NOT NULL AND name <> '' AND start_ns IS NOT NULL"
			      " AND end_ns IS NOT NULL AND end_ns >= start_ns AND (?1 < 0 OR pid = ?1) AND"
			      " (depth = 0 OR depth = (SELECT count(*) FROM u WHERE u.pid IS r.pid AND"
			      " u.tid IS r.tid AND u.start_ns <= r.start_ns)) ORDER BY start_ns", &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, pid);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct kj_store_a_top_range r = {(const char *)sqlite3_column_text(st, 0),
						 (const char *)sqlite3_column_text(st, 1),
						 sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3)};
		int stop = fn(ud, &r);
		if (stop) {
			sqlite3_finalize(st);
			return stop;
		}
	}
	return kj_db_walk_end(db, st, rc, "NVTX ranges");
}

int kj_store_a_range_present(sqlite3 *db, const char *name, int64_t pid)
{
	sqlite3_stmt *st = NULL;
	int found = 0;
	if (kj_db_prepare(db, "SELECT 1 FROM nvtx_range WHERE name = ?1 AND (?2 < 0 OR pid = ?2)"
			      " LIMIT 1", &st) == 0) {
		sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, pid);
		found = sqlite3_step(st) == SQLITE_ROW;
		sqlite3_finalize(st);
	}
	return found;
}

int kj_store_a_region_ranges_each(sqlite3 *db, int (*fn)(void *ud, const struct kj_store_a_region_range *r),
				  void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc;
	if (kj_db_prepare(db,
			  "SELECT name, start_ns, end_ns, pid, depth FROM nvtx_range WHERE name IS"
			  " NOT NULL AND start_ns IS NOT NULL AND end_ns IS NOT NULL"
			  " AND end_ns >= start_ns ORDER BY start_ns",
			  &st))
		return KJ_EDB;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct kj_store_a_region_range r = {
			(const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 1),
			sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
			sqlite3_column_type(st, 4) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 4)};
		int stop = fn(ud, &r);
		if (stop) {
			sqlite3_finalize(st);
			return stop;
		}
	}
	return kj_db_walk_end(db, st, rc, "NVTX ranges");
}

int kj_store_a_captured_each(sqlite3 *db, int (*fn)(void *ud, const struct kj_store_a_captured *k), void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc;
	if (kj_db_prepare(db,
			  "WITH RECURSIVE anc(kid, rid) AS (SELECT id, capture_range_id FROM kernel"
			  " WHERE capture_range_id IS NOT NULL UNION ALL SELECT a.kid, r.parent_id FROM anc a"
			  " JOIN nvtx_range r ON r.id = a.rid WHERE r.parent_id IS NOT NULL)"
			  " SELECT r.name, r.depth, k.pid, coalesce(k.launch_ns, k.start_ns), k.start_ns, k.end_ns, r.id"
			  " FROM anc a JOIN kernel k ON k.id = a.kid JOIN nvtx_range r ON r.id = a.rid"
			  " WHERE r.name IS NOT NULL AND k.end_ns >= k.start_ns ORDER BY r.name, k.start_ns",
			  &st))
		return KJ_EDB;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct kj_store_a_captured k = {
			(const char *)sqlite3_column_text(st, 0),
			sqlite3_column_type(st, 1) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 1),
			sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4),
			sqlite3_column_int64(st, 5), sqlite3_column_int64(st, 6)};
		int stop = fn(ud, &k);
		if (stop) {
			sqlite3_finalize(st);
			return stop;
		}
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : KJ_EDB;
}

int kj_store_a_power_devices(sqlite3 *db, int64_t *devs, size_t max, size_t *n)
{
	sqlite3_stmt *st = NULL;
	*n = 0;
	if (kj_db_prepare(db,
			  "SELECT DISTINCT device_id FROM power_sample WHERE device_id IS NOT NULL"
			  " AND (device_id IN (SELECT DISTINCT device_id FROM gpu_activity)"
			  "      OR NOT EXISTS (SELECT 1 FROM gpu_activity WHERE device_id IN"
			  "                     (SELECT device_id FROM power_sample)))"
			  " ORDER BY device_id",
			  &st))
		return KJ_EDB;
	while (sqlite3_step(st) == SQLITE_ROW && *n < max)
		devs[(*n)++] = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return 0;
}

int kj_store_a_idle_devices_each(sqlite3 *db, int (*fn)(void *ud, int64_t device_id), void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (kj_db_prepare(db, "SELECT device_id FROM idle_power", &st))
		return KJ_EDB;
	while (!rc && sqlite3_step(st) == SQLITE_ROW)
		rc = fn(ud, sqlite3_column_int64(st, 0));
	sqlite3_finalize(st);
	return rc;
}

int kj_store_a_device_activity_each(sqlite3 *db, int64_t dev, int (*fn)(void *ud, int64_t start_ns, int64_t end_ns),
				    void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (kj_db_prepare(db, "SELECT start_ns, end_ns FROM gpu_activity WHERE device_id = ?"
			  " AND start_ns IS NOT NULL ORDER BY start_ns", &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, dev);
	while (!rc && sqlite3_step(st) == SQLITE_ROW)
		rc = fn(ud, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1));
	sqlite3_finalize(st);
	return rc;
}

int kj_store_a_clocked_power_each(sqlite3 *db, int64_t dev,
				  int (*fn)(void *ud, int64_t t_ns, int64_t power_mw, int64_t sm_clock_mhz),
				  void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (kj_db_prepare(db, "SELECT t_ns, coalesce(power_mw, power_avg_mw), sm_clock_mhz FROM power_sample"
			  " WHERE device_id = ? AND coalesce(power_mw, power_avg_mw) > 0 ORDER BY t_ns", &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, dev);
	while (!rc && sqlite3_step(st) == SQLITE_ROW) {
		if (sqlite3_column_type(st, 2) == SQLITE_NULL)
			continue;
		rc = fn(ud, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2));
	}
	sqlite3_finalize(st);
	return rc;
}

int kj_store_a_geometry_each(sqlite3 *db, int (*fn)(void *ud, int64_t unique_id, const char *geometry), void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (kj_db_prepare(db, "SELECT id, printf('grid %d,%d,%d block %d,%d,%d', grid_x, grid_y, grid_z,"
			      " block_x, block_y, block_z) FROM unique_kernel", &st))
		return KJ_EDB;
	while (!rc && sqlite3_step(st) == SQLITE_ROW)
		rc = fn(ud, sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1));
	sqlite3_finalize(st);
	return rc;
}

void kj_store_a_device_names(sqlite3 *db, char *buf, size_t len)
{
	sqlite3_stmt *st = NULL;
	if (len)
		buf[0] = 0;
	if (!kj_db_prepare(db, "SELECT group_concat(name, ' + ') FROM (SELECT name FROM device ORDER BY id)", &st) &&
	    sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		snprintf(buf, len, "%s", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
}
