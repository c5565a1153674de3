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

#endif
