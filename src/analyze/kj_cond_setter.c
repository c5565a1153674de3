#include "kj_cond_setter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct handle {
	int64_t pid, exec;
	uint64_t value;
};

/* Each handle with every exec instantiated from its graph (none when the run predates the
 * table): *n of them, malloc'd. Read on every call: the table is a few rows, and a cache keyed by
 * the database handle would outlive a database closed and another opened at the same address. */
static struct handle *load(sqlite3 *db, size_t *count)
{
	sqlite3_stmt *st = NULL;
	struct handle *handles = NULL;
	size_t nhandles = 0;
	*count = 0;
	if (sqlite3_prepare_v2(db, "SELECT c.pid, c.handle, h.graph_exec_id FROM graph_conditional_handle c"
				   " JOIN host_call h ON h.pid = c.pid AND h.graph_id = c.graph_id"
				   " AND h.op = 'graph_instantiate' AND h.graph_exec_id IS NOT NULL",
			       -1, &st, NULL) != SQLITE_OK) {
		sqlite3_finalize(st);
		return NULL;
	}
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct handle *n = realloc(handles, (nhandles + 1) * sizeof(*n));
		if (!n)
			break;
		handles = n;
		handles[nhandles++] = (struct handle){sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 2),
						      (uint64_t)sqlite3_column_int64(st, 1)};
	}
	sqlite3_finalize(st);
	*count = nhandles;
	return handles;
}

/* 1 when unique kernel uid ran in exec (of process pid, or any when pid < 0). */
static int ran_in(sqlite3 *db, int64_t uid, int64_t pid, int64_t exec)
{
	sqlite3_stmt *st = NULL;
	int yes = 0;
	if (sqlite3_prepare_v2(db, "SELECT 1 FROM kernel WHERE unique_id = ?1 AND graph_id = ?2"
				   " AND (?3 < 0 OR pid = ?3) LIMIT 1", -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, uid);
		sqlite3_bind_int64(st, 2, exec);
		sqlite3_bind_int64(st, 3, pid);
		yes = sqlite3_step(st) == SQLITE_ROW;
	}
	sqlite3_finalize(st);
	return yes;
}

int kj_cond_setter_param(sqlite3 *db, int64_t pid, int64_t unique_id, const char *layout,
			 const unsigned char *params, size_t len)
{
	size_t nhandles = 0;
	struct handle *handles = NULL;
	int index = 0, found = -1;
	if (!layout || !params || !(handles = load(db, &nhandles)))
		return -1;
	for (const char *p = layout; *p && found < 0; index++) {
		unsigned off = 0, size = 0;
		int used = 0;
		if (sscanf(p, "%u:%u%n", &off, &size, &used) != 2)
			break;
		p += used;
		if (*p == ',')
			p++;
		if (size != 8 || (size_t)off + 8 > len)
			continue;
		uint64_t v;
		memcpy(&v, params + off, 8);
		for (size_t i = 0; i < nhandles && found < 0; i++)
			if (handles[i].value == v && (pid < 0 || handles[i].pid == pid) &&
			    ran_in(db, unique_id, handles[i].pid, handles[i].exec))
				found = index;
	}
	free(handles);
	return found;
}
