/* kjoule predict --model ... --run RUN.kjdb (docs/sweep.md, "kjoule predict"): a model's step, the
 * operator sum kj_predict_step() computed, against the step kjoule compare measures in a traced
 * run, as one JSON object and as text. */
#ifndef KJ_PREDICT_AGAINST_H
#define KJ_PREDICT_AGAINST_H

#include <jansson.h>
#include <stdio.h>

#include "kj_predict_step.h"

/* The predicted step (time_us, energy_uj; *_ok 0 when partial) against the step `kjoule compare`
 * measures in run (region and skip as compare takes them; skip < 0 its default): measured time,
 * energy and kernel sum a step, errors in % (null, with errors_not_taken saying why, where either
 * side is missing), the run's GPU against gpu, and per tier predicted against measured time.
 * NULL after a message on stderr naming the run when it cannot be read or compared. */
json_t *kj_predict_against_run(const char *run, const char *region, int skip, const struct kj_tier_sum *tiers,
			       int ntiers, double time_us, int time_ok, double energy_uj, int energy_ok,
			       const char *gpu);

/* The text form of kj_predict_against_run's object. */
void kj_predict_against_print(const json_t *a, FILE *f);

#endif
