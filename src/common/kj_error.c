#include "kj_error.h"

#include <stdarg.h>
#include <stdio.h>

const char *kj_strerror(int err)
{
	switch (err) {
	case KJ_OK: return "success";
	case KJ_EINVAL: return "invalid argument or input";
	case KJ_ENOMEM: return "out of memory";
	case KJ_EIO: return "input/output error";
	case KJ_EDB: return "database error";
	case KJ_ESCHEMA: return "not a kjoule run database of a known schema";
	case KJ_ENOTFOUND: return "not found";
	case KJ_ENODEV: return "no GPU, driver or library";
	case KJ_EGPU: return "GPU call failed";
	case KJ_EEXIST: return "already exists";
	case KJ_EUNSUP: return "not supported";
	case KJ_ETIMEDOUT: return "timed out";
	default: return "unknown error";
	}
}

void kj_errorf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("kjoule: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void kj_warnf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("kjoule: warning: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}
