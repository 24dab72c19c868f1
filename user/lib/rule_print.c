// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* A struct rule back to the words rule.c parses: what policy show, limit
 * list and the errors print, so that a printed rule reads back the same. */
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "output.h"
#include "rule.h"

void rule_match_words(const struct rule_match *m, char *buf, size_t len)
{
	char name[16];

	buf[0] = '\0';
	if ((m->flags & SLUICE_MATCH_PROTO) && !(m->flags & SLUICE_MATCH_SYN)) {
		proto_name(m->proto, name, sizeof(name));
		str_append(buf, len, " --proto %s", name);
	}
	if (m->flags & SLUICE_MATCH_PORT) {
		str_append(buf, len, " --dport %u", m->dport_lo);
		if (m->dport_hi != m->dport_lo)
			str_append(buf, len, "-%u", m->dport_hi);
	}
	if (m->flags & SLUICE_MATCH_SYN)
		str_append(buf, len, " --syn");
	/* without the leading space */
	if (buf[0] == ' ')
		memmove(buf, buf + 1, strlen(buf));
}

void rule_label(const struct rule *r, bool is_default, char *buf, size_t len)
{
	char cidr[SLUICE_CIDR_STR_MAX], match[64];

	if (is_default) {
		snprintf(buf, len, "default");
		return;
	}
	format_cidr(&r->cidr, cidr, sizeof(cidr));
	if (rule_is_request(r))
		snprintf(match, sizeof(match), "--requests");
	else
		rule_match_words(&r->match, match, sizeof(match));
	snprintf(buf, len, "%s%s%s", cidr, *match ? " " : "", match);
}

void rule_rate_words(const struct rule *r, char *buf, size_t len)
{
	const char *suffix = r->period == SLUICE_PERIOD_HOUR ? "/h" :
			     r->period == SLUICE_PERIOD_MIN ? "/m" : "";

	snprintf(buf, len, "%llu%s", (unsigned long long)r->rate, suffix);
}

void budget_format(const struct rule *r, char *buf, size_t len)
{
	char rate[32];

	if (!r->rate) {
		snprintf(buf, len, "limit new-sources off");
		return;
	}
	rule_rate_words(r, rate, sizeof(rate));
	snprintf(buf, len, "limit new-sources --rate %s --burst %llu", rate,
		 (unsigned long long)r->burst);
}

void rule_format(const struct rule *r, bool is_default, char *buf, size_t len)
{
	char label[128], rate[32], ban[24];

	buf[0] = '\0';
	if (is_default && r->action != SLUICE_ACT_LIMIT)
		return;
	rule_label(r, is_default, label, sizeof(label));
	if (r->action != SLUICE_ACT_LIMIT) {
		snprintf(buf, len, "%s %s", action_name(r->action), label);
		return;
	}
	rule_rate_words(r, rate, sizeof(rate));
	if (rule_is_request(r))	/* the label names it already */
		format_cidr(&r->cidr, label, sizeof(label));
	snprintf(buf, len, "limit %s%s %s %s", is_default ? "" : "set ",
		 label, unit_option(r->unit), rate);
	if (r->algo == SLUICE_ALGO_TOKEN_BUCKET) {
		str_append(buf, len, " --burst %llu", (unsigned long long)r->burst);
	} else {
		duration_words(r->window_ns, ban, sizeof(ban));
		str_append(buf, len, " --algo %s --window %s", algo_name(r->algo), ban);
	}
	if (r->per == SLUICE_PER_PREFIX)
		str_append(buf, len, " --per /%u", r->per_len);
	else if (r->per == SLUICE_PER_RULE)
		str_append(buf, len, " --per rule");
	if (r->ban_ns) {
		duration_words(r->ban_ns, ban, sizeof(ban));
		str_append(buf, len, " --ban %s", ban);
		if (rule_is_request(r))
			str_append(buf, len, " --ban-after %u", r->ban_after);
	}
	if (r->monitor)
		str_append(buf, len, " --monitor");
	if (r->cluster)
		str_append(buf, len, " --cluster");
}

/* Rules in a stable order: IPv4 first, by address, prefix, then match. */
int rule_cmp(const void *a, const void *b)
{
	const struct rule *x = a, *y = b;
	bool xv4 = addr_is_v4(&x->cidr.addr), yv4 = addr_is_v4(&y->cidr.addr);
	int c;

	if (xv4 != yv4)
		return xv4 ? -1 : 1;
	c = memcmp(&x->cidr.addr, &y->cidr.addr, sizeof(x->cidr.addr));
	if (c)
		return c;
	if (x->cidr.prefixlen != y->cidr.prefixlen)
		return (int)x->cidr.prefixlen - (int)y->cidr.prefixlen;
	if (rule_is_request(x) != rule_is_request(y))
		return rule_is_request(x) ? 1 : -1;	/* after packet rules */
	if (x->match.flags != y->match.flags)
		return x->match.flags - y->match.flags;
	if (x->match.proto != y->match.proto)
		return x->match.proto - y->match.proto;
	if (x->match.dport_lo != y->match.dport_lo)
		return x->match.dport_lo - y->match.dport_lo;
	return x->match.dport_hi - y->match.dport_hi;
}

size_t policy_format(const struct policy *p, const char *iface, char *buf, size_t len)
{
	struct rule *sorted = malloc(sizeof(*sorted) * (p->n ? p->n : 1));
	char words[RULE_TEXT_MAX];
	size_t used;

	if (len)
		buf[0] = '\0';
	if (!sorted)
		return SIZE_MAX;	/* no room for anything */
	memcpy(sorted, p->rules, sizeof(*sorted) * p->n);
	qsort(sorted, p->n, sizeof(*sorted), rule_cmp);
	str_append(buf, len, "# sluice policy of %s\n", iface);
	used = (size_t)snprintf(NULL, 0, "# sluice policy of %s\n", iface);
	if (p->def.action == SLUICE_ACT_LIMIT)
		rule_format(&p->def, true, words, sizeof(words));
	else
		snprintf(words, sizeof(words), "# default: not limited");
	for (unsigned int i = 0; i <= p->n + 1; i++) {
		if (i > 0 && i <= p->n)
			rule_format(&sorted[i - 1], false, words, sizeof(words));
		else if (i == p->n + 1)
			budget_format(&p->new_sources, words, sizeof(words));
		str_append(buf, len, "%s\n", words);
		used += strlen(words) + 1;
	}
	free(sorted);
	return used;
}

void rule_json_fields(struct json *j, const struct rule *r, bool is_default)
{
	char buf[RULE_TEXT_MAX];

	json_str(j, "unit", unit_name(r->unit));
	json_u64(j, "period", r->period ? r->period : SLUICE_PERIOD_SEC);
	json_str(j, "per", per_name(r->per));
	if (r->per == SLUICE_PER_PREFIX)
		json_u64(j, "per_len", r->per_len);
	else
		json_null(j, "per_len");
	if (r->match.flags & SLUICE_MATCH_PROTO) {
		proto_name(r->match.proto, buf, sizeof(buf));
		json_str(j, "proto", buf);
	} else {
		json_null(j, "proto");
	}
	if (r->match.flags & SLUICE_MATCH_PORT) {
		if (r->match.dport_lo == r->match.dport_hi)
			snprintf(buf, sizeof(buf), "%u", r->match.dport_lo);
		else
			snprintf(buf, sizeof(buf), "%u-%u", r->match.dport_lo, r->match.dport_hi);
		json_str(j, "dport", buf);
	} else {
		json_null(j, "dport");
	}
	json_bool(j, "syn", r->match.flags & SLUICE_MATCH_SYN);
	json_bool(j, "monitor", r->monitor);
	json_bool(j, "cluster", r->cluster);
	json_u64(j, "ban_ms", (r->ban_ns + 999999) / 1000000);
	if (rule_is_request(r))
		json_u64(j, "ban_after", r->ban_after);
	json_str(j, "algo", algo_name(r->algo));
	if (r->algo != SLUICE_ALGO_TOKEN_BUCKET)
		json_u64(j, "window_ns", r->window_ns);
	else
		json_null(j, "window_ns");
	rule_match_words(&r->match, buf, sizeof(buf));
	json_str(j, "match", buf);
	rule_format(r, is_default, buf, sizeof(buf));
	json_str(j, "rule", buf);
}
