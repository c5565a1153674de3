/* kjoule run's parts (cmd_run.c, cmd_run_opts.c, cmd_run_child.c): its options, and the child
 * process it starts, forwards signals to and waits for (the options' struct and the run's
 * environment and database are src/run's: kj_run.h). */
#ifndef CMD_RUN_H
#define CMD_RUN_H

#include <signal.h>
#include <stdio.h>
#include <sys/types.h>

#include "kj_run.h"

/** @brief The usage text of `kjoule run`. */
void kj_run_usage(FILE *f);
/** @brief Parse `kjoule run`'s arguments (defaults first). @return 0, or -1 after naming the bad
 *  option on stderr (the caller prints the usage and exits 2). */
int kj_run_parse(int argc, char **argv, struct kj_run_opts *o);

extern volatile sig_atomic_t kj_run_child_pid;
extern volatile sig_atomic_t kj_run_interrupts;   /* SIGINT/SIGTERM/SIGHUP received */
extern volatile sig_atomic_t kj_run_stop_waiting; /* a second SIGINT: keep the trace files and leave */

/** @brief SIGINT, SIGTERM and SIGHUP go on to the program (cmd_run_child.c). */
void kj_run_install_signals(void);
/** @brief Fork and exec CMD with the tracing environment: its pid, or -1 with *exec_errno set. */
pid_t kj_run_start_child(char **cmd, int *exec_errno);
/** @brief Wait for the child, and as a subreaper for its descendants (grace_s after it ended):
 *  0, 1 (descendants still running), 2 (a second interrupt: the program may still run), -1. */
int kj_run_wait_all(pid_t child, int *status, int grace_s);
struct kj_capture_summary;
/** @brief What --capture captured, said on stderr after the run is written (cmd_run_capture.c). */
void kj_run_capture_say(const struct kj_capture_summary *c, const struct kj_capture_spec *spec);
/** @brief Now, as ISO 8601 UTC with milliseconds. */
void kj_run_iso_now(char *buf, size_t len);

#endif
