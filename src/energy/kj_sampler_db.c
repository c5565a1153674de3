/* The power and energy sampler's rows into a run database: one device row per GPU (found by
 * UUID, filled where the tracer left it empty), its power_sample rows, and a problem row per kept
 * error text and for a GPU without an energy counter. kj_sampler.c samples. */
#include <stdio.h>
#include <stdlib.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_sampler_internal.h"
#include "kj_store_e_power.h"

/* Device row for a GPU: found by UUID, created when missing; fills in what an existing row
 * lacks (NULL columns) without overwriting what the tracer recorded. */
static int device_id(sqlite3 *db, const struct slot *sl, int64_t *id)
{
	const struct kj_store_device_info d = {
		sl->info.uuid, sl->info.name, sl->info.pci_bus_id, sl->info.driver_version,
		sl->index, sl->info.energy_counter, sl->info.power_limit_mw, sl->info.memory_bytes,
		sl->info.sm_clock_max_mhz, sl->info.mem_clock_max_mhz,
	};
	return kj_store_e_device_id(db, &d, id);
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

int kj_sampler_write_db(struct kj_sampler *s, sqlite3 *db)
{
	struct kj_store_power_writer *ins = NULL;
	struct kj_sampler_row *buf = NULL;
	int rc = 0;
	const size_t chunk = 4096;

	if (!s || !db)
		return KJ_EINVAL;
	rc = kj_store_e_power_writer_open(db, &ins);
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
				const struct kj_store_power_row row = {
					dev, r->s.t_ns, r->realtime_ns, r->s.power_mw, r->s.power_avg_mw,
					r->s.energy_mj, r->s.energy_updated, r->st.sm_clock_mhz,
					r->st.mem_clock_mhz, r->st.temp_c, r->st.util_gpu_pct,
					r->st.util_mem_pct, r->st.throttle_reasons,
				};
				rc = kj_store_e_power_write(ins, &row);
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
	kj_store_e_power_writer_close(ins);
	return rc;
}
