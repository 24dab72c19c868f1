// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The policy model: one parser for CLI words and policy-file lines, and
 * the in-memory rule set that maps.c reads and commits. */
#include <string.h>
#include "sluice.h"
#include "sluice/gcra.h"

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

void rule_set_limit(struct rule *r, __u64 rate, __u64 burst)
{
	r->action = SLUICE_ACT_LIMIT;
	r->rate = rate;
	r->burst = burst;
}

void rule_cidr_str(const struct rule *r, char *buf, size_t len)
{
	format_cidr(&r->cidr, buf, len);
}

struct rule *policy_find(struct policy *p, const struct cidr *c)
{
	for (unsigned int i = 0; i < p->n; i++)
		if (p->rules[i].cidr.prefixlen == c->prefixlen &&
		    !memcmp(&p->rules[i].cidr.addr, &c->addr, sizeof(c->addr)))
			return &p->rules[i];
	return NULL;
}

/* Add or replace the rule for r's CIDR. */
int policy_put(struct policy *p, const struct rule *r, char *why, size_t len)
{
	struct rule *old = policy_find(p, &r->cidr);

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

/* --rate N [--burst N], also as --rate=N. */
static int parse_limit_opts(int argc, char **argv, struct rule *r,
			    char *why, size_t len)
{
	bool have_rate = false, have_burst = false;
	__u64 rate = 0, burst = 0;

	for (int i = 0; i < argc; i++) {
		const char *opt = argv[i], *val = NULL;
		const char *eq = strchr(opt, '=');
		size_t name_len = eq ? (size_t)(eq - opt) : strlen(opt);
		bool is_rate = !strncmp(opt, "--rate", name_len) && name_len == 6;
		bool is_burst = !strncmp(opt, "--burst", name_len) && name_len == 7;

		if (!is_rate && !is_burst) {
			snprintf(why, len, "unknown option '%s': expected --rate PPS [--burst N]", opt);
			return -1;
		}
		if (eq)
			val = eq + 1;
		else if (i + 1 < argc)
			val = argv[++i];
		if (!val) {
			snprintf(why, len, "%s needs a value", opt);
			return -1;
		}
		if (is_rate) {
			if (!parse_u64(val, SLUICE_RATE_MIN, SLUICE_RATE_MAX, &rate)) {
				snprintf(why, len, "bad rate '%s': give packets per second, %llu..%llu",
					 val, SLUICE_RATE_MIN, SLUICE_RATE_MAX);
				return -1;
			}
			have_rate = true;
		} else {
			if (!parse_u64(val, SLUICE_BURST_MIN, SLUICE_BURST_MAX, &burst)) {
				snprintf(why, len, "bad burst '%s': give packets, %llu..%llu",
					 val, SLUICE_BURST_MIN, SLUICE_BURST_MAX);
				return -1;
			}
			have_burst = true;
		}
	}
	if (!have_rate) {
		snprintf(why, len, "missing --rate PPS");
		return -1;
	}
	if (have_burst && burst / rate >= SLUICE_BURST_SECONDS_MAX) {
		snprintf(why, len, "bad burst %llu: at most %llu seconds' worth of the rate "
			 "(%llu x %llu)", (unsigned long long)burst, SLUICE_BURST_SECONDS_MAX,
			 (unsigned long long)rate, SLUICE_BURST_SECONDS_MAX);
		return -1;
	}
	/* Default burst: one second's worth, so a client may send R at once. */
	rule_set_limit(r, rate, have_burst ? burst : rate);
	return 0;
}

static int parse_one_cidr(int argc, char **argv, const char *what,
			  struct cidr *c, char *why, size_t len)
{
	if (argc < 1) {
		snprintf(why, len, "%s needs a CIDR (e.g. 203.0.113.0/24 or 2001:db8::/32)", what);
		return -1;
	}
	if (argv[0][0] == '-') {
		snprintf(why, len, "%s needs a CIDR before options, got '%s'", what, argv[0]);
		return -1;
	}
	return parse_cidr(argv[0], c, why, len) ? -1 : 0;
}

static int no_more(int argc, char **argv, char *why, size_t len)
{
	if (argc > 0) {
		snprintf(why, len, "unexpected argument '%s'", argv[0]);
		return -1;
	}
	return 0;
}

int parse_rule_words(int argc, char **argv, struct rule *r, bool *is_default,
		     bool *is_del, char *why, size_t len)
{
	memset(r, 0, sizeof(*r));
	*is_default = false;
	*is_del = false;
	if (argc < 1) {
		snprintf(why, len, "empty rule: expected limit, allow or deny");
		return -1;
	}
	if (!strcmp(argv[0], "allow") || !strcmp(argv[0], "deny")) {
		if (parse_one_cidr(argc - 1, argv + 1, argv[0], &r->cidr, why, len))
			return -1;
		r->action = !strcmp(argv[0], "allow") ? SLUICE_ACT_ALLOW : SLUICE_ACT_DENY;
		return no_more(argc - 2, argv + 2, why, len);
	}
	if (strcmp(argv[0], "limit") != 0) {
		snprintf(why, len, "unknown rule '%s': expected limit, allow or deny", argv[0]);
		return -1;
	}
	if (argc < 2) {
		snprintf(why, len, "limit needs default, set or del");
		return -1;
	}
	if (!strcmp(argv[1], "default")) {
		*is_default = true;
		return parse_limit_opts(argc - 2, argv + 2, r, why, len);
	}
	if (!strcmp(argv[1], "set")) {
		if (parse_one_cidr(argc - 2, argv + 2, "limit set", &r->cidr, why, len))
			return -1;
		return parse_limit_opts(argc - 3, argv + 3, r, why, len);
	}
	if (!strcmp(argv[1], "del")) {
		*is_del = true;
		if (parse_one_cidr(argc - 2, argv + 2, "limit del", &r->cidr, why, len))
			return -1;
		return no_more(argc - 3, argv + 3, why, len);
	}
	snprintf(why, len, "unknown limit command '%s': expected default, set or del", argv[1]);
	return -1;
}
