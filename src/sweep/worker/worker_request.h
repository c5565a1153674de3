/* kjoule-sweep-worker's line protocol (see kj_sweep_op.h): parsing a request line and writing the
 * KJ_SWEEP answer line. Plain C, no GPU: unit-tested on the CPU (tests/unit/test_sweep_request.c). */
#ifndef KJ_SWEEP_WORKER_REQUEST_H
#define KJ_SWEEP_WORKER_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "../kj_sweep_op.h"

struct sw_req {
	char op[64];
	int precision;                  /* enum kj_precision */
	int64_t v[KJ_SWEEP_MAX_COLS];
	int nv;
	int energy, check;              /* 0 or 1 */
};

/* One answer; a figure < 0 (or NaN) is written as '-'. */
struct sw_answer {
	const char *status;             /* ok | oom | error | unsupported */
	double f_us, b_us, f_uj, f_uj_unc, b_uj, b_uj_unc, err_f, err_b;
	double f_flops, b_flops, f_bytes, b_bytes; /* extra fields: flops_f= ... (the op table's, or '-') */
	double f_mhz, b_mhz;            /* mean SM clock over each energy window (f_mhz=, b_mhz=), or '-' */
	double f_tmhz, b_tmhz;          /* SM clock the timing ran at (settled timing: f_tmhz=, b_tmhz=) */
	double f_wus, b_wus;            /* time a call over the energy window (f_wus=, b_wus=), or '-' */
	double f_uj_warm, b_uj_warm, f_uj_cold, b_uj_cold; /* the two energies f_uj is the mean of, or '-' */
	const char *f_algo, *b_algo;    /* each pass's cuBLASLt algorithms (f_algo=, b_algo=); NULL or '' '-' */
	const char *msg;
};

/** @brief Parse "OP PRECISION V1,...,Vn ENERGY CHECK" (trailing newline and spaces allowed).
 *  @return 0, or KJ_EINVAL with a message naming the bad field in msg (msg_size bytes). */
int sw_req_parse(const char *line, struct sw_req *r, char *msg, size_t msg_size);

/** @brief "fp16", "bf16", "fp32" ("?" otherwise). */
const char *sw_precision_name(int precision);

/** @brief An answer with every figure unmeasured ('-') and the given status and message. */
void sw_answer_init(struct sw_answer *a, const char *status, const char *msg);

/** @brief Write the KJ_SWEEP line (with its newline) into buf; msg has newlines and double quotes
 *  replaced. @return the length, or < 0 when buf is too small. */
int sw_answer_format(const struct sw_answer *a, char *buf, size_t size);

#endif
