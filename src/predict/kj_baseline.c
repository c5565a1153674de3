/* The fit's baseline: a least-squares model of log y on log FLOPs, log bytes and, in the richer
 * forms, the log shape columns and their pairwise products (a smooth surface through the grid
 * that a tree model alone cannot draw between its points). */
#include <math.h>
#include <string.h>

#include "kj_predict.h"

static const char *const names[KJ_BASE_FORMS] = {"flops_bytes", "shape", "shape2"};

const char *kj_baseline_name(int form)
{
	return form >= 0 && form < KJ_BASE_FORMS ? names[form] : "?";
}

int kj_baseline_form(const char *name)
{
	for (int i = 0; name && i < KJ_BASE_FORMS; i++)
		if (!strcmp(name, names[i]))
			return i;
	return -1;
}

int kj_baseline_terms(int form, const float *f, int ncols, double *out)
{
	int n = 0;
	out[n++] = 1.0;
	out[n++] = f[0];
	out[n++] = f[1];
	if (form >= KJ_BASE_SHAPE)
		for (int i = 0; i < ncols; i++)
			out[n++] = f[KJ_PREDICT_COL0 + i];
	if (form >= KJ_BASE_SHAPE2)
		for (int i = 0; i < ncols; i++)
			for (int j = i; j < ncols; j++)
				out[n++] = (double)f[KJ_PREDICT_COL0 + i] * f[KJ_PREDICT_COL0 + j];
	return n;
}

int kj_baseline_solve(const double *A, const double *y, int n, int p, double *w)
{
	double M[KJ_BASE_MAX][KJ_BASE_MAX + 1];
	if (p > KJ_BASE_MAX)
		return -1;
	memset(M, 0, sizeof(M));
	for (int i = 0; i < n; i++)
		for (int r = 0; r < p; r++) {
			for (int c = 0; c < p; c++)
				M[r][c] += A[i * p + r] * A[i * p + c];
			M[r][p] += A[i * p + r] * y[i];
		}
	/* a small ridge keeps collinear columns (a constant shape axis) solvable */
	for (int r = 0; r < p; r++)
		M[r][r] += 1e-6 * (n + 1) * (M[r][r] > 1.0 ? M[r][r] / n : 1.0);
	for (int c = 0; c < p; c++) {
		int best = c;
		for (int r = c + 1; r < p; r++)
			if (fabs(M[r][c]) > fabs(M[best][c]))
				best = r;
		if (M[best][c] == 0)
			return -1;
		if (best != c)
			for (int k = 0; k <= p; k++) {
				double t = M[c][k];
				M[c][k] = M[best][k];
				M[best][k] = t;
			}
		for (int r = 0; r < p; r++) {
			if (r == c)
				continue;
			double k = M[r][c] / M[c][c];
			for (int q = c; q <= p; q++)
				M[r][q] -= k * M[c][q];
		}
	}
	for (int r = 0; r < p; r++) {
		w[r] = M[r][p] / M[r][r];
		if (!isfinite(w[r]))
			return -1;
	}
	return 0;
}
