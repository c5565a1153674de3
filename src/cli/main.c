/* kjoule: where the time and the energy of a GPU workload go, kernel by kernel. */
#include <stdio.h>
#include <string.h>

#include "kj_cli.h"
#include "kj_schema.h"

struct kj_command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

static const struct kj_command commands[] = {
	{"run", cmd_run, "trace a CUDA program into a run database"},
	{"ingest", cmd_ingest, "a run database from kept trace files"},
	{"info", cmd_info, "what a run database holds"},
	{"kernels", cmd_kernels, "unique kernels with counts, durations and tiers"},
	{"replay", cmd_replay, "re-launch each captured kernel alone for latency and energy"},
	{"compare", cmd_compare, "end-to-end time and energy against the sum of the kernels"},
	{"timeline", cmd_timeline, "Chrome/Perfetto, ASCII or SVG timelines"},
	{"api", cmd_api, "the CUDA API-call story of a run"},
	{"report", cmd_report, "one self-contained HTML page of a run"},
	{"diff", cmd_diff, "two runs side by side: what changed, beyond their noise"},
	{"power", cmd_power, "log GPU power, energy, clocks; measure idle power"},
	{"meter", cmd_meter, "energy from an external power meter's log"},
	{"pipeline", cmd_pipeline, "per-layer latency and energy of model pipelines (YAML or --from a run)"},
	{"sweep", cmd_sweep, "time and energy of one operator over a grid of shapes"},
	{"merge", cmd_merge, "join a sweep's part CSVs into one"},
	{"fit", cmd_fit, "regressors of operator time and energy from sweep CSVs"},
	{"predict", cmd_predict, "time and energy of an operator shape or a transformer step"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: kjoule <command> [options]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\n'kjoule <command> --help' describes each; docs/cli.md has them all.\n"
		   "'kjoule --version' names this kjoule's version and the run schema it writes.\n");
}

/* The tool's version (CMake's project version) and the run database schema it writes and reads. */
static void version(void)
{
	printf("kjoule %s\n", KJ_VERSION);
	printf("run database schema: writes %d, reads %d to %d\n", KJ_SCHEMA_VERSION, KJ_SCHEMA_VERSION_MIN,
	       KJ_SCHEMA_VERSION);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		version();
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "kjoule: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
