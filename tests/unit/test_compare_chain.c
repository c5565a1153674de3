/* cmp_chain_as_program: a graph-launched iteration's linear chain predicts the iteration when its
 * time off the traced GPU busy time, carried by its kernels' energy, is at most 1 % of the
 * predicted energy; never for an eager program or another replay mode. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "kj_compare_internal.h"

/* A chain off the busy time by off (a fraction), its kernels e_seq of a prediction e_pred (mJ). */
static struct cmp_summary chain(const char *mode, double launches, double off, double e_seq, double e_pred)
{
	struct cmp_summary s;
	memset(&s, 0, sizeof(s));
	s.e_seq_mode = mode;
	s.n_graph_launches.mean = launches;
	s.have_graph = 1;
	s.busy.mean = 1000000;
	s.seq_graph = s.busy.mean * (1 + off);
	s.e_seq = e_seq;
	s.e_seq_pred = e_pred;
	return s;
}

static void test_energy_weighted(void **state)
{
	(void)state;
	struct cmp_summary s = chain("graph", 32, 0.05, 100, 1000); /* 5 % of a tenth: 0.5 % */
	assert_int_equal(cmp_chain_as_program(&s), 1);
	s = chain("graph", 32, 0.05, 900, 1000); /* 5 % of nine tenths: 4.5 % */
	assert_int_equal(cmp_chain_as_program(&s), 0);
	s = chain("graph", 32, -0.012, 900, 1000); /* short by 1.2 % of nine tenths: 1.08 % */
	assert_int_equal(cmp_chain_as_program(&s), 0);
	s = chain("graph", 32, -0.011, 900, 1000); /* 0.99 % */
	assert_int_equal(cmp_chain_as_program(&s), 1);
}

static void test_only_graph_launched_chains(void **state)
{
	(void)state;
	struct cmp_summary s = chain("graph", 0, 0, 100, 1000); /* an eager program's chain */
	assert_int_equal(cmp_chain_as_program(&s), 0);
	s = chain("topology", 32, 0, 100, 1000);
	assert_int_equal(cmp_chain_as_program(&s), 0);
	s = chain("graph", 32, 0, 0, 1000); /* no chain energy */
	assert_int_equal(cmp_chain_as_program(&s), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_energy_weighted),
		cmocka_unit_test(test_only_graph_launched_chains),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
