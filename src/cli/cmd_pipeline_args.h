/* kjoule pipeline's options and inputs (cmd_pipeline_args.c): parsed and checked before anything
 * runs, so that bad input is refused with nothing started and nothing written. */
#ifndef CMD_PIPELINE_ARGS_H
#define CMD_PIPELINE_ARGS_H

#include <stdint.h>
#include <stdio.h>

#include "kj_pipeline.h"

struct popts {
	const char **files; /* every FILE argument, in order (argv's strings) */
	int nfiles;
	const char *only, *out, *from, *region, *idle_db;
	int list, layers, unroll, device, no_energy, timeout_s, runs;
	int layers_given;   /* --layers was given (it goes with --from only) */
	int from_snapshot;  /* --from: the run saved the program's buffers (--snapshot[-graphs]) */
	int64_t iters;
	double energy_s, idle_w, peak_tflops, peak_gbs;
	struct kj_pipeline_overrides ov;
	char precision[8];
};

/** @brief The usage text of `kjoule pipeline`. */
void kj_cli_pipeline_usage(FILE *f);

/**
 * @brief Parse `kjoule pipeline`'s arguments into o (o->files is allocated: kj_cli_pipeline_free).
 *        Every number is parsed strictly and range-checked; files beside --from, --layers or
 *        --region without it are refused. Messages name the option and the value.
 * @return 0, 1 (--help printed), or -1 (usage error, said on stderr).
 */
int kj_cli_pipeline_args(int argc, char **argv, struct popts *o);
void kj_cli_pipeline_free(struct popts *o);

/**
 * @brief Read every pipeline file of o into sets (nfiles entries, *nsets read) and check them all:
 *        each file that cannot be read and each pipeline (of --only's choice, if given) with an
 *        error is said on stderr (file, line, pipeline, phase, field), as is a --set NAME that no
 *        chosen pipeline declares in its params, or an --only that names none.
 * @return 0 all good; -1 a bad file or pipeline; -2 a usage error (--set, --only). The sets read
 *         are kept either way (--list prints them); free with kj_pipeline_set_free.
 */
int kj_cli_pipeline_inputs(const struct popts *o, struct kj_pipeline_set *sets, int *nsets);

#endif
