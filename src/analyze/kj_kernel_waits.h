/* Kernels that wait for something outside themselves — a flag or semaphore the host or another
 * stream writes (XLA's DelayKernel), peers on other GPUs (NCCL), work that persistent kernels poll
 * for — cannot be timed alone: replayed on their own buffers they spin until their own timeout or
 * forever. These rules tell them apart so that sums keep them at their in-situ time. */
#ifndef KJ_KERNEL_WAITS_H
#define KJ_KERNEL_WAITS_H

#include <stddef.h>

/** @brief 1 when the kernel's name says it waits on something outside itself (NCCL's kernels,
 *  XLA's DelayKernel), with the reason in why (may be NULL). */
int kj_kernel_waits_by_name(const char *name, char *why, size_t len);

/** Replayed this much slower than traced, and by at least KJ_WAITS_MIN_EXCESS_NS, a kernel is
 *  taken to wait on something its replay does not provide. */
#define KJ_WAITS_MIN_RATIO 20.0
#define KJ_WAITS_MIN_EXCESS_NS 100000.0

/** @brief 1 when a replay (replayed_ns, or timed_out) says the kernel waits: far beyond its traced
 *  mean time, or the worker had to be killed; the reason in why (may be NULL). traced_ns <= 0:
 *  unknown (then only a timeout counts). */
int kj_kernel_waits_by_replay(double traced_ns, double replayed_ns, int timed_out, char *why,
			      size_t len);

/** A kernel replayed only on stand-in data (the worker's smallint or zero fill, after random data
 *  faulted) and further than this fraction off its traced mean time is taken to do other work than
 *  the program's: how much work it does depends on its inputs (indices, masks, block lists). */
#define KJ_STANDIN_MAX_OFF 0.25

/** @brief 1 when note (replay_kernel.error of its warm replay: "data: smallint (...)" or
 *  "data: zero (...)") says the kernel ran on stand-in data and replayed_ns is more than
 *  KJ_STANDIN_MAX_OFF off traced_ns; the reason in why (may be NULL). 0 for random data, no note,
 *  or unknown times (<= 0). */
int kj_kernel_standin_data(const char *note, double traced_ns, double replayed_ns, char *why, size_t len);

/** Replayed alone on random data, a kernel whose time is this factor or more off its traced mean
 *  (either way) is taken to do other work alone than in the program (it reads state its
 *  predecessors leave: a counter, a workspace, a flag); KJ_ALONE_SEQ_FACTOR where its in-sequence
 *  time agrees with the traced one within KJ_STANDIN_MAX_OFF, which shows the work is the
 *  program's once its predecessors ran. Not applied to kernels that overlapped other streams' (their
 *  in-situ time holds the sharing, which a replay alone lacks). */
#define KJ_ALONE_FACTOR 3.0
#define KJ_ALONE_SEQ_FACTOR 2.0
/** ... unless more than this share of its launches ran beside another stream's kernels. */
#define KJ_ALONE_OVERLAP_MAX 0.1

/** @brief 1 when a random-data warm replay (warm_ns) and its cold one (cold_ns; <= 0: none) are
 *  both KJ_ALONE_FACTOR off traced_ns, or KJ_ALONE_SEQ_FACTOR off while the in-sequence time seq_ns
 *  (<= 0: none) agrees with traced_ns; the reason in why (may be NULL). 0 for unknown times. */
int kj_kernel_alone_differs(double traced_ns, double warm_ns, double cold_ns, double seq_ns, char *why,
			    size_t len);

/** What replay says of a kernel that sets the condition of a CUDA graph conditional node
 *  (kj_replay_cond.h), which it does not launch alone; compare finds its rows by it (the error
 *  column matched with LIKE, until replay records a status of its own). */
#define KJ_COND_SETTER_WHY "sets the condition of a CUDA graph conditional node"

#endif
