/* compare's ranks and job section of a multi-GPU run (docs/multi-gpu.md): printed and put in
 * the JSON only when the run has two ranks or more, so single-GPU reports stay as they were. */
#include "kj_compare_out_internal.h"

#include <string.h>


void cmp_ranks_print(const struct kj_compare *c, FILE *f)
{
	const struct kj_job *j = &c->job;
	if (j->n < 2)
		return;
	fprintf(f, "\nRanks: %zu processes with GPU work on %lld GPU(s) (%lld traced processes in all)\n",
		j->n, (long long)j->n_gpus, (long long)j->n_processes);
	fprintf(f, "  %-18s %8s %-10s %6s %10s %10s %10s %10s %9s %14s\n", "rank", "pid", "range",
		"iters", "wall_us", "busy_us", "nccl_us", "exposed_us", "explained", "energy_mJ");
	for (size_t i = 0; i < j->n; i++) {
		const struct kj_rank *r = &j->r[i];
		char lab[48], ex[16] = "n/a", en[40] = "n/a";
		kj_rank_label(j, r->pid, lab, sizeof(lab));
		if (r->have_explained)
			snprintf(ex, sizeof(ex), "%.3f", r->explained_fraction);
		if (r->energy_ok)
			snprintf(en, sizeof(en), "%.1f +- %.1f", r->energy_mj, r->energy_unc_mj);
		fprintf(f, "  %-18s %8lld %-10.10s %6lld %10.1f %10.1f %10.1f %10.1f %9s %14s\n", lab,
			(long long)r->pid, r->range[0] ? r->range : "(whole)", (long long)r->n_kept,
			r->wall_ns * NS_US, r->busy_ns * NS_US, r->comm_ns * NS_US,
			r->comm_exposed_ns * NS_US, ex, en);
	}
	fprintf(f, "  busy: the union of each rank's own kernels and copies on its own GPU (never across"
		   " GPUs); nccl: NCCL kernel time per iteration, measured in place (never replayed"
		   " alone); exposed: the part of it no compute kernel of that rank overlapped\n");
	fprintf(f, "  NCCL bytes moved: bytes not recorded (the trace keeps no NCCL message sizes),"
		   " so no bus bandwidth\n");
	for (size_t i = 0; i < j->n; i++) {
		const struct kj_rank *r = &j->r[i];
		char lab[48];
		kj_rank_label(j, r->pid, lab, sizeof(lab));
		if (!r->range[0])
			fprintf(f, "  %s: no iteration range of its own; its whole run is one iteration\n", lab);
		if (!r->energy_ok)
			fprintf(f, "  %s: energy not measured: %s\n", lab, r->energy_why ? r->energy_why : "unknown");
		if (r->died)
			fprintf(f, "  %s (pid %lld) died: %s\n", lab, (long long)r->pid, r->died_why);
	}
	fprintf(f, "\nJob (all ranks)\n");
	fprintf(f, "  %-34s %12.1f  (the slowest rank: rank %zu)\n", "time per iteration (us)",
		j->time_ns * NS_US, j->slowest);
	if (j->energy_ok)
		fprintf(f, "  %-34s %12.1f  +- %.1f (summed over %lld GPU(s))\n", "energy per iteration (mJ)",
			j->energy_mj, j->energy_unc_mj, (long long)j->n_gpus);
	else
		fprintf(f, "  %-34s %12s  (some GPU has no energy figure)\n", "energy per iteration (mJ)", "n/a");
	if (j->imbalance > 0)
		fprintf(f, "  %-34s %12.3f  (largest / mean rank work: GPU busy less the waits inside collectives)\n", "load imbalance", j->imbalance);
	else
		fprintf(f, "  %-34s %12s  (no rank had GPU busy time)\n", "load imbalance", "n/a");
	if (j->mixed_gpus)
		fprintf(f, "  warning: the ranks run on different GPU types (%s): their times and energies"
			   " are not comparable rank for rank\n", j->gpus);
	if (j->n_died)
		fprintf(f, "  warning: %zu rank(s) died before the end of the run (named above)\n", j->n_died);
}

json_t *cmp_ranks_json(const struct kj_compare *c)
{
	const struct kj_job *j = &c->job;
	json_t *o = json_object(), *arr = json_array();
	for (size_t i = 0; i < j->n; i++) {
		const struct kj_rank *r = &j->r[i];
		json_t *x = json_object();
		json_object_set_new(x, "rank", json_integer((json_int_t)i));
		json_object_set_new(x, "pid", json_integer(r->pid));
		json_object_set_new(x, "device_id", json_integer(r->device_id));
		json_object_set_new(x, "devices", json_integer(r->n_devices));
		json_object_set_new(x, "gpu", r->gpu[0] ? json_string(r->gpu) : json_null());
		json_object_set_new(x, "region", r->range[0] ? json_string(r->range) : json_null());
		json_object_set_new(x, "chosen_by", json_string(r->chosen_by ? r->chosen_by : "none"));
		json_object_set_new(x, "instances", json_integer(r->n_iters));
		json_object_set_new(x, "measured", json_integer(r->n_kept));
		json_object_set_new(x, "wall_us", json_real(r->wall_ns * NS_US));
		json_object_set_new(x, "busy_us", json_real(r->busy_ns * NS_US));
		json_object_set_new(x, "kernel_sum_us", json_real(r->kernel_ns * NS_US));
		json_object_set_new(x, "nccl_us", json_real(r->comm_ns * NS_US));
		json_object_set_new(x, "nccl_exposed_us", json_real(r->comm_exposed_ns * NS_US));
		json_object_set_new(x, "nccl_launches_per_iteration", json_real(r->comm_launches));
		json_object_set_new(x, "nccl_bytes", json_null());
		json_object_set_new(x, "nccl_bus_bandwidth_gbps", json_null());
		json_object_set_new(x, "explained_fraction", cmp_num_or_null(r->explained_fraction, r->have_explained));
		json_object_set_new(x, "energy_mj", cmp_num_or_null(r->energy_mj, r->energy_ok));
		json_object_set_new(x, "energy_unc_mj", cmp_num_or_null(r->energy_unc_mj, r->energy_ok));
		json_object_set_new(x, "energy_missing", r->energy_ok ? json_null() : json_string(r->energy_why));
		json_object_set_new(x, "died", json_boolean(r->died));
		json_object_set_new(x, "died_why", r->died ? json_string(r->died_why) : json_null());
		json_array_append_new(arr, x);
	}
	json_object_set_new(o, "ranks", arr);
	json_object_set_new(o, "processes", json_integer(j->n_processes));
	json_object_set_new(o, "gpus", json_integer(j->n_gpus));
	json_object_set_new(o, "time_per_iteration_us", json_real(j->time_ns * NS_US));
	json_object_set_new(o, "slowest_rank", json_integer((json_int_t)j->slowest));
	json_object_set_new(o, "energy_per_iteration_mj", cmp_num_or_null(j->energy_mj, j->energy_ok));
	json_object_set_new(o, "energy_unc_mj", cmp_num_or_null(j->energy_unc_mj, j->energy_ok));
	json_object_set_new(o, "load_imbalance", cmp_num_or_null(j->imbalance, j->imbalance > 0));
	json_object_set_new(o, "mixed_gpu_types", json_boolean(j->mixed_gpus));
	json_object_set_new(o, "gpu_types", json_string(j->gpus));
	json_object_set_new(o, "ranks_died", json_integer((json_int_t)j->n_died));
	json_object_set_new(o, "nccl_bytes_note", json_string("bytes not recorded"));
	return o;
}
