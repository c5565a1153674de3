/* --capture values: one parser for the CLI, the injection library and the readers of a run. */
#include "kj_capture_spec.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kj_error.h"
#include "kj_num.h"

#define KJ_CAPTURE_MAX 1000000000LL

/* A refusal: *out zeroed, the reason in why. */
static int refuse(struct kj_capture_spec *out, char *why, size_t whylen, const char *fmt, const char *a,
		  const char *b)
{
	memset(out, 0, sizeof(*out));
	if (why && whylen)
		snprintf(why, whylen, fmt, a, b);
	return KJ_EINVAL;
}

int kj_capture_parse(const char *text, struct kj_capture_spec *out, char *why, size_t whylen)
{
	char num[64], reason[160];
	const char *at, *colon;
	size_t name_len;
	memset(out, 0, sizeof(*out));
	if (!text || !*text)
		return refuse(out, why, whylen, "%s%swants NAME[@FIRST:COUNT] or cuda-profiler-api", "", "");
	if (!strcmp(text, KJ_CAPTURE_PROFILER_TEXT)) {
		out->mode = KJ_CAPTURE_PROFILER;
		out->first = 0;
		out->count = 1;
		return 0;
	}
	at = strrchr(text, '@');
	name_len = at ? (size_t)(at - text) : strlen(text);
	if (name_len == 0)
		return refuse(out, why, whylen, "'%s': the range NAME is empty%s", text, "");
	if (name_len >= KJ_CAPTURE_NAME_MAX)
		return refuse(out, why, whylen, "'%.40s...': NAME is longer than 255 bytes%s", text, "");
	out->mode = KJ_CAPTURE_NVTX;
	memcpy(out->name, text, name_len);
	out->name[name_len] = '\0';
	out->first = 0;
	out->count = 1;
	if (!at)
		return 0;
	colon = strchr(at + 1, ':');
	size_t flen = colon ? (size_t)(colon - at - 1) : strlen(at + 1);
	if (flen == 0 || flen >= sizeof(num))
		return refuse(out, why, whylen, "'%s': FIRST after '@' is missing or too long%s", text, "");
	memcpy(num, at + 1, flen);
	num[flen] = '\0';
	if (kj_num_i64(num, 0, KJ_CAPTURE_MAX, &out->first, reason, sizeof(reason)))
		return refuse(out, why, whylen, "'%s': FIRST (instances skipped, from 0): %s", text, reason);
	if (!colon)
		return 0;
	if (!colon[1] || strlen(colon + 1) >= sizeof(num))
		return refuse(out, why, whylen, "'%s': COUNT after ':' is missing or too long%s", text, "");
	if (kj_num_i64(colon + 1, 1, KJ_CAPTURE_MAX, &out->count, reason, sizeof(reason)))
		return refuse(out, why, whylen, "'%s': COUNT (instances captured, at least 1): %s", text, reason);
	return 0;
}

void kj_capture_format(const struct kj_capture_spec *s, char *out, size_t len)
{
	if (!len)
		return;
	if (s->mode == KJ_CAPTURE_PROFILER)
		snprintf(out, len, "%s", KJ_CAPTURE_PROFILER_TEXT);
	else if (s->mode == KJ_CAPTURE_NVTX)
		snprintf(out, len, "%s@%" PRId64 ":%" PRId64, s->name, s->first, s->count);
	else
		out[0] = '\0';
}

int kj_capture_in_window(const struct kj_capture_spec *s, int64_t instance)
{
	return s->mode != KJ_CAPTURE_NONE && instance >= s->first && instance - s->first < s->count;
}
