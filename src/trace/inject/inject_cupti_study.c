/* The KJOULE_CUPTI_STUDY list parsed; see inject_cupti_study.h. Pure: no CUPTI calls here. */
#include "inject_cupti_study.h"

#include <pthread.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A positive whole number of at most MAX, the whole of TEXT; -1 otherwise. */
static long long positive(const char *text, long long max)
{
	char *end = NULL;
	errno = 0;
	long long v = strtoll(text, &end, 10);
	if (errno || end == text || *end || v <= 0 || v > max)
		return -1;
	return v;
}

/* One item into *S; 0, or -1 when the item is not one the header lists. */
static int item(const char *it, struct kj_cupti_study *s)
{
	long long v;
	if (!strcmp(it, "pinned"))
		s->pinned = 1;
	else if (!strcmp(it, "shared_buf"))
		s->shared_buf = 1;
	else if (!strcmp(it, "cupti_clock"))
		s->cupti_clock = 1;
	else if (!strcmp(it, "kernels_only"))
		s->kernels_only = 1;
	else if (!strcmp(it, "no_activity"))
		s->no_activity = 1;
	else if (!strcmp(it, "no_subscribe"))
		s->no_subscribe = 1;
	else if (!strcmp(it, "no_nvtx"))
		s->no_nvtx = 1;
	else if (!strncmp(it, "devbuf=", 7) && (v = positive(it + 7, 1024)) > 0)
		s->devbuf_bytes = (size_t)v << 20;
	else if (!strncmp(it, "prealloc=", 9) && (v = positive(it + 9, 64)) > 0)
		s->prealloc = (size_t)v;
	else
		return -1;
	return 0;
}

int kj_cupti_study_parse(const char *text, struct kj_cupti_study *out, char *err, size_t err_len)
{
	struct kj_cupti_study s;
	char buf[256];
	memset(&s, 0, sizeof(s));
	memset(out, 0, sizeof(*out));
	if (!text || !*text)
		return 0;
	if (strlen(text) >= sizeof(buf)) {
		snprintf(err, err_len, "longer than %zu characters", sizeof(buf) - 1);
		return -1;
	}
	strcpy(buf, text);
	for (char *save = NULL, *it = strtok_r(buf, ",", &save); it; it = strtok_r(NULL, ",", &save))
		if (item(it, &s) != 0) {
			snprintf(err, err_len, "unknown item '%s' (pinned, devbuf=MB, prealloc=N, "
				 "shared_buf, cupti_clock, kernels_only, no_activity, no_subscribe, no_nvtx)", it);
			return -1;
		}
	*out = s;
	return 0;
}

static struct kj_cupti_study env_study;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static void parse_env(void)
{
	char err[160];
	kj_cupti_study_parse(getenv("KJOULE_CUPTI_STUDY"), &env_study, err, sizeof(err));
}

const struct kj_cupti_study *kj_cupti_study_of_env(void)
{
	pthread_once(&env_once, parse_env);
	return &env_study;
}
