/* kjoule api --jsonl: every event of a run as one JSON object per line, read row by row. */
#include "kj_apistory_out.h"

#include "kj_acts.h"
#include "kj_error.h"
#include "kj_escape.h"
#include "kj_store_e_timeline.h"

static void put_us(FILE *f, int64_t ns)
{
	int64_t a = ns < 0 ? -ns : ns;
	fprintf(f, "%s%lld.%03lld", ns < 0 ? "-" : "", (long long)(a / 1000), (long long)(a % 1000));
}

struct jsonl_ctx {
	FILE *f;
	int64_t t0;
};

/* one event as a JSON line; an event without a start is left out */
static int put_event(void *ctx, const struct kj_store_event *e)
{
	const struct jsonl_ctx *x = ctx;
	FILE *f = x->f;
	if (!e->has_start)
		return 0;
	int64_t s = e->start_ns;
	fputs("{\"type\":\"", f);
	fputs(e->type, f);
	fputs("\",\"name\":", f);
	kj_json_put_str(f, e->name);
	fputs(",\"ts\":", f);
	put_us(f, s - x->t0);
	fputs(",\"duration_us\":", f);
	if (!e->has_end || e->end_ns < s)
		fputs("null", f);
	else
		put_us(f, e->end_ns - s);
	fputs(",\"size\":", f);
	if (!e->has_bytes)
		fputs("null", f);
	else
		fprintf(f, "%lld", (long long)e->bytes);
	fputs(",\"stream\":", f);
	if (!e->has_stream)
		fputs("null", f);
	else
		fprintf(f, "%lld", (long long)e->stream_id);
	fputs("}\n", f);
	return 0;
}

int kj_api_jsonl(sqlite3 *db, FILE *f)
{
	struct jsonl_ctx x = {f, 0};
	int64_t t1;
	int rc = kj_run_extent(db, &x.t0, &t1);
	if (rc == KJ_ENOTFOUND) {
		kj_errorf("the run holds no kernels, copies, API calls or NVTX ranges");
		return rc;
	}
	if (rc)
		return rc;
	rc = kj_store_e_events(db, put_event, &x);
	if (rc)
		return rc;
	return ferror(f) ? KJ_EIO : 0;
}
