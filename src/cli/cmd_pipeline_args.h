/* kjoule pipeline's options and inputs (cmd_pipeline_args.c): parsed and checked before anything
 * runs, so that bad input is refused with nothing started and nothing written. */
#ifndef CMD_PIPELINE_ARGS_H
#define CMD_PIPELINE_ARGS_H

#include <stdint.h>
#include <stdio.h>

#include "kj_pipeline_run.h"

/** @brief The usage text of `kjoule pipeline`. */
void kj_cli_pipeline_usage(FILE *f);

/**
 * @brief Parse `kjoule pipeline`'s arguments into o (o->files is allocated: kj_cli_pipeline_free).
 *        Every number is parsed strictly and range-checked; files beside --from, --layers or
 *        --region without it are refused. Messages name the option and the value.
 * @return 0, 1 (--help printed), or -1 (usage error, said on stderr).
 */
int kj_cli_pipeline_args(int argc, char **argv, struct kj_pipeline_opts *o);
void kj_cli_pipeline_free(struct kj_pipeline_opts *o);

/**
 * @brief Read every pipeline file of o into sets (nfiles entries, *nsets read) and check them all:
 *        each file that cannot be read and each pipeline (of --only's choice, if given) with an
 *        error is said on stderr (file, line, pipeline, phase, field), as is a --set NAME that no
 *        chosen pipeline declares in its params, or an --only that names none.
 * @return 0 all good; -1 a bad file or pipeline; -2 a usage error (--set, --only). The sets read
 *         are kept either way (--list prints them); free with kj_pipeline_set_free.
 */
int kj_cli_pipeline_inputs(const struct kj_pipeline_opts *o, struct kj_pipeline_set *sets, int *nsets);

#endif
