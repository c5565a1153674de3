/* The power side of the run database: device rows, power_sample, idle_power, meter_sample
 * (kj_store_e_power.h). */
#include "kj_store_e_power.h"

#include <stdlib.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_grow.h"

struct kj_store_power_writer {
	sqlite3 *db;
	sqlite3_stmt *st;
};

int kj_store_e_device_id(sqlite3 *db, const struct kj_store_device_info *d, int64_t *id)
{
	sqlite3_stmt *st = NULL;
	int rc = kj_db_prepare(db, "SELECT id FROM device WHERE uuid = ?", &st);
	if (rc)
		return rc;
	sqlite3_bind_text(st, 1, d->uuid, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*id = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
		rc = kj_db_prepare(db, "UPDATE device SET nvml_index = COALESCE(nvml_index, ?),"
				   " energy_counter = COALESCE(energy_counter, ?),"
				   " power_limit_mw = COALESCE(power_limit_mw, ?),"
				   " driver_version = COALESCE(driver_version, ?) WHERE id = ?", &st);
		if (rc)
			return rc;
		sqlite3_bind_int(st, 1, d->nvml_index);
		sqlite3_bind_int(st, 2, d->energy_counter);
		if (d->power_limit_mw >= 0)
			sqlite3_bind_int64(st, 3, d->power_limit_mw);
		sqlite3_bind_text(st, 4, d->driver_version, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 5, *id);
		rc = sqlite3_step(st) == SQLITE_DONE ? 0 : KJ_EDB;
		sqlite3_finalize(st);
		return rc;
	}
	sqlite3_finalize(st);
	rc = kj_db_prepare(db, "INSERT INTO device(uuid, name, power_limit_mw, nvml_index,"
			   " energy_counter, driver_version, pci_bus_id, memory_bytes, sm_clock_max_mhz,"
			   " mem_clock_max_mhz) VALUES(?,?,?,?,?,?,?,?,?,?)", &st);
	if (rc)
		return rc;
	sqlite3_bind_text(st, 1, d->uuid, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, d->name, -1, SQLITE_STATIC);
	if (d->power_limit_mw >= 0)
		sqlite3_bind_int64(st, 3, d->power_limit_mw);
	sqlite3_bind_int(st, 4, d->nvml_index);
	sqlite3_bind_int(st, 5, d->energy_counter);
	if (d->driver_version[0])
		sqlite3_bind_text(st, 6, d->driver_version, -1, SQLITE_STATIC);
	if (d->pci_bus_id[0])
		sqlite3_bind_text(st, 7, d->pci_bus_id, -1, SQLITE_STATIC);
	if (d->memory_bytes >= 0)
		sqlite3_bind_int64(st, 8, d->memory_bytes);
	if (d->sm_clock_max_mhz >= 0)
		sqlite3_bind_int(st, 9, d->sm_clock_max_mhz);
	if (d->mem_clock_max_mhz >= 0)
		sqlite3_bind_int(st, 10, d->mem_clock_max_mhz);
	rc = sqlite3_step(st) == SQLITE_DONE ? 0 : KJ_EDB;
	sqlite3_finalize(st);
	if (!rc)
		*id = sqlite3_last_insert_rowid(db);
	return rc;
}

int kj_store_e_power_writer_open(sqlite3 *db, struct kj_store_power_writer **out)
{
	struct kj_store_power_writer *w = calloc(1, sizeof(*w));
	*out = NULL;
	if (!w)
		return KJ_ENOMEM;
	w->db = db;
	if (kj_db_prepare(db, "INSERT INTO power_sample(device_id, t_ns, realtime_ns, power_mw,"
			  " power_avg_mw, energy_mj, energy_updated, sm_clock_mhz, mem_clock_mhz,"
			  " temp_c, util_gpu_pct, util_mem_pct, throttle_reasons)"
			  " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)", &w->st)) {
		free(w);
		return KJ_EDB;
	}
	*out = w;
	return 0;
}

/* v bound to col, or NULL when it is negative (not read) */
static void bind_opt(sqlite3_stmt *st, int col, int64_t v)
{
	if (v >= 0)
		sqlite3_bind_int64(st, col, v);
	else
		sqlite3_bind_null(st, col);
}

int kj_store_e_power_write(struct kj_store_power_writer *w, const struct kj_store_power_row *r)
{
	sqlite3_stmt *ins = w->st;
	sqlite3_reset(ins);
	sqlite3_bind_int64(ins, 1, r->device_id);
	sqlite3_bind_int64(ins, 2, r->t_ns);
	sqlite3_bind_int64(ins, 3, r->realtime_ns);
	bind_opt(ins, 4, r->power_mw);
	bind_opt(ins, 5, r->power_avg_mw);
	bind_opt(ins, 6, r->energy_mj);
	if (r->energy_mj >= 0)
		sqlite3_bind_int(ins, 7, r->energy_updated);
	else
		sqlite3_bind_null(ins, 7);
	bind_opt(ins, 8, r->sm_clock_mhz);
	bind_opt(ins, 9, r->mem_clock_mhz);
	bind_opt(ins, 10, r->temp_c);
	bind_opt(ins, 11, r->util_gpu_pct);
	bind_opt(ins, 12, r->util_mem_pct);
	bind_opt(ins, 13, r->throttle_reasons);
	if (sqlite3_step(ins) != SQLITE_DONE) {
		kj_errorf("power_sample insert: %s", sqlite3_errmsg(w->db));
		return KJ_EDB;
	}
	return 0;
}

void kj_store_e_power_writer_close(struct kj_store_power_writer *w)
{
	if (!w)
		return;
	sqlite3_finalize(w->st);
	free(w);
}

int kj_store_e_power_samples(sqlite3 *db, int64_t device_id,
			     int (*fn)(void *ctx, const struct kj_store_power_sample *r), void *ctx)
{
	sqlite3_stmt *st = NULL;
	int rc = kj_db_prepare(db, "SELECT t_ns, power_mw, power_avg_mw, energy_mj, energy_updated FROM"
			       " power_sample WHERE device_id = ? ORDER BY t_ns, id", &st);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, device_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct kj_store_power_sample x;
		x.t_ns = sqlite3_column_int64(st, 0);
		x.power_mw = kj_db_col_i64(st, 1, -1);
		x.power_avg_mw = kj_db_col_i64(st, 2, -1);
		x.energy_mj = kj_db_col_i64(st, 3, -1);
		x.energy_updated = sqlite3_column_type(st, 4) == SQLITE_NULL ? 0 : sqlite3_column_int(st, 4);
		int r = fn(ctx, &x);
		if (r) {
			sqlite3_finalize(st);
			return r;
		}
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : KJ_EDB;
}

double kj_store_e_idle_median_mw(sqlite3 *db, int64_t device_id)
{
	sqlite3_stmt *st = NULL;
	double v = -1;
	if (kj_db_prepare(db, "SELECT median_mw FROM idle_power WHERE device_id = ?", &st))
		return -1;
	sqlite3_bind_int64(st, 1, device_id);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		v = sqlite3_column_double(st, 0);
	sqlite3_finalize(st);
	return v;
}

int kj_store_e_idle_power_put(sqlite3 *db, const char *db_path, int64_t device_id,
			      const struct kj_store_idle_power *m)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (kj_db_prepare(db, "INSERT OR REPLACE INTO idle_power(device_id, median_mw,"
			  " p10_mw, p90_mw, samples, measured_ns, source)"
			  " VALUES(?,?,?,?,?,?,?)", &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, device_id);
	sqlite3_bind_int64(st, 2, m->median_mw);
	sqlite3_bind_int64(st, 3, m->p10_mw);
	sqlite3_bind_int64(st, 4, m->p90_mw);
	sqlite3_bind_int64(st, 5, m->samples);
	sqlite3_bind_int64(st, 6, m->measured_ns);
	sqlite3_bind_text(st, 7, m->source, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE) {
		kj_errorf("%s: idle_power: %s", db_path, sqlite3_errmsg(db));
		rc = KJ_EIO;
	}
	sqlite3_finalize(st);
	return rc;
}

int kj_store_e_meter_put(sqlite3 *db, const char *db_path, const char *meter,
			 const struct kj_store_meter_sample *v, size_t n)
{
	sqlite3_stmt *st = NULL;
	int rc = kj_db_exec(db, "BEGIN", "begin");
	if (rc)
		return rc;
	rc = kj_db_prepare(db, "INSERT INTO meter_sample(t_ns, realtime_ns, watts, meter)"
			   " VALUES(?,?,?,?)", &st);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++) {
		sqlite3_reset(st);
		if (v[i].has_t_ns)
			sqlite3_bind_int64(st, 1, v[i].t_ns);
		else
			sqlite3_bind_null(st, 1);
		sqlite3_bind_int64(st, 2, v[i].realtime_ns);
		sqlite3_bind_double(st, 3, v[i].watts);
		sqlite3_bind_text(st, 4, meter, -1, SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_DONE) {
			kj_errorf("%s: meter_sample: %s", db_path, sqlite3_errmsg(db));
			sqlite3_finalize(st);
			return KJ_EDB;
		}
	}
	sqlite3_finalize(st);
	return kj_db_exec(db, "COMMIT", "commit");
}

int kj_store_e_util_readings(sqlite3 *db, int64_t device_id, int64_t **t_ns, int **util_pct,
			     size_t *n)
{
	sqlite3_stmt *st = NULL;
	int64_t *rt = NULL;
	int *ru = NULL;
	size_t nr = 0, cap_t = 0, cap_u = 0;
	int rc = kj_db_prepare(db, "SELECT t_ns, util_gpu_pct FROM power_sample WHERE device_id = ?"
			       " AND util_gpu_pct IS NOT NULL ORDER BY t_ns", &st);
	*t_ns = NULL;
	*util_pct = NULL;
	*n = 0;
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, device_id);
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t *gt = kj_grow(rt, &cap_t, nr, sizeof(*gt), 4096);
		if (gt)
			rt = gt;
		int *gu = gt ? kj_grow(ru, &cap_u, nr, sizeof(*gu), 4096) : NULL;
		if (!gu) {
			sqlite3_finalize(st);
			free(rt);
			free(ru);
			return KJ_ENOMEM;
		}
		ru = gu;
		rt[nr] = sqlite3_column_int64(st, 0);
		ru[nr] = sqlite3_column_int(st, 1);
		nr++;
	}
	sqlite3_finalize(st);
	*t_ns = rt;
	*util_pct = ru;
	*n = nr;
	return 0;
}

int kj_store_e_power_counters(sqlite3 *db, int64_t lo_ns, int64_t hi_ns,
			      int (*fn)(void *ctx, const struct kj_store_power_counter *r), void *ctx)
{
	sqlite3_stmt *st = NULL;
	int rc;
	if (kj_db_prepare(db,
			  "SELECT device_id, t_ns, coalesce(power_mw, power_avg_mw), energy_mj,"
			  " sm_clock_mhz, mem_clock_mhz FROM power_sample WHERE t_ns >= ?1 AND"
			  " t_ns <= ?2 ORDER BY device_id, t_ns",
			  &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, lo_ns);
	sqlite3_bind_int64(st, 2, hi_ns);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct kj_store_power_counter r;
		r.device_id = sqlite3_column_int64(st, 0);
		r.t_ns = sqlite3_column_int64(st, 1);
		r.has_power = kj_db_col_has_i64(st, 2, &r.power_mw);
		r.has_energy = kj_db_col_has_i64(st, 3, &r.energy_mj);
		r.has_sm_clock = kj_db_col_has_i64(st, 4, &r.sm_clock_mhz);
		r.has_mem_clock = kj_db_col_has_i64(st, 5, &r.mem_clock_mhz);
		int x = fn(ctx, &r);
		if (x) {
			sqlite3_finalize(st);
			return x;
		}
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : KJ_EDB;
}

int kj_store_e_power_devices(sqlite3 *db, int (*fn)(void *ctx, int64_t device_id), void *ctx)
{
	sqlite3_stmt *st = NULL;
	int rc;
	if (kj_db_prepare(db, "SELECT DISTINCT device_id FROM power_sample", &st))
		return KJ_EDB;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int x = fn(ctx, sqlite3_column_int64(st, 0));
		if (x) {
			sqlite3_finalize(st);
			return x;
		}
	}
	sqlite3_finalize(st);
	return 0;
}

int kj_store_e_power_points(sqlite3 *db, int (*fn)(void *ctx, const struct kj_store_power_point *p),
			    void *ctx)
{
	sqlite3_stmt *st = NULL;
	if (kj_db_prepare(db, "SELECT device_id, t_ns, coalesce(power_mw, power_avg_mw) FROM power_sample"
			      " WHERE t_ns IS NOT NULL AND coalesce(power_mw, power_avg_mw) IS NOT NULL"
			      " ORDER BY device_id, t_ns",
			  &st))
		return KJ_EDB;
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct kj_store_power_point p = {sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
						 sqlite3_column_double(st, 2)};
		int x = fn(ctx, &p);
		if (x) {
			sqlite3_finalize(st);
			return x;
		}
	}
	sqlite3_finalize(st);
	return 0;
}
