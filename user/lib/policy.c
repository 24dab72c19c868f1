// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The policy model in memory: the rule set that store.c reads and commits,
 * its rules found by identity (CIDR and match). The words are rule.c's. */
#include <stdio.h>
#include <string.h>
#include "policy.h"

const char *action_name(__u32 action)
{
	switch (action) {
	case SLUICE_ACT_LIMIT: return "limit";
	case SLUICE_ACT_ALLOW: return "allow";
	case SLUICE_ACT_DENY:  return "deny";
	default:               return "unknown";
	}
}

void policy_init(struct policy *p)
{
	memset(p, 0, sizeof(*p));
	/* Until a default is set, sources are tracked but not limited. */
	p->def.action = SLUICE_ACT_ALLOW;
	p->def.index = SLUICE_POLICY_DEFAULT;
}

void rule_cidr_str(const struct rule *r, char *buf, size_t len)
{
	format_cidr(&r->cidr, buf, len);
}

struct rule *policy_find_rule(struct policy *p, const struct rule *r)
{
	for (unsigned int i = 0; i < p->n; i++)
		if (rule_same_identity(&p->rules[i], r))
			return &p->rules[i];
	return NULL;
}

struct rule *policy_find(struct policy *p, const struct cidr *c)
{
	struct rule r;

	memset(&r, 0, sizeof(r));
	r.cidr = *c;
	return policy_find_rule(p, &r);
}

/* Add the rule, or replace the one with r's identity. */
int policy_put(struct policy *p, const struct rule *r, char *why, size_t len)
{
	struct rule *old = policy_find_rule(p, r);

	if (old) {
		__u32 index = old->index;

		*old = *r;
		old->index = index;
		return 0;
	}
	if (p->n >= SLUICE_MAX_POLICIES - 1) {
		snprintf(why, len, "the policy already holds %u rules, the most it can: "
			 "merge or delete some", SLUICE_MAX_POLICIES - 1);
		return -1;
	}
	p->rules[p->n] = *r;
	p->rules[p->n].index = 0;	/* assigned at commit */
	p->n++;
	return 0;
}

/* Rules are one rule when their CIDR and match are the same, and both or
 * neither are request rules. */
bool rule_same_identity(const struct rule *a, const struct rule *b)
{
	return rule_is_request(a) == rule_is_request(b) &&
	       a->cidr.prefixlen == b->cidr.prefixlen &&
	       !memcmp(&a->cidr.addr, &b->cidr.addr, sizeof(a->cidr.addr)) &&
	       a->match.flags == b->match.flags && a->match.proto == b->match.proto &&
	       a->match.dport_lo == b->match.dport_lo && a->match.dport_hi == b->match.dport_hi;
}
