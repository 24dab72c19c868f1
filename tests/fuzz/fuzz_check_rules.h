/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* fuzz_check's request rules: each as a policy file says it, and what
 * the check server must answer under it. */
#ifndef SLUICE_FUZZ_CHECK_RULES_H
#define SLUICE_FUZZ_CHECK_RULES_H

#include <stdbool.h>
#include <linux/types.h>
#include "sluice/sluice.h"

/* The request rules, and what the check server must say of them, worked
 * out by hand from the words: q the burst (token bucket) or the budget
 * rate x window, w the time to refill q (burst x period / rate) or the
 * window, rounded up. */
struct fz_rule {
	const char *line;	/* as a policy file says it */
	const char *name;	/* its CIDR: the RateLimit name */
	const char *policy;	/* RateLimit-Policy */
	bool window;		/* a window algorithm, else a token bucket */
	__u64 n;		/* burst, or budget per window */
	__u64 per_ns;		/* one more every per_ns, or the window */
	__u32 key_bits;		/* each bucket's bits of the 128-bit form */
	__u64 ban_ns;		/* --ban */
	bool monitor;
};

#define S(x)	((x) * SLUICE_NS_PER_SEC)
#define MS(x)	((x) * 1000000ULL)
static const struct fz_rule fz_rules[] = {
	{ "limit set 198.18.0.0/15 --requests 20/s --burst 5", "198.18.0.0/15",
	  "\"198.18.0.0/15\";q=5;w=1", false, 5, MS(50), 128, 0, false },
	{ "limit set 198.18.0.0/24 --requests 2/s --burst 2 --ban 2s --ban-after 3",
	  "198.18.0.0/24", "\"198.18.0.0/24\";q=2;w=1", false, 2, MS(500), 128, S(2), false },
	{ "limit set 198.18.1.0/24 --requests 4/s --algo fixed-window --window 500ms",
	  "198.18.1.0/24", "\"198.18.1.0/24\";q=2;w=1", true, 2, MS(500), 128, 0, false },
	{ "limit set 198.18.2.0/24 --requests 3/s --algo sliding-window --window 1s --ban 1s "
	  "--ban-after 2", "198.18.2.0/24", "\"198.18.2.0/24\";q=3;w=1", true, 3, S(1), 128, S(1),
	  false },
	{ "limit set 198.18.3.0/24 --requests 5/s --burst 3 --per rule", "198.18.3.0/24",
	  "\"198.18.3.0/24\";q=3;w=1", false, 3, MS(200), 96 + 24, 0, false },
	{ "limit set 198.18.4.0/24 --requests 1/s --monitor", "198.18.4.0/24",
	  "\"198.18.4.0/24\";q=1;w=1", false, 1, S(1), 128, 0, true },
	{ "limit set 2001:2::/48 --requests 10/s --burst 4 --per /64 --ban 1s --ban-after 4",
	  "2001:2::/48", "\"2001:2::/48\";q=4;w=1", false, 4, MS(100), 64, S(1), false },
	{ "limit set 2001:2:0:1::/64 --requests 30/m --burst 2", "2001:2:0:1::/64",
	  "\"2001:2:0:1::/64\";q=2;w=4", false, 2, S(2), 128, 0, false },
	{ "limit set 198.19.0.0/16 --requests 2/s --per /24 --ban 1s --ban-after 1",
	  "198.19.0.0/16", "\"198.19.0.0/16\";q=2;w=1", false, 2, MS(500), 96 + 24, S(1), false },
};
#define FZ_NRULES	(sizeof(fz_rules) / sizeof(fz_rules[0]))

#endif /* SLUICE_FUZZ_CHECK_RULES_H */
