/* Internals of compare's writers (text, JSON, files, and the report page's compare parts): the
 * sections each writer file contributes, and the JSON number helpers. The figures they write are
 * analyze's (kj_compare_internal.h). */
#ifndef KJ_COMPARE_OUT_INTERNAL_H
#define KJ_COMPARE_OUT_INTERNAL_H

#include <jansson.h>
#include <stdio.h>

#include "kj_compare_internal.h"
#include "kj_compare_out.h"

/* v rounded to 3 decimals (ratio: 6) as a JSON real; null when not known or not finite. */
json_t *cmp_num_or_null(double v, int known);
json_t *cmp_ratio_or_null(double v, int known);
/* kj_compare_json.c */
json_t *cmp_missing_json(const struct kj_compare *c, const struct cmp_summary *s);
/* kj_compare_ranks.c: the ranks and job section, only when c->job has two ranks or more */
void cmp_ranks_print(const struct kj_compare *c, FILE *f);
json_t *cmp_ranks_json(const struct kj_compare *c);
/* kj_compare_shared_out.c: the shared-GPU lines and JSON of the measured iterations */
void cmp_shared_print(const struct kj_compare *c, FILE *f);
json_t *cmp_shared_json(const struct kj_compare *c);
/* kj_compare_clocks_out.c */
/** @brief The energy section's clock-state lines; nothing for a run that recorded none of it. */
void cmp_clocks_print(const struct kj_compare *c, FILE *f);
/* 1 when the program's clock state over the kept iterations is capped or throttled (partly or
 * throttled), 0 when clean, -1 when not recorded. */
int cmp_clocks_program_capped(const struct kj_compare *c);
/* Under explained_fraction: where the program ran capped, that its kernels ran slower than their
 * short timing replays for it (nothing otherwise). */
void cmp_clocks_time_note(const struct kj_compare *c, const struct cmp_summary *s, FILE *f);
/** @brief energy_clock_state of compare's JSON (docs/analysis-compare.md); null where unknown. */
json_t *cmp_clocks_json(const struct kj_compare *c);
/* kj_compare_print.c */
/* The kernels with the most energy per iteration, predicted and in situ, as a text table. */
void cmp_energy_print_top(const struct kj_compare *c, const struct cmp_summary *s, FILE *f);

#endif
