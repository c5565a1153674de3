/* Whether a run's recorded launch parameters belong to the functions that ran: every unique
 * kernel's parameter block size against the captured cubins' functions of its name with the
 * registers CUPTI recorded (`kjoule info`'s `parameters` line). */
#ifndef KJ_PARAM_CHECK_H
#define KJ_PARAM_CHECK_H

#include <sqlite3.h>
#include <stdint.h>

struct kj_param_check {
	int64_t consistent;  /* a function of its name has its registers and its recorded block size */
	int64_t mismatched;  /* functions with its registers exist, all with another block size */
	int64_t uncheckable; /* no registers, no parameters, no cubin defining it with those registers */
	char example[256];   /* the first mismatched kernel, said in a line */
};

struct kj_map;

/** @brief Fill *out from db's modules, unique kernels and launch parameters; when mismatched is
 *  not NULL, put in it each mismatched unique kernel whose recorded block is too short for every
 *  function of its name with its traced registers (value: the least they take). 0, or KJ_E*. */
int kj_param_check(sqlite3 *db, struct kj_param_check *out, struct kj_map *mismatched);

#endif
