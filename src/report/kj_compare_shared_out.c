/* compare on a shared GPU in the text report and the JSON: which measured iterations had another
 * process's work on a GPU and which ones the energy figures come from (kj_compare_shared.c). */
#include "kj_compare_out_internal.h"
#include "kj_shared_out.h"

static double frac(const struct kj_shared_choice *ch)
{
	return ch->n_measured ? (double)ch->n_foreign / (double)ch->n_measured : 0;
}

/* The energy section's lines about other processes; nothing for a run that did not watch, so
 * older runs print exactly as before. */
void cmp_shared_print(const struct kj_compare *c, FILE *f)
{
	const struct kj_shared *sh = &c->shared;
	const struct kj_shared_choice *ch = &c->shared_choice;
	char pids[200];
	if (sh->watch == KJ_SHARED_NOT_WATCHED)
		return; /* an older run, or --no-watch: printed as it always was */
	kj_shared_pids_text(sh, pids, sizeof(pids));
	if (sh->watch == KJ_SHARED_BLIND)
		fprintf(f, "  %s: energy figures may include other processes' work\n", sh->note);
	else if (ch->n_foreign == 0)
		fprintf(f, "  no other process was listed on the GPU during the %lld measured iteration(s)\n",
			(long long)ch->n_measured);
	else if (ch->use_clean)
		fprintf(f, "  shared GPU: other processes (%s%s) were active during %.0f %% of the measured "
			   "iterations (%lld of %lld); the energy figures below use the %lld iterations without "
			   "them\n", pids, sh->pid_match_by_time ? ", as the driver reports them" : "",
			100 * frac(ch), (long long)ch->n_foreign, (long long)ch->n_measured,
			(long long)(ch->n_measured - ch->n_foreign));
	else
		fprintf(f, "  shared GPU: other processes (%s%s) were active during %.0f %% of the measured "
			   "iterations (%lld of %lld); energy figures include their work (fewer than %d "
			   "iterations without them)\n", pids,
			sh->pid_match_by_time ? ", as the driver reports them" : "", 100 * frac(ch),
			(long long)ch->n_foreign, (long long)ch->n_measured, KJ_SHARED_MIN_CLEAN);
	if (ch->n_util)
		fprintf(f, "  the GPU was busy while no traced kernel or copy ran in %lld measured iteration(s)"
			   " (secondary signal: another process, or work kjoule does not trace)\n",
			(long long)ch->n_util);
	if (sh->mig == 1 || sh->mps == 1)
		fprintf(f, "  %s: power and energy are the whole GPU's (card's), not this %s's\n",
			sh->mig == 1 ? "MIG is on" : "MPS is in use", sh->mig == 1 ? "instance" : "client");
}

static json_t *flag_json(int v)
{
	return v < 0 ? json_null() : json_boolean(v);
}

/* shared_gpu of compare's JSON and energy_report.json (docs/analysis-compare.md): null where a
 * figure is not known, never 0. */
json_t *cmp_shared_json(const struct kj_compare *c)
{
	const struct kj_shared *sh = &c->shared;
	const struct kj_shared_choice *ch = &c->shared_choice;
	json_t *o = json_object(), *p = json_array();
	int watched = sh->watch == KJ_SHARED_WATCHED;
	json_object_set_new(o, "watched", json_string(watched ? "yes" : sh->watch == KJ_SHARED_BLIND ?
						      "cannot_see" : "no"));
	json_object_set_new(o, "note", sh->watch == KJ_SHARED_BLIND ? json_string(sh->note) : json_null());
	for (size_t i = 0; i < sh->n_pids; i++)
		json_array_append_new(p, json_integer(sh->pids[i]));
	json_object_set_new(o, "other_pids", watched ? p : (json_decref(p), json_null()));
	json_object_set_new(o, "pids_from_other_namespace", watched ? json_boolean(sh->pid_match_by_time) : json_null());
	json_object_set_new(o, "iterations_measured", sh->watch ? json_integer(ch->n_measured) : json_null());
	json_object_set_new(o, "iterations_with_other_processes", watched ? json_integer(ch->n_foreign) : json_null());
	json_object_set_new(o, "fraction_with_other_processes",
			    cmp_ratio_or_null(frac(ch), watched && ch->n_measured > 0));
	json_object_set_new(o, "iterations_unexplained_utilization",
			    sh->watch ? json_integer(ch->n_util) : json_null());
	json_object_set_new(o, "energy_from", json_string(ch->use_clean ? "iterations_without_other_processes"
								    : "all_iterations"));
	json_object_set_new(o, "iterations_for_energy", !sh->watch ? json_null() :
			    json_integer(ch->use_clean ? ch->n_measured - ch->n_foreign : ch->n_measured));
	json_object_set_new(o, "mig", flag_json(sh->mig));
	json_object_set_new(o, "mps", flag_json(sh->mps));
	json_object_set_new(o, "energy_scope", sh->mig == 1 || sh->mps == 1 ? json_string("whole_gpu") :
			    sh->mig == 0 && sh->mps == 0 ? json_string("gpu") : json_null());
	return o;
}
