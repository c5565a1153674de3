/* A run's watch for other processes in the words and the JSON the reports use (kj_shared.h
 * holds what was read and which iterations it touches). */
#include <jansson.h>
#include <stdio.h>

#include "kj_shared.h"
#include "kj_shared_out.h"

void kj_shared_pids_text(const struct kj_shared *sh, char *buf, size_t len)
{
	size_t k = 0;
	buf[0] = 0;
	for (size_t i = 0; i < sh->n_pids && k < len; i++)
		k += (size_t)snprintf(buf + k, len - k, "%s%lld", i ? ", " : "pids ", (long long)sh->pids[i]);
	if (sh->more_pids && k < len)
		snprintf(buf + k, len - k, ", ...");
}

void kj_shared_describe(const struct kj_shared *sh, char *buf, size_t len)
{
	char pids[200];
	size_t k;
	kj_shared_pids_text(sh, pids, sizeof(pids));
	if (sh->watch == KJ_SHARED_NOT_WATCHED)
		k = (size_t)snprintf(buf, len, "other processes on the GPU: not watched in this run");
	else if (sh->watch == KJ_SHARED_BLIND)
		k = (size_t)snprintf(buf, len, "%s", sh->note);
	else if (sh->n_proc)
		k = (size_t)snprintf(buf, len, "shared GPU: other processes (%s%s) were on the GPU for %.1f s "
				     "of the run; energy figures include their work", pids,
				     sh->pid_match_by_time ? ", as the driver reports them" : "",
				     (double)kj_shared_foreign_ns(sh) * 1e-9);
	else
		k = (size_t)snprintf(buf, len, "no other process was listed on the GPU during the run");
	if (k < len && sh->watch != KJ_SHARED_NOT_WATCHED && sh->n_util)
		k += (size_t)snprintf(buf + k, len - k, "; the GPU was busy %zu time(s) while no traced "
				      "kernel or copy ran (a secondary signal)", sh->n_util);
	if (k < len && (sh->mig == 1 || sh->mps == 1))
		snprintf(buf + k, len - k, "; %s: power and energy are the whole GPU's, not this %s's",
			 sh->mig == 1 ? "MIG is on" : "MPS is in use", sh->mig == 1 ? "instance" : "client");
}

/* The run's watch for other processes on its GPUs as JSON (kjoule info's "shared_gpu"), with the
 * sentence the text prints; {} when it cannot be read. */
json_t *kj_shared_json(sqlite3 *db)
{
	struct kj_shared sh;
	char text[700];
	json_t *o = json_object(), *p = json_array();
	if (kj_shared_load(db, &sh) != 0) {
		json_decref(p);
		return o;
	}
	kj_shared_describe(&sh, text, sizeof(text));
	json_object_set_new(o, "watched", json_string(sh.watch == KJ_SHARED_WATCHED ? "yes" :
						      sh.watch == KJ_SHARED_BLIND ? "cannot_see" : "no"));
	json_object_set_new(o, "summary", json_string(text));
	for (size_t i = 0; i < sh.n_pids; i++)
		json_array_append_new(p, json_integer(sh.pids[i]));
	json_object_set_new(o, "other_pids", sh.watch == KJ_SHARED_WATCHED ? p : (json_decref(p), json_null()));
	json_object_set_new(o, "other_processes_s", sh.watch == KJ_SHARED_WATCHED ?
			    json_real((double)kj_shared_foreign_ns(&sh) * 1e-9) : json_null());
	json_object_set_new(o, "unexplained_utilization_intervals",
			    sh.watch ? json_integer((json_int_t)sh.n_util) : json_null());
	json_object_set_new(o, "mig", sh.mig < 0 ? json_null() : json_boolean(sh.mig));
	json_object_set_new(o, "mps", sh.mps < 0 ? json_null() : json_boolean(sh.mps));
	kj_shared_free(&sh);
	return o;
}
