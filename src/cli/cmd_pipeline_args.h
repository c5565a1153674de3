/* kjoule pipeline's options (cmd_pipeline_args.c): parsed and checked before anything
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

#endif
