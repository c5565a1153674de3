/* The KJOULE_CUPTI_STUDY list parsed; see inject_cupti_study.h. Pure: no CUPTI calls here. */
#include "inject_cupti_study.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
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

/* the items that switch one thing on, by name */
static const struct {
	const char *name;
	size_t offset;
} flags[] = {
	{"pinned", offsetof(struct kj_cupti_study, pinned)},
	{"shared_buf", offsetof(struct kj_cupti_study, shared_buf)},
	{"cupti_clock", offsetof(struct kj_cupti_study, cupti_clock)},
	{"kernels_only", offsetof(struct kj_cupti_study, kernels_only)},
	{"no_activity", offsetof(struct kj_cupti_study, no_activity)},
	{"no_subscribe", offsetof(struct kj_cupti_study, no_subscribe)},
	{"no_nvtx", offsetof(struct kj_cupti_study, no_nvtx)},
};

/* One item into *S; 0, or -1 when the item is not one the header lists. */
static int item(const char *it, struct kj_cupti_study *s)
{
	long long v;
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (!strcmp(it, flags[i].name)) {
			*(int *)((char *)s + flags[i].offset) = 1;
			return 0;
		}
	if (!strncmp(it, "devbuf=", 7) && (v = positive(it + 7, 1024)) > 0)
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
static char env_why[160];
static int env_refused;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static void parse_env(void)
{
	env_refused = kj_cupti_study_parse(getenv("KJOULE_CUPTI_STUDY"), &env_study, env_why, sizeof(env_why)) != 0;
}

const struct kj_cupti_study *kj_cupti_study_of_env(const char **why)
{
	pthread_once(&env_once, parse_env);
	if (why)
		*why = env_refused ? env_why : NULL;
	return &env_study;
}
