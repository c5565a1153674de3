/* Internals of the power and energy sampler shared by its files: each GPU's slot (the rows its
 * threads read, the errors kept as text, the process watch) and the sampler around them.
 * kj_sampler.c runs the threads; kj_sampler_db.c writes what they read into a run database. */
#ifndef KJ_SAMPLER_INTERNAL_H
#define KJ_SAMPLER_INTERNAL_H

#include "kj_sampler.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define KJ_MAX_ERRTEXT 16

struct rowvec {
	struct kj_sampler_row *v;
	size_t n, cap;
};

struct errtext {
	int64_t t_ns;
	int count;
	char text[200];
};

struct watchvec {
	struct kj_watch_row *v;
	size_t n, cap;
	int64_t *t;
	size_t nt, tcap;
};

struct slot {
	int index;
	struct kj_gpu_info info;
	pthread_t counter_thread;
	int counter_started;
	pthread_mutex_t mu;
	struct rowvec power, counter;
	int64_t power_latest, counter_latest; /* t_ns of the newest read of each thread */
	struct errtext err[KJ_MAX_ERRTEXT];
	int nerr;
	struct kj_sampler_stats st;
	double counter_ns_sum;
	struct kj_sampler *owner;
	struct watchvec watch; /* written by the power thread only; read after stop */
	int mig;               /* -1 unknown */
};

struct kj_sampler {
	struct kj_gpu_backend own_be;
	struct kj_gpu_backend *be;
	struct slot *slots;
	int nslots;
	int interval_us, slow_every;
	pthread_t power_thread;
	int power_started;
	atomic_int stop;
	int stopped;
	char first_error[256];
	int watch_every;       /* list processes every Nth power tick (0: not watching) */
	int watch_state;       /* enum kj_watch_state */
	char watch_why[300];
};

#endif
