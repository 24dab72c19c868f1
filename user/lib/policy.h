/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The policy model in memory: rules and the rule set (policy.c). */
#ifndef SLUICE_POLICY_H
#define SLUICE_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include "sluice/sluice.h"
#include "parse.h"

/* A rule's match: flags is SLUICE_MATCH_*; proto and ports as in
 * struct sluice_match. All zero matches every packet. */
struct rule_match {
	__u8 flags;
	__u8 proto;
	__u16 dport_lo;
	__u16 dport_hi;
};
/* One rule, as the words say it (doc/rules.rst). A rule's identity is
 * its CIDR (or the default) and its match; a request rule's (unit
 * SLUICE_UNIT_REQUESTS) is its CIDR and --requests. */
struct rule {
	struct cidr cidr;
	struct rule_match match;
	__u32 action;		/* enum sluice_action */
	__u32 unit;		/* enum sluice_unit: --rate or --bytes */
	__u64 rate;		/* units per period */
	__u32 period;		/* SLUICE_PERIOD_*: N, N/s, N/m, N/h */
	__u64 burst;		/* token bucket: units, default one second's
				 * worth, at least 1; windows: the budget per
				 * window, rate x window (no --burst) */
	__u32 algo;		/* enum sluice_algo */
	__u64 window_ns;	/* windows: --window (default: the period) */
	__u32 per;		/* enum sluice_per */
	__u32 per_len;		/* --per /LEN, in the family's own terms */
	__u64 ban_ns;		/* --ban, 0 for none */
	__u32 ban_after;	/* --requests: --ban-after, 0 without --ban */
	bool monitor;		/* --monitor */
	bool cluster;		/* --cluster: the limit holds across the cluster */
	__u32 index;		/* slot in the policy table, stable per identity */
};
/* A request rule (--requests): the check server answers for it; it is never
 * put in the trie, so it judges no packet. */
static inline bool rule_is_request(const struct rule *r)
{
	return r->unit == SLUICE_UNIT_REQUESTS;
}
struct policy {
	struct rule def;	/* the default, index 0 */
	struct rule rules[SLUICE_MAX_POLICIES - 1];
	unsigned int n;
	struct rule new_sources;	/* the new-source budget: rate 0 is off */
};
/* The rule with r's identity (CIDR and match), or NULL. */
struct rule *policy_find_rule(struct policy *p, const struct rule *r);
/* The rule of CIDR c without a match, or NULL. */
struct rule *policy_find(struct policy *p, const struct cidr *c);
/* Adds r, or replaces the rule with its identity (keeping its index). */
int policy_put(struct policy *p, const struct rule *r, char *why, size_t len);
void policy_init(struct policy *p);
const char *action_name(__u32 action);
void rule_cidr_str(const struct rule *r, char *buf, size_t len);
/* Rules are one rule when their CIDR and match are the same. */
bool rule_same_identity(const struct rule *a, const struct rule *b);

#endif /* SLUICE_POLICY_H */
