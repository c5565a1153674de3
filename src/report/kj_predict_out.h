/* kjoule predict's output (docs/sweep.md, "kjoule predict"): what kj_predict_op() and
 * kj_predict_step() computed, as text or JSON. Formatting only. */
#ifndef KJ_PREDICT_OUT_H
#define KJ_PREDICT_OUT_H

#include <jansson.h>
#include <stdio.h>

#include "kj_predict_step.h"

/** @brief o (predicted on gpu, for precision, prop 0 fwd / 1 bwd, at shape as given) to f: a
 *  heading and a time and an energy line, or (json) one indented JSON object. */
void kj_predict_op_write(FILE *f, const struct kj_op_prediction *o, const char *gpu, int precision,
			 int prop, const char *shape, int json);

/** @brief s as text to f: the operator table, the totals, what they leave out, and the scope of
 *  the sum (what a measured step holds beside it). */
void kj_predict_step_print(FILE *f, const struct kj_step_prediction *s);

/** @brief s (of the model file path) as one indented JSON object to f, with against (borrowed;
 *  NULL: none) as its "against" member. */
void kj_predict_step_json(FILE *f, const struct kj_step_prediction *s, const char *path, json_t *against);

#endif
