#include "kj_cond_setter.h"

#include <stdlib.h>
#include <string.h>

struct handle {
	int64_t pid;
	uint64_t value;
};

static sqlite3 *loaded_for;
static struct handle *handles;
static size_t nhandles;

/* Reads the run's handles (none when the run predates the table). */
static void load(sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	free(handles);
	handles = NULL;
	nhandles = 0;
	loaded_for = db;
	if (sqlite3_prepare_v2(db, "SELECT pid, handle FROM graph_conditional_handle", -1, &st, NULL) != SQLITE_OK) {
		sqlite3_finalize(st);
		return;
	}
	while (sqlite3_step(st) == SQLITE_ROW) {
		uint64_t v = (uint64_t)sqlite3_column_int64(st, 1);
		if (v < KJ_COND_HANDLE_MIN)
			continue;
		struct handle *n = realloc(handles, (nhandles + 1) * sizeof(*n));
		if (!n)
			break;
		handles = n;
		handles[nhandles++] = (struct handle){sqlite3_column_int64(st, 0), v};
	}
	sqlite3_finalize(st);
}

int kj_cond_setter_word(sqlite3 *db, int64_t pid, const unsigned char *params, size_t len)
{
	if (db != loaded_for)
		load(db);
	for (size_t w = 0; nhandles && params && w + 8 <= len; w += 8) {
		uint64_t v;
		memcpy(&v, params + w, 8);
		for (size_t i = 0; i < nhandles; i++)
			if (handles[i].value == v && (pid < 0 || handles[i].pid == pid))
				return (int)(w / 8);
	}
	return -1;
}
