/* Error codes shared by every kjoule module: functions return 0 or a negative KJ_E* code. */
#ifndef KJ_ERROR_H
#define KJ_ERROR_H

enum kj_error {
	KJ_OK = 0,
	KJ_EINVAL = -1,   /* bad argument or bad input data */
	KJ_ENOMEM = -2,   /* allocation failed */
	KJ_EIO = -3,      /* read/write/OS error */
	KJ_EDB = -4,      /* SQLite error */
	KJ_ESCHEMA = -5,  /* not a kjoule database, or a schema this build does not know */
	KJ_ENOTFOUND = -6,/* asked-for item is absent */
	KJ_ENODEV = -7,   /* no GPU, driver, NVML or CUPTI */
	KJ_EGPU = -8,     /* CUDA/CUPTI/NVML call failed */
	KJ_EEXIST = -9,   /* output exists */
	KJ_EUNSUP = -10,  /* not supported by this run or device */
	KJ_ETIMEDOUT = -11, /* a time limit passed (a worker killed for it) */
};

/** @brief Static text for a KJ_E* code. */
const char *kj_strerror(int err);

/** @brief printf-style message to stderr, prefixed "kjoule: ". */
void kj_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** @brief printf-style warning to stderr, prefixed "kjoule: warning: ". */
void kj_warnf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
