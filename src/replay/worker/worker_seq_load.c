/* kjoule-replay-worker: a captured iteration (--sequence) read from the run and made ready on
 * the GPU (worker_seq.h). */
#include "worker_seq.h"

#include "kj_replay_cond.h"

static int seq_index(int64_t **ids, size_t *n, int64_t id)
{
	for (size_t i = 0; i < *n; i++)
		if ((*ids)[i] == id)
			return (int)i;
	int64_t *ni = realloc(*ids, (*n + 1) * sizeof(*ni));
	if (!ni)
		return -1;
	*ids = ni;
	ni[*n] = id;
	return (int)(*n)++;
}

/* The recorded device addresses of the iteration's copies, and the bytes of the host-to-device
 * ones the run kept (runs before they were recorded have neither: their copies use scratch
 * memory, as before). */
static int seq_load_copies(struct replay *R, struct seq *S)
{
	struct kj_store_rows *st = NULL;
	struct kj_store_copy c;
	int rc = 0;
	kj_store_seq_copies_open(R->db, &st);
	if (!st)
		return 0;
	for (size_t i = 0; i < S->nops && !rc; i++) {
		struct seq_op *o = &S->ops[i];
		if (o->type != 1 || o->correlation < 0)
			continue;
		if (kj_store_seq_copy_get(st, o->correlation, o->pid, &c)) {
			int n = c.data_bytes;
			o->copy_dst = c.dst;
			o->copy_src = c.src;
			if (c.data_is_blob && n > 0 && n == o->bytes) {
				if (!(o->data = malloc((size_t)n)))
					rc = KJ_ENOMEM;
				else
					memcpy(o->data, c.data, (size_t)n);
			}
		}
	}
	kj_store_rows_close(st);
	return rc;
}

/* Read the ops of one iteration, their launches, and the host kinds of their copies. */
int seq_load(struct replay *R, int64_t iteration, struct seq *S)
{
	struct kj_store_rows *st = NULL;
	struct kj_store_seq_op row;
	int rc = kj_store_seq_ops_open(R->db, iteration, R->o.seq_first, R->o.seq_last, &st);
	if (rc)
		return rc;
	struct kj_cond_handles *handles = kj_cond_handles_load(R->db); /* NULL in most runs */
	while (kj_store_seq_ops_next(st, &row)) {
		const char *op = row.op;
		const char *kind = row.kind;
		const char *hk = row.host_kinds;
		struct seq_op o;
		memset(&o, 0, sizeof(o));
		o.event = -1;
		o.kernel = -1;
		if (!op)
			continue;
		if (!strcmp(op, "kernel"))
			o.type = 0;
		else if (!strcmp(op, "memcpy"))
			o.type = 1;
		else if (!strcmp(op, "memset"))
			o.type = 2;
		else if (!strcmp(op, "event_record"))
			o.type = 3;
		else if (!strcmp(op, "event_wait"))
			o.type = 4;
		else
			continue; /* unknown operations are skipped */
		o.stream = seq_index(&S->stream_ids, &S->nstreams, row.stream_id);
		if (o.stream < 0) {
			rc = KJ_ENOMEM;
			break;
		}
		if (o.type >= 3) {
			o.event = seq_index(&S->event_ids, &S->nevents, row.event_id);
			if (o.event < 0) {
				rc = KJ_ENOMEM;
				break;
			}
		}
		o.bytes = row.bytes;
		if (o.bytes > S->max_bytes)
			S->max_bytes = o.bytes;
		if (o.type == 1) {
			o.copy = !kind ? 2 : !strcmp(kind, "HtoD") ? 0 : !strcmp(kind, "DtoH") ? 1
				 : !strcmp(kind, "HtoH") ? 3 : 2;
			o.pageable = hk && strstr(hk, "pageable") != NULL;
		}
		if (o.type == 2 && row.has_address) {
			o.address = row.address;
			o.value = row.value;
			o.element_bytes = row.element_bytes;
		}
		o.correlation = row.correlation;
		o.pid = row.pid;
		if (o.type == 0) {
			struct klaunch *nk = realloc(S->k, (S->nk + 1) * sizeof(*nk));
			if (!nk) {
				rc = KJ_ENOMEM;
				break;
			}
			S->k = nk;
			memset(&S->k[S->nk], 0, sizeof(S->k[0]));
			rc = load_launch_k(R, &S->k[S->nk], row.launch_params_id);
			if (rc)
				break;
			const struct klaunch *k = &S->k[S->nk];
			if (kj_cond_setter_param(handles, k->pid, k->unique_id, k->layout, k->nlayout, k->blob,
						 k->blob_len) >= 0) {
				/* it sets a conditional node's condition through a handle that means
				 * nothing outside its graph: left out, and said so */
				klaunch_free(&S->k[S->nk]);
				S->cond_setters++;
				continue;
			}
			if (R->k.pid < 0 && row.has_pid)
				R->k.pid = row.pid;
			if (R->k.pid < 0)
				R->k.pid = S->k[S->nk].pid;
			o.kernel = (int)S->nk++;
		}
		struct seq_op *no = realloc(S->ops, (S->nops + 1) * sizeof(*no));
		if (!no) {
			rc = KJ_ENOMEM;
			break;
		}
		S->ops = no;
		S->ops[S->nops++] = o;
	}
	kj_store_rows_close(st);
	kj_cond_handles_free(handles);
	/* --ordinals: a wait whose record lies outside the range has nothing to wait for (and a
	 * capture would refuse an event recorded outside it): drop it */
	if (!rc && (R->o.seq_first > 0 || R->o.seq_last < INT64_MAX)) {
		size_t k = 0;
		for (size_t i = 0; i < S->nops; i++) {
			int keep = 1;
			if (S->ops[i].type == 4) {
				keep = 0;
				for (size_t j = 0; j < k && !keep; j++)
					keep = S->ops[j].type == 3 && S->ops[j].event == S->ops[i].event;
			}
			if (keep)
				S->ops[k++] = S->ops[i];
		}
		S->nops = k;
	}
	if (!rc && !S->nstreams)
		rc = seq_index(&S->stream_ids, &S->nstreams, 0) < 0 ? KJ_ENOMEM : 0;
	if (!rc)
		rc = seq_load_copies(R, S);
	return rc;
}

/* Marks used the allocations a copy replayed on the program's memory touches: the destination of
 * a host-to-device copy whose bytes the run kept, both sides of a device-to-device copy. So a
 * copy into a buffer that only another copy reads (a graph's static input) still lands. */
void seq_mark_copies(struct replay *R, const struct seq *S, int *used)
{
	for (size_t i = 0; i < S->nops; i++) {
		const struct seq_op *o = &S->ops[i];
		uint64_t a[2] = {0, 0};
		if (o->type != 1)
			continue;
		if (o->copy == 0 && o->data)
			a[0] = o->copy_dst;
		else if (o->copy == 2 && o->copy_dst && o->copy_src)
			a[0] = o->copy_dst, a[1] = o->copy_src;
		for (int j = 0; j < 2; j++) {
			ssize_t r = a[j] ? kj_replay_range_find(R->ranges, R->nranges, a[j]) : -1;
			if (r >= 0)
				used[r] = 1;
		}
	}
}

/* A loaded sequence made ready on the GPU: launches relocated, memsets at their destinations,
 * functions loaded, streams, events and copy buffers. *moved: relocated launches added. */
int seq_gpu_ready(struct replay *R, struct seq *S, int *moved)
{
	int rc;
	for (size_t i = 0; i < S->nk; i++)
		*moved += relocate_launch(R, &S->k[i], 0) > 0;
	/* memsets at their recorded destinations where those lie in re-created regions (a kernel's
	 * semaphores must be zero as the program left them), on scratch memory otherwise */
	for (size_t i = 0; i < S->nops; i++) {
		struct seq_op *op = &S->ops[i];
		size_t b = (size_t)op->bytes;
		if (op->type == 2 && op->address)
			op->dst = region_address(R, op->address, b);
		if (op->type != 1)
			continue;
		if (op->copy == 0 && op->data && op->copy_dst)
			op->cdst = region_address(R, op->copy_dst, b);
		if (op->copy == 2 && op->copy_dst && op->copy_src) { /* both sides re-created, or scratch */
			CUdeviceptr d = region_address(R, op->copy_dst, b), from = region_address(R, op->copy_src, b);
			if (d && from)
				op->cdst = d, op->csrc = from;
		}
		if (op->copy == 1 && op->copy_src)
			op->csrc = region_address(R, op->copy_src, b);
		if (op->cdst && op->data) {
			if (cuMemHostAlloc(&op->data_pinned, b, 0))
				return KJ_EGPU;
			memcpy(op->data_pinned, op->data, b);
			S->program_bytes++;
		}
	}
	for (size_t i = 0; i < S->nk; i++)
		if ((rc = load_function_k(R, &S->k[i])) || (rc = prepare_k(R, &S->k[i], NULL, 0)))
			return rc;
	S->streams = calloc(S->nstreams, sizeof(*S->streams));
	S->join = calloc(S->nstreams, sizeof(*S->join));
	S->events = calloc(S->nevents + 1, sizeof(*S->events));
	if (!S->streams || !S->join || !S->events)
		return KJ_ENOMEM;
	for (size_t i = 0; i < S->nstreams; i++)
		if (cuStreamCreate(&S->streams[i], CU_STREAM_NON_BLOCKING) ||
		    cuEventCreate(&S->join[i], CU_EVENT_DISABLE_TIMING))
			return KJ_EGPU;
	for (size_t i = 0; i < S->nevents; i++)
		if (cuEventCreate(&S->events[i], CU_EVENT_DISABLE_TIMING))
			return KJ_EGPU;
	if (cuEventCreate(&S->start, CU_EVENT_DISABLE_TIMING))
		return KJ_EGPU;
	size_t mb = (size_t)(S->max_bytes > 0 ? S->max_bytes : 16);
	if (cuMemAlloc(&S->d1, mb) || cuMemAlloc(&S->d2, mb) || cuMemHostAlloc(&S->pinned, mb, 0) ||
	    cuMemHostAlloc(&S->pinned2, mb, 0))
		return KJ_EGPU;
	S->pageable = malloc(mb);
	S->pageable2 = malloc(mb);
	if (!S->pageable || !S->pageable2)
		return KJ_ENOMEM;
	fill_pattern(S->pinned, mb, 7);
	fill_pattern(S->pageable, mb, 8);
	return 0;
}
