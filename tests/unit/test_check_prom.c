// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Golden-text tests of the check server's /metrics page
 * (user/daemon/check/metrics.c): each case builds a sample by hand, and
 * check_prom_write's output must equal tests/unit/golden/NAME.prom byte
 * for byte; when promtool is installed the golden file must also pass
 * `promtool check metrics`. Prints "ok NAME" or "FAIL NAME: detail" per
 * case and exits 1 if any case failed.
 *
 * usage: test_check_prom [CASE]   only the cases whose name contains CASE
 * SLUICE_GOLDEN_DIR               where the golden files are (default
 *                                 tests/unit/golden, from the repository root)
 * SLUICE_GOLDEN_UPDATE=1          write the golden files instead of comparing:
 *                                 then review the diff before committing it */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "metrics.h"
#include "harness.h"
#include "golden.h"

#define fail(...)	fail_at(0, __VA_ARGS__)

static int write_page(FILE *f, const void *p)
{
	return check_prom_write(f, p);
}

static void check_golden(const char *name, const struct check_prom *p)
{
	golden_check(name, write_page, p);
}

/* A server with no request rules, fresh. */
static void case_check_empty(void)
{
	struct check_prom p = { .version = "0.1.0", .iface = "eth0", .capacity = 65536 };

	check_golden("check_empty", &p);
}

/* Every outcome counted, three rules (longest prefix first), a full-ish
 * table, refusals of both reasons and a failed ban. */
static void case_check(void)
{
	static const struct check_prom_rule rules[] = {
		{ "198.18.0.0/24", 120, 30, 2 },
		{ "2001:2::/48", 7, 0, 0 },
		{ "198.18.0.0/15", 1000, 12345678901ULL, 0 },
	};
	struct check_prom p = {
		.version = "1.2.3", .iface = "veth-rx", .rules = rules,
		.nrules = ARRAY_LEN(rules), .ban_failures = 1, .tracked = 4097,
		.capacity = 65536, .refused = { [REFUSE_FULL] = 3, [REFUSE_PREFIX] = 268 },
	};

	for (int o = 0; o < OUT_MAX; o++)
		p.answers[o] = 10ULL * (__u64)o + 1;
	check_golden("check", &p);
}

/* A version and an interface name with characters labels escape. */
static void case_check_label_escaping(void)
{
	static const struct check_prom_rule rules[] = { { "198.18.0.0/15", 1, 2, 3 } };
	struct check_prom p = { .version = "0.1.0-\"dev\"\\x\n", .iface = "e\"th\\0",
				.rules = rules, .nrules = 1, .capacity = 1 };

	check_golden("check_label_escaping", &p);
}

static const struct test_case cases[] = {
	{ "check_empty", case_check_empty },
	{ "check_label_escaping", case_check_label_escaping },
	{ "check", case_check },
};

/* Optional argument: run only the cases whose name contains it. */
int main(int argc, char **argv)
{
	return run_cases("test_check_prom", cases, ARRAY_LEN(cases), argc, argv);
}
