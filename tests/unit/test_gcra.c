/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Unit tests of the GCRA admission math in include/sluice/gcra.h, driven by a
 * fake clock (a plain u64 of GCRA units, 1/64 ns, that the tests advance).
 * The cases are in tests/unit/gcra_*.c, one file a subject. */

#include "gcra_test.h"

static const struct test_case cases[] = {
	{ "interval_and_tolerance", case_interval_and_tolerance },
	{ "interval_every_rate", case_interval_every_rate },
	{ "burst_at_one_instant", case_burst_at_one_instant },
	{ "refill_after_idle", case_refill_after_idle },
	{ "rate1_burst1", case_rate1_burst1 },
	{ "rate1_burst_max", case_rate1_burst_max },
	{ "rate1e9_burst1", case_rate_max_burst1 },
	{ "rate1e9_burst1e9", case_rate_max_burst_max },
	{ "long_idle_2pow62", case_long_idle_2pow62 },
	{ "clock_extremes", case_clock_extremes },
	{ "clock_extreme_burst_bounded", case_clock_extreme_burst_bounded },
	{ "retry_after_exact", case_retry_after_exact },
	{ "tokens_countdown", case_tokens_countdown },
	{ "random_window_bound", case_random_window_bound },
	{ "at_rate_never_rejected", case_at_rate_never_rejected },
	{ "random_matches_token_bucket", case_random_matches_token_bucket },
	{ "random_single_step", case_random_single_step },
	{ "precision_bound", case_precision_bound },
	{ "precision_old_interval_over_admits",
	  case_precision_old_interval_over_admits },
	{ "carry_exhausted_to_faster", case_carry_exhausted_to_faster },
	{ "carry_full_to_smaller_burst", case_carry_full_to_smaller_burst },
	{ "carry_exhausted_to_smaller_burst",
	  case_carry_exhausted_to_smaller_burst },
	{ "carry_keeps_whole_tokens", case_carry_keeps_whole_tokens },
	{ "carry_random", case_carry_random },
	{ "carry_saturated", case_carry_saturated },
	{ "rebind_actions", case_rebind_actions },
};

/* Optional argument: run only the cases whose name contains it. */
int main(int argc, char **argv)
{
	return run_cases("test_gcra", cases, ARRAY_LEN(cases), argc, argv);
}
