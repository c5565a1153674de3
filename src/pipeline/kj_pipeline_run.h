/* kjoule pipeline's work: each phase of a pipeline measured by a worker process (the pipeline
 * worker for shape phases; a caller's function for --from's ranges of a run), idle power found,
 * the ceilings measured, and each pipeline's files and summary row written. The command
 * (src/cli/cmd_pipeline.c) parses options, reads the pipelines and calls these. */
#ifndef KJ_PIPELINE_RUN_H
#define KJ_PIPELINE_RUN_H

#include <stdint.h>
#include <stdio.h>

#include "kj_pipeline.h"

/** kjoule pipeline's options (parsed by the CLI: src/cli/cmd_pipeline_args.c). */
struct kj_pipeline_opts {
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

/**
 * @brief Read every pipeline file of o into sets (nfiles entries, *nsets read) and check them all:
 *        each file that cannot be read and each pipeline (of --only's choice, if given) with an
 *        error is said on stderr (file, line, pipeline, phase, field), as is a --set NAME that no
 *        chosen pipeline declares in its params, or an --only that names none.
 * @return 0 all good; KJ_EINVAL a bad file or pipeline; KJ_ENOTFOUND --set or --only names
 *         nothing (a usage error). The sets read are kept either way (--list prints them); free
 *         with kj_pipeline_set_free.
 */
int kj_pipeline_inputs_read(const struct kj_pipeline_opts *o, struct kj_pipeline_set *sets, int *nsets);

/** A --from phase (KJ_PHASE_SEQ: a range of a run's kept iteration it) measured into r, whose
 *  flops and bytes are set; status "failed" with an error when it could not be. */
typedef void (*kj_pipeline_seq_fn)(const struct kj_pipeline_opts *o, int64_t it, const struct kj_phase *ph,
				   struct kj_phase_result *r);

/** The pipeline worker host: one worker process, started on the first request and again after
 *  it died, and the results already measured by request (identical layers are measured once). */
struct kj_pipeline_host;

/**
 * @brief A host for worker (a path; may be "" where only --from phases run), seq measuring
 *        KJ_PHASE_SEQ phases (may be NULL where there are none). o must outlive the host.
 * @return 0, KJ_ENOMEM.
 */
int kj_pipeline_host_open(const struct kj_pipeline_opts *o, const char *worker, kj_pipeline_seq_fn seq,
			  struct kj_pipeline_host **out);
/** @brief Stop the worker and free the host; accepts NULL. */
void kj_pipeline_host_close(struct kj_pipeline_host *h);

/**
 * @brief Idle power in W and where it came from (src): --idle-w, the idle_power table of
 *        --idle-db, or `kjoule power --idle --duration 3` run now into o->out/idle.kjdb.
 * @return the power, or -1 when unknown (src says why).
 */
double kj_pipeline_idle_power(const struct kj_pipeline_opts *o, char *src, size_t len);

/** @brief Measured ceilings (a device-to-device copy, a large GEMM) into o->peak_tflops and
 *         o->peak_gbs unless given; said on out, or warned when not measured. */
void kj_pipeline_ceilings(struct kj_pipeline_opts *o, struct kj_pipeline_host *h, FILE *out);

/**
 * @brief Measure one pipeline (read without error) phase by phase, each said on out as it ends
 *        and a failed one on stderr; its totals said on out; NAME.log, NAME.phases.csv and
 *        NAME.svg written in o->out, its row appended to summary. it: --from's kept iteration.
 * @return 0 when every phase was measured, else 1.
 */
int kj_pipeline_measure(const struct kj_pipeline_opts *o, struct kj_pipeline_host *h, const struct kj_pipeline *p,
			int64_t it, double idle_w, const char *idle_src, FILE *summary, FILE *out);

#endif
