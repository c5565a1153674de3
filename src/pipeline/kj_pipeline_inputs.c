/* kjoule pipeline's input files read and checked before anything runs (kj_pipeline_run.h). */
#include <string.h>

#include "kj_error.h"
#include "kj_pipeline_run.h"

/* 1 when pipeline p is one the command runs or lists (every one, or --only's). */
static int chosen(const struct kj_pipeline_opts *o, const struct kj_pipeline *p)
{
	return !o->only || !strcmp(p->name, o->only);
}

int kj_pipeline_inputs_read(const struct kj_pipeline_opts *o, struct kj_pipeline_set *sets, int *nsets)
{
	char err[600];
	int bad_files = 0, bad_pipelines = 0, hit = 0;
	*nsets = 0;
	for (int i = 0; i < o->nfiles; i++) {
		if (kj_pipeline_file_read(o->files[i], &o->ov, &sets[*nsets], err, sizeof(err))) {
			kj_errorf("%s", err);
			bad_files++;
			continue;
		}
		(*nsets)++;
	}
	for (int s = 0; s < *nsets; s++)
		for (int i = 0; i < sets[s].n; i++) {
			const struct kj_pipeline *p = &sets[s].p[i];
			if (!chosen(o, p))
				continue;
			hit++;
			if (p->error[0]) {
				kj_errorf("%s", p->error);
				bad_pipelines++;
			}
		}
	/* two chosen pipelines of one name would write the same files and summary name */
	for (int s = 0; s < *nsets; s++)
		for (int i = 0; i < sets[s].n; i++) {
			const struct kj_pipeline *p = &sets[s].p[i], *q = NULL;
			for (int t = 0; t <= s && !q; t++)
				for (int j = 0; j < (t == s ? i : sets[t].n) && !q; j++)
					if (chosen(o, p) && !p->error[0] && !sets[t].p[j].error[0] &&
					    !strcmp(sets[t].p[j].name, p->name))
						q = &sets[t].p[j];
			if (q) {
				kj_errorf("%s: pipeline '%s': the name is taken (%s): its files would overwrite the "
					  "other's", p->file, p->name, q->file);
				bad_pipelines++;
			}
		}
	if (bad_files || bad_pipelines) {
		kj_errorf("pipeline: refused: %d file(s) unreadable, %d pipeline(s) with errors; nothing was run",
			  bad_files, bad_pipelines);
		return KJ_EINVAL;
	}
	if (o->only && !hit) {
		kj_errorf("pipeline: --only %s: no such pipeline in the files given", o->only);
		return KJ_ENOTFOUND;
	}
	for (int k = 0; k < o->ov.nset; k++) {
		int used = 0;
		for (int s = 0; s < *nsets; s++)
			for (int i = 0; i < sets[s].n; i++)
				used |= chosen(o, &sets[s].p[i]) && (sets[s].p[i].set_used >> k & 1u);
		if (!used) {
			kj_errorf("pipeline: --set %s: no pipeline given declares a parameter '%s' (in its params)",
				  o->ov.set_name[k], o->ov.set_name[k]);
			return KJ_ENOTFOUND;
		}
	}
	return 0;
}
