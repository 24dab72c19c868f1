/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Unit tests of the window algorithms (include/sluice/window.h) through the
 * one API the datapath uses (include/sluice/algo.h), on a fake clock in ns,
 * against reference models written here: a fixed window, the real-valued
 * counter approximation, the exact sliding log. The cases are in
 * tests/unit/window_*.c, one file a subject. */

#include "window_test.h"

static const struct test_case cases[] = {
	{ "fw_boundary_2x_budget", case_fw_boundary_2x_budget },
	{ "fw_steady_overload", case_fw_steady_overload },
	{ "fw_random_matches_reference", case_fw_random_matches_reference },
	{ "fw_saturation", case_fw_saturation },
	{ "sw_bound_traces", case_sw_bound_traces },
	{ "sw_bound_reached", case_sw_bound_reached },
	{ "sw_rounding_conservative", case_sw_rounding_conservative },
	{ "sw_zero_word_empty", case_sw_zero_word_empty },
	{ "sw_tag_wrap", case_sw_tag_wrap },
	{ "clock_extremes", case_clock_extremes },
	{ "retry_after_exact", case_retry_after_exact },
	{ "bans", case_bans },
	{ "rebind", case_rebind },
	{ "race_model", case_race_model },
	{ "fresh_slot_state", case_fresh_slot_state },
};

/* Optional argument: run only the cases whose name contains it. */
int main(int argc, char **argv)
{
	return run_cases("test_window", cases, ARRAY_LEN(cases), argc, argv);
}
