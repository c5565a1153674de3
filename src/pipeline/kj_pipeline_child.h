/* A worker process spoken to in lines (kjoule-pipeline-worker, kjoule-replay-worker): requests on
 * its stdin, replies on its stdout, every wait bounded. */
#ifndef KJ_PIPELINE_CHILD_H
#define KJ_PIPELINE_CHILD_H

#include <stddef.h>

#define KJ_ETIMEDOUT_CHILD (-100) /* kj_child_line: no line in time; the worker was killed */

struct kj_child;

/** @brief fork + exec argv (argv[0] a path); the child's stderr stays the caller's. */
int kj_child_start(char *const argv[], struct kj_child **out);
/** @brief Write text (with its newline) to the worker's stdin. @return 0 or KJ_EIO. */
int kj_child_send(struct kj_child *c, const char *line);
/** @brief Next line of the worker's stdout (without newline) within timeout_s.
 *  @return 0; KJ_EIO when the worker ended (reaped); KJ_ETIMEDOUT_CHILD (killed, reaped). */
int kj_child_line(struct kj_child *c, double timeout_s, char *line, size_t len);
/** @brief How an ended worker ended ("worker killed by signal 11 (...)"). */
void kj_child_describe_exit(const struct kj_child *c, char *buf, size_t len);
/** @brief 1 while the worker has not been seen to end. */
int kj_child_alive(const struct kj_child *c);
/** @brief Close its stdin, wait up to 5 s, then kill; frees. Accepts NULL. */
void kj_child_close(struct kj_child *c);

#endif
