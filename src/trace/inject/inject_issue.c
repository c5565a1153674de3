#define _GNU_SOURCE
/* Host calls that issue GPU work without a kernel launch of their own: graph launches (and the
 * instantiations and uploads that make and stage them), copies and memsets. Each gets one
 * KJ_REC_ISSUE record (start, end, thread, correlation), always, without --api: the GPU work they
 * issued carries the same correlation id, which is how a graph's kernels are attributed to the
 * iteration whose range was open when cuGraphLaunch ran. */
#include <cupti.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inject.h"

/* Which op an id is; 0 when not one of ours. The table is built once, from CUPTI's names, so
 * every variant (_v2, _ptds, _ptsz, Async, 2D/3D, Peer) is followed. */
static uint8_t *op_of; /* indexed by driver callback id */
static uint32_t op_count;

static int op_from_name(const char *name)
{
	if (!name)
		return 0;
	if (!strncmp(name, "cuGraphLaunch", 13))
		return KJ_ISSUE_GRAPH_LAUNCH;
	if (!strncmp(name, "cuGraphInstantiate", 18))
		return KJ_ISSUE_GRAPH_INSTANTIATE;
	if (!strncmp(name, "cuGraphUpload", 13))
		return KJ_ISSUE_GRAPH_UPLOAD;
	if (!strncmp(name, "cuMemcpy", 8))
		return KJ_ISSUE_MEMCPY;
	if (!strncmp(name, "cuMemsetD", 9))
		return KJ_ISSUE_MEMSET;
	return 0;
}

int kj_issue_op(uint32_t cbid)
{
	return op_of && cbid < op_count ? op_of[cbid] : 0;
}

uint8_t *kj_driver_cbid_table(int (*of_name)(const char *name))
{
	uint8_t *t = calloc(CUPTI_DRIVER_TRACE_CBID_SIZE, 1);
	for (uint32_t id = 1; t && id < CUPTI_DRIVER_TRACE_CBID_SIZE; id++) {
		const char *name = NULL;
		if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, id, &name) == CUPTI_SUCCESS)
			t[id] = (uint8_t)of_name(name);
	}
	return t;
}

static int enable_ops(CUpti_SubscriberHandle sub, int on, int but_instantiate)
{
	if (!op_of) {
		op_count = CUPTI_DRIVER_TRACE_CBID_SIZE;
		op_of = kj_driver_cbid_table(op_from_name);
		if (!op_of)
			return -1;
	}
	for (uint32_t id = 1; id < op_count; id++)
		if (op_of[id] && !(but_instantiate && op_of[id] == KJ_ISSUE_GRAPH_INSTANTIATE))
			cuptiEnableCallback(on, sub, CUPTI_CB_DOMAIN_DRIVER_API, id);
	return 0;
}

int kj_issue_enable(CUpti_SubscriberHandle sub, int on)
{
	return enable_ops(sub, on, 0);
}

int kj_issue_enable_window(CUpti_SubscriberHandle sub, int on)
{
	return enable_ops(sub, on, 1);
}

static __thread int64_t tl_issue_start;

static uint32_t exec_id(CUgraphExec e)
{
	uint32_t id = 0;
	return e && cuptiGetGraphExecId(e, &id) == CUPTI_SUCCESS ? id : 0;
}

static uint32_t graph_id(CUgraph g)
{
	uint32_t id = 0;
	return g && cuptiGetGraphId(g, &id) == CUPTI_SUCCESS ? id : 0;
}

/* The graph and exec ids of an instantiation, once it returned. Every cuGraphInstantiate* form
 * starts with (CUgraphExec *phGraphExec, CUgraph hGraph). */
static void instantiate_ids(const CUpti_CallbackData *cb, struct kj_rec_issue *r)
{
	const cuGraphInstantiateWithFlags_params *p = cb->functionParams;
	if (!p)
		return;
	r->graph_id = graph_id(p->hGraph);
	if (!r->status && p->phGraphExec)
		r->exec_id = exec_id(*p->phGraphExec);
}

void kj_issue_handle(uint32_t cbid, const CUpti_CallbackData *cb)
{
	struct kj_rec_issue r;
	int op = kj_issue_op(cbid);
	if (!op)
		return;
	if (cb->callbackSite == CUPTI_API_ENTER) {
		if (op == KJ_ISSUE_GRAPH_INSTANTIATE)
			kj_graph_on_instantiate(cb);
		if (op == KJ_ISSUE_GRAPH_LAUNCH && kj_cfg.snapshot_bytes > 0 && cb->functionParams)
			kj_snapshot_graph(((const cuGraphLaunch_params *)cb->functionParams)->hStream,
					  cb->correlationId);
		tl_issue_start = kj_now_ns();
		return;
	}
	memset(&r, 0, sizeof(r));
	r.h.type = KJ_REC_ISSUE;
	r.h.size = sizeof(r);
	r.end_ns = kj_now_ns();
	r.start_ns = tl_issue_start ? tl_issue_start : r.end_ns;
	tl_issue_start = 0;
	r.correlation = cb->correlationId;
	r.tid = kj_thread_id();
	r.op = (uint32_t)op;
	r.cbid = cbid;
	if (cb->functionReturnValue)
		r.status = (uint32_t)*(const CUresult *)cb->functionReturnValue;
	if (op == KJ_ISSUE_GRAPH_LAUNCH || op == KJ_ISSUE_GRAPH_UPLOAD) {
		/* cuGraphLaunch and cuGraphUpload (and their _ptsz forms): (hGraphExec, hStream) */
		const cuGraphLaunch_params *p = cb->functionParams;
		if (p)
			r.exec_id = exec_id(p->hGraph);
	} else if (op == KJ_ISSUE_GRAPH_INSTANTIATE) {
		instantiate_ids(cb, &r);
	}
	kj_spool_write(&r, sizeof(r));
}
