/* kjoule merge: join a sweep's part CSVs (one operator) into one, or every group in a folder. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kj_cli.h"
#include "kj_error.h"
#include "kj_sweep.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kjoule merge -o OUT.csv PART.csv...\n"
		"       kjoule merge DATA_DIR [-o OUT_DIR]\n"
		"Joins sweep CSVs of one operator: the headers must agree, a shape seen twice is kept once\n"
		"(a measured row over a skipped one), rows are sorted by the shape columns. With a folder,\n"
		"every {GPU}_{op}_{precision}_{parts}_{part}.csv group becomes OUT_DIR/{GPU}_{op}_{precision}.csv\n"
		"(OUT_DIR defaults to DATA_DIR). Files are written whole (temporary file, then rename).\n");
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* every group of part files in dir, merged into outdir */
static int merge_dir(const char *dir, const char *outdir)
{
	DIR *d = opendir(dir);
	char **names = NULL, err[2048];
	int n = 0, cap = 0, rc = 0;
	struct dirent *e;
	struct kj_sweep_name nm, nm2;
	if (!d) {
		kj_errorf("merge: %s: cannot open the folder", dir);
		return 1;
	}
	while ((e = readdir(d))) {
		if (kj_sweep_name_parse(e->d_name, &nm) || nm.parts == 0)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			names = realloc(names, cap * sizeof(*names));
		}
		size_t l = strlen(dir) + strlen(e->d_name) + 2;
		names[n] = malloc(l);
		snprintf(names[n++], l, "%s/%s", dir, e->d_name);
	}
	closedir(d);
	if (n == 0) {
		kj_errorf("merge: %s holds no part CSVs ({GPU}_{op}_{precision}_{parts}_{part}.csv)", dir);
		return 1;
	}
	qsort(names, n, sizeof(*names), by_name);
	int *used = calloc(n, sizeof(*used));
	for (int i = 0; i < n && !rc; i++) {
		if (used[i])
			continue;
		const char *group[4096];
		int g = 0;
		kj_sweep_name_parse(names[i], &nm);
		for (int j = i; j < n && g < 4096; j++) {
			kj_sweep_name_parse(names[j], &nm2);
			if (!used[j] && !strcmp(nm.gpu, nm2.gpu) && !strcmp(nm.op, nm2.op) &&
			    nm.precision == nm2.precision) {
				used[j] = 1;
				group[g++] = names[j];
			}
		}
		char out[4096];
		int64_t rows, dups;
		snprintf(out, sizeof(out), "%s/%s_%s_%s.csv", outdir, nm.gpu, nm.op, kj_precision_name(nm.precision));
		if (kj_sweep_merge(group, g, out, &rows, &dups, err, sizeof(err))) {
			kj_errorf("merge: %s", err);
			rc = 1;
		} else {
			printf("%s: %d parts, %lld rows, %lld duplicates dropped\n", out, g, (long long)rows,
			       (long long)dups);
		}
	}
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(used);
	return rc;
}

int cmd_merge(int argc, char **argv)
{
	const char *out = NULL;
	const char **files = calloc(argc + 1, sizeof(*files));
	int n = 0, rc;
	char err[2048];
	struct stat sb;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			free(files);
			return 0;
		} else if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) && i + 1 < argc) {
			out = argv[++i];
		} else if (argv[i][0] == '-') {
			kj_errorf("merge: unexpected argument '%s'", argv[i]);
			usage(stderr);
			free(files);
			return 2;
		} else {
			files[n++] = argv[i];
		}
	}
	if (n == 1 && stat(files[0], &sb) == 0 && S_ISDIR(sb.st_mode)) {
		rc = merge_dir(files[0], out ? out : files[0]);
		free(files);
		return rc;
	}
	if (n == 0 || !out) {
		usage(stderr);
		free(files);
		return 2;
	}
	int64_t rows, dups;
	rc = kj_sweep_merge(files, n, out, &rows, &dups, err, sizeof(err));
	if (rc)
		kj_errorf("merge: %s", err);
	else
		printf("%s: %d files, %lld rows, %lld duplicates dropped\n", out, n, (long long)rows,
		       (long long)dups);
	free(files);
	return rc ? 1 : 0;
}
