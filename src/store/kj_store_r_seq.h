/* What a whole-iteration replay reads of a run: the captured iteration's operations, its traced
 * times, the stored in-sequence kernel times, and the launches of the graph it launched (for
 * pacing). Plain numbers: the replay floor decides what they mean. */
#ifndef KJ_STORE_R_SEQ_H
#define KJ_STORE_R_SEQ_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/** @brief 1 when the run has the sequence_op, replay_sequence and launch_params tables. Quiet. */
int kj_store_r_seq_tables(sqlite3 *db);
/** @brief Rows of sequence_op (0 when none or unreadable). Quiet. */
int64_t kj_store_r_seq_op_count(sqlite3 *db);
/** @brief The lowest captured iteration (0 when none). Quiet. */
int64_t kj_store_r_seq_first_iteration(sqlite3 *db);

/** The operations of one captured iteration, by kind (0 where none). */
struct kj_store_r_seq_ops {
	int64_t ops, kernels, copies, memsets, events;
};
/** @brief Count iteration's operations into *out. Quiet. */
void kj_store_r_seq_iteration_ops(sqlite3 *db, int64_t iteration, struct kj_store_r_seq_ops *out);

/** @brief The iteration's traced GPU time: Σ of its kernels' durations (through sequence_op.kernel_id
 *  where the run has it, else by correlation) and the span from the first start to the last end of
 *  its kernels, copies and memsets; each 0 when unknown. Quiet. */
void kj_store_r_seq_traced(sqlite3 *db, int64_t iteration, int64_t *busy_ns, int64_t *span_ns);

/** What the stored in-sequence medians (replay_kernel cache 'sequence') sum to; -1 where NULL or
 *  the query cannot run. */
struct kj_store_r_seq_sums {
	double kernels;           /* unique kernels with an in-sequence time */
	double iter_sum_ns;       /* Σ over the iteration's kernel ops of their kernel's median */
	double run_sum_ns;        /* Σ launches × median over those unique kernels */
	double run_traced_ns;     /* Σ traced durations of the same unique kernels' launches */
	double run_traced_all_ns; /* Σ traced durations of every kernel launch */
};
/** @brief Fill *out for iteration. Quiet. */
void kj_store_r_seq_sums(sqlite3 *db, int64_t iteration, struct kj_store_r_seq_sums *out);

/** A graph launch: its process and executable graph (-1 where NULL). */
struct kj_store_r_graph_launch {
	int64_t pid, exec;
};
/** @brief The distinct graph launches of iteration's graph kernels, at most two, into out.
 *  @return how many (0, 1 or 2), or KJ_EDB (message printed). */
int kj_store_r_iteration_graph_launches(sqlite3 *db, int64_t iteration, struct kj_store_r_graph_launch out[2]);

/** One launch of a graph exec: when the host issued it, and its kernels' first start and last
 *  end on the GPU (0 where NULL). */
struct kj_store_r_launch_span {
	int64_t host_ns, first_ns, last_ns;
};
/** @brief Every launch of exec by process pid that ran graph kernels, in host order, into *out
 *  (malloc'ed, caller frees; NULL when none). @return 0, KJ_EDB (message printed), KJ_ENOMEM. */
int kj_store_r_exec_launches(sqlite3 *db, int64_t pid, int64_t exec, struct kj_store_r_launch_span **out,
			     size_t *n);

#endif
