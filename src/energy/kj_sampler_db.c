/* The power and energy sampler's rows into a run database: one device row per GPU (found by
 * UUID, filled where the tracer left it empty), its power_sample rows, and a problem row per kept
 * error text and for a GPU without an energy counter. kj_sampler.c samples. */
#include <stdio.h>
#include <stdlib.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_sampler_internal.h"

/* Device row for a GPU: found by UUID, created when missing; fills in what an existing row
 * lacks (NULL columns) without overwriting what the tracer recorded. */
static int device_id(sqlite3 *db, const struct slot *sl, int64_t *id)
{
	sqlite3_stmt *st = NULL;
	int rc = kj_db_prepare(db, "SELECT id FROM device WHERE uuid = ?", &st);
	if (rc)
		return rc;
	sqlite3_bind_text(st, 1, sl->info.uuid, -1, SQLITE_STATIC);
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
		sqlite3_bind_int(st, 1, sl->index);
		sqlite3_bind_int(st, 2, sl->info.energy_counter);
		if (sl->info.power_limit_mw >= 0)
			sqlite3_bind_int64(st, 3, sl->info.power_limit_mw);
		sqlite3_bind_text(st, 4, sl->info.driver_version, -1, SQLITE_STATIC);
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
	sqlite3_bind_text(st, 1, sl->info.uuid, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, sl->info.name, -1, SQLITE_STATIC);
	if (sl->info.power_limit_mw >= 0)
		sqlite3_bind_int64(st, 3, sl->info.power_limit_mw);
	sqlite3_bind_int(st, 4, sl->index);
	sqlite3_bind_int(st, 5, sl->info.energy_counter);
	if (sl->info.driver_version[0])
		sqlite3_bind_text(st, 6, sl->info.driver_version, -1, SQLITE_STATIC);
	if (sl->info.pci_bus_id[0])
		sqlite3_bind_text(st, 7, sl->info.pci_bus_id, -1, SQLITE_STATIC);
	if (sl->info.memory_bytes >= 0)
		sqlite3_bind_int64(st, 8, sl->info.memory_bytes);
	if (sl->info.sm_clock_max_mhz >= 0)
		sqlite3_bind_int(st, 9, sl->info.sm_clock_max_mhz);
	if (sl->info.mem_clock_max_mhz >= 0)
		sqlite3_bind_int(st, 10, sl->info.mem_clock_max_mhz);
	rc = sqlite3_step(st) == SQLITE_DONE ? 0 : KJ_EDB;
	sqlite3_finalize(st);
	if (!rc)
		*id = sqlite3_last_insert_rowid(db);
	return rc;
}

int kj_sampler_device_ids(struct kj_sampler *s, sqlite3 *db, int64_t *ids)
{
	for (int i = 0; i < s->nslots; i++) {
		int rc = device_id(db, &s->slots[i], &ids[i]);
		if (rc)
			return rc;
	}
	return 0;
}

static void bind_opt(sqlite3_stmt *st, int col, int64_t v)
{
	if (v >= 0)
		sqlite3_bind_int64(st, col, v);
	else
		sqlite3_bind_null(st, col);
}

int kj_sampler_write_db(struct kj_sampler *s, sqlite3 *db)
{
	sqlite3_stmt *ins = NULL;
	struct kj_sampler_row *buf = NULL;
	int rc = 0;
	const size_t chunk = 4096;

	if (!s || !db)
		return KJ_EINVAL;
	rc = kj_db_prepare(db, "INSERT INTO power_sample(device_id, t_ns, realtime_ns, power_mw,"
			   " power_avg_mw, energy_mj, energy_updated, sm_clock_mhz, mem_clock_mhz,"
			   " temp_c, util_gpu_pct, util_mem_pct, throttle_reasons)"
			   " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)", &ins);
	if (rc)
		return rc;
	buf = malloc(chunk * sizeof(*buf));
	if (!buf) {
		rc = KJ_ENOMEM;
		goto out;
	}
	for (int i = 0; i < s->nslots && !rc; i++) {
		struct slot *sl = &s->slots[i];
		struct kj_sampler_cursor cur = {0, 0};
		int64_t dev = 0;
		size_t got;
		char what[320];
		rc = device_id(db, sl, &dev);
		if (rc)
			break;
		while (!rc && (got = kj_sampler_fetch(s, i, &cur, buf, chunk)) > 0) {
			for (size_t k = 0; k < got && !rc; k++) {
				const struct kj_sampler_row *r = &buf[k];
				sqlite3_reset(ins);
				sqlite3_bind_int64(ins, 1, dev);
				sqlite3_bind_int64(ins, 2, r->s.t_ns);
				sqlite3_bind_int64(ins, 3, r->realtime_ns);
				bind_opt(ins, 4, r->s.power_mw);
				bind_opt(ins, 5, r->s.power_avg_mw);
				bind_opt(ins, 6, r->s.energy_mj);
				if (r->s.energy_mj >= 0)
					sqlite3_bind_int(ins, 7, r->s.energy_updated);
				else
					sqlite3_bind_null(ins, 7);
				bind_opt(ins, 8, r->st.sm_clock_mhz);
				bind_opt(ins, 9, r->st.mem_clock_mhz);
				bind_opt(ins, 10, r->st.temp_c);
				bind_opt(ins, 11, r->st.util_gpu_pct);
				bind_opt(ins, 12, r->st.util_mem_pct);
				bind_opt(ins, 13, r->st.throttle_reasons);
				if (sqlite3_step(ins) != SQLITE_DONE) {
					kj_errorf("power_sample insert: %s", sqlite3_errmsg(db));
					rc = KJ_EDB;
				}
			}
		}
		for (int e = 0; e < sl->nerr && !rc; e++) {
			snprintf(what, sizeof(what), "power sampler: %s (%d times; samples before and after"
				 " kept)", sl->err[e].text, sl->err[e].count);
			rc = kj_db_problem(db, -1, sl->err[e].t_ns, "warning", what);
		}
		if (!rc && !sl->info.energy_counter) {
			snprintf(what, sizeof(what), "GPU %d (%s) has no energy counter: energies of this "
				 "run come from power integration", sl->index, sl->info.uuid);
			rc = kj_db_problem(db, -1, -1, "info", what);
		}
	}
out:
	free(buf);
	sqlite3_finalize(ins);
	return rc;
}
