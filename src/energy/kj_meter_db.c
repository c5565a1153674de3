/* Import of a meter log into a run database (kept apart from kj_meter.c, which is libc only). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_meter.h"
#include "kj_store_e_power.h"

/* Imports samples inside [from, to] into meter_sample in one transaction. t_ns is mapped through
 * the run's clock_sync (CLOCK_REALTIME -> CLOCK_MONOTONIC) when the run has it, else NULL. */
int kj_meter_import(const char *db_path, const char *file, const struct kj_meter_log *l, double from,
		  double to, size_t *count)
{
	sqlite3 *db = NULL;
	struct kj_store_meter_sample *v = NULL;
	size_t n = 0;
	int rc, have_off = 0;
	int64_t off = 0;
	char meter[300];
	const char *base = strrchr(file, '/');

	*count = 0;
	rc = kj_db_open(db_path, 1, &db);
	if (rc)
		return rc;
	have_off = kj_db_realtime_offset(db, &off);
	off = -off; /* realtime -> monotonic */
	if (!have_off)
		kj_warnf("%s has no clock_sync row: meter samples keep wall-clock times only (t_ns NULL)",
			 db_path);
	snprintf(meter, sizeof(meter), "%s%s", base ? base + 1 : file,
		 l->format == KJ_METER_WATTSUP ? ":sum" : "");
	v = malloc((l->n ? l->n : 1) * sizeof(*v));
	if (!v) {
		rc = KJ_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < l->n; i++) {
		if (l->t_s[i] < from - 1e-9 || l->t_s[i] > to + 1e-9)
			continue;
		int64_t rt = (int64_t)llround(l->t_s[i] * 1e9);
		v[n++] = (struct kj_store_meter_sample){rt + off, rt, have_off, l->watts[i]};
	}
	rc = kj_store_e_meter_put(db, db_path, meter, v, n);
	if (!rc)
		*count = n;
out:
	free(v);
	kj_db_close(db); /* rolls back an unfinished transaction */
	return rc;
}
