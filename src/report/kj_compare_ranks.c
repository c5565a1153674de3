/* compare's ranks and job section of a multi-GPU run (docs/multi-gpu.md): printed and put in
 * the JSON only when the run has two ranks or more, so single-GPU reports stay as they were. */
#include "kj_compare_out_internal.h"

#include <string.h>


/* "8.4 MB" (decimal units, as bus bandwidths are given) into buf. */
static const char *bytes_text(double b, char *buf, size_t len)
{
	if (b >= 1e9)
		snprintf(buf, len, "%.2f GB", b / 1e9);
	else if (b >= 1e6)
		snprintf(buf, len, "%.2f MB", b / 1e6);
	else if (b >= 1e3)
		snprintf(buf, len, "%.2f kB", b / 1e3);
	else
		snprintf(buf, len, "%.0f B", b);
	return buf;
}

/* Each rank's NCCL bytes per iteration and bus bandwidth, or why there are none; the calls and
 * kernels the matching left over, counted. */
static void print_nccl_bytes(const struct kj_job *j, FILE *f)
{
	fprintf(f, "  NCCL bytes per iteration (the recorded NCCL calls, each matched to the next NCCL kernel"
		   " its process launched; bus bandwidth = bus bytes over the matched NCCL kernels' time,"
		   " waits included):\n");
	for (size_t i = 0; i < j->n; i++) {
		const struct kj_rank *r = &j->r[i];
		char lab[48], b1[32], b2[32];
		kj_rank_label(j, r->pid, lab, sizeof(lab));
		if (!r->nccl_bytes_ok) {
			fprintf(f, "    %s: bytes not recorded: %s\n", lab, r->nccl_bytes_why ? r->nccl_bytes_why : "unknown");
		} else {
			fprintf(f, "    %s: %s (%s), bus %s", lab, bytes_text(r->nccl_bytes, b1, sizeof(b1)),
				r->nccl_ops[0] ? r->nccl_ops : "no call", bytes_text(r->nccl_bus_bytes, b2, sizeof(b2)));
			if (r->nccl_bw_ok)
				fprintf(f, ", bus bandwidth %.2f GB/s over %.1f us of NCCL kernels\n", r->nccl_bus_gbps,
					r->nccl_matched_ns * NS_US);
			else
				fprintf(f, ", bus bandwidth n/a: %s\n", r->nccl_bw_why ? r->nccl_bw_why : "unknown");
		}
		if (r->nccl_calls_unmatched)
			fprintf(f, "    %s: %lld of %lld NCCL calls matched no NCCL kernel launched after them (left out)\n",
				lab, (long long)r->nccl_calls_unmatched, (long long)r->nccl_calls);
		if (r->nccl_calls && r->nccl_kernels_without_call)
			fprintf(f, "    %s: %lld NCCL kernels of the measured iterations matched no recorded call (their"
				   " time is left out of the bandwidth)\n", lab, (long long)r->nccl_kernels_without_call);
	}
}

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
	print_nccl_bytes(j, f);
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
		json_object_set_new(x, "nccl_bytes_per_iteration", cmp_num_or_null(r->nccl_bytes, r->nccl_bytes_ok));
		json_object_set_new(x, "nccl_bus_bytes_per_iteration",
				    cmp_num_or_null(r->nccl_bus_bytes, r->nccl_bytes_ok));
		json_object_set_new(x, "nccl_bytes_missing", r->nccl_bytes_ok ? json_null()
						: json_string(r->nccl_bytes_why ? r->nccl_bytes_why : "unknown"));
		json_object_set_new(x, "nccl_bus_bandwidth_gbps", cmp_num_or_null(r->nccl_bus_gbps, r->nccl_bw_ok));
		json_object_set_new(x, "nccl_bandwidth_missing", r->nccl_bw_ok ? json_null()
						: json_string(r->nccl_bw_why ? r->nccl_bw_why : "unknown"));
		json_object_set_new(x, "nccl_matched_kernel_us", cmp_num_or_null(r->nccl_matched_ns * NS_US, r->nccl_bytes_ok));
		json_object_set_new(x, "nccl_ops", json_string(r->nccl_ops));
		json_object_set_new(x, "nccl_calls", json_integer(r->nccl_calls));
		json_object_set_new(x, "nccl_calls_unmatched", json_integer(r->nccl_calls_unmatched));
		json_object_set_new(x, "nccl_kernels_without_call", json_integer(r->nccl_kernels_without_call));
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
	json_object_set_new(o, "nccl_bytes_note",
			    json_string("NCCL calls recorded by libkjoule_nccl.so, each matched to the next NCCL kernel"
					" its process launched; bytes as nccl-tests defines them; bus bandwidth over the"
					" matched NCCL kernels' time, waits included"));
	return o;
}
