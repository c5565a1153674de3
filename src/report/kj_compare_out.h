/* kjoule compare's outputs: the comparison kj_compare_compute() made (kj_compare.h) as text, as
 * one JSON object and as the files of compare -o. */
#ifndef KJ_COMPARE_OUT_H
#define KJ_COMPARE_OUT_H

#include <jansson.h>
#include <stdio.h>

#include "kj_compare.h"

/** @brief The report as one JSON object (docs/analysis-compare.md lists every field): never
 *  NaN; what the run lacks is null. Caller owns the reference. */
json_t *kj_compare_json(const struct kj_compare *c);

/** @brief The human-readable report. */
void kj_compare_print(const struct kj_compare *c, FILE *f);

/** @brief Write full_model_timing.json, comparison_report.json, energy_report.json, tiers.csv,
 *  top_kernels.csv, regions.csv and iterations.csv into dir (created if absent).
 *  @return 0 or KJ_EIO (message printed). */
int kj_compare_write_dir(const struct kj_compare *c, const char *dir);

#endif
