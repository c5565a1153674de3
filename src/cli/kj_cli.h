/* Subcommands of the kjoule program: one cmd_<name>.c each, looked up in main.c's table. */
#ifndef KJ_CLI_H
#define KJ_CLI_H

/* Each returns the process exit code: 0 ok, 1 failure, 2 usage (run: the traced command's code). */
int cmd_run(int argc, char **argv);
int cmd_ingest(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_kernels(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_timeline(int argc, char **argv);
int cmd_api(int argc, char **argv);
int cmd_power(int argc, char **argv);
int cmd_meter(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_pipeline(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_fit(int argc, char **argv);
int cmd_predict(int argc, char **argv);

/* The value of --params-iteration: "auto" (KJ_ITERATION_AUTO), "none" or 0, or an instance
 * N >= 1. Returns 0, or -1 after naming the bad value on stderr. */
int kj_cli_parse_iteration(const char *cmd, const char *text, int *out);

/* Numbers given to option opt of `kjoule cmd`, through kj_num's strict parser (the whole value a
 * number from lo to hi; f64: lo excluded when lo_open) into *out. Each returns 0, or -1 after
 * "kjoule: CMD: OPT: 'VALUE' is not an integer" (or "is not in LO..HI") on stderr. */
#include <stdint.h>
int kj_cli_num_i64(const char *cmd, const char *opt, const char *s, int64_t lo, int64_t hi, int64_t *out);
int kj_cli_num_int(const char *cmd, const char *opt, const char *s, int lo, int hi, int *out);
int kj_cli_num_f64(const char *cmd, const char *opt, const char *s, double lo, double hi, int lo_open,
		   double *out);

/* A count given to option opt of `kjoule cmd` (--skip, --top, --rows): 0 to 1e9 into *out.
 * Returns 0, or -1 after naming the bad value on stderr (kj_cli_parse.c). */
int kj_cli_parse_count(const char *cmd, const char *opt, const char *s, int *out);

/* An integer from lo to hi given to option opt of `kjoule cmd` into *out. Returns 0, or -1 after
 * naming the option, the range and the bad value on stderr. */
int kj_cli_parse_int_range(const char *cmd, const char *opt, const char *s, long lo, long hi, int *out);

/* A program or library kjoule starts (kj_cli_find.c): the path in environment variable env when
 * it is set, else the first of rel (NULL-terminated, relative to the kjoule binary's folder)
 * that access(path, mode) accepts, into buf. Returns 0, or KJ_ENOTFOUND with buf naming env's
 * path or where rel[0] would be, for the message. */
#include <stddef.h>
int kj_cli_find_beside(const char *env, const char *const *rel, int mode, char *buf, size_t len);

/* What `kjoule info --json` prints about a run (cmd_info.c): command, devices, counts, what was
 * not captured, problems. Caller owns the object. */
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
json_t *kj_cli_info_json(sqlite3 *db, const char *path);

#endif
