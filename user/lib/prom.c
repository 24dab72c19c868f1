// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The Prometheus text writer (format 0.0.4): the scrape's samples in, text
 * out. The exporter samples the maps; this only formats, so that golden
 * files can pin its output down byte for byte. */
#include <netinet/in.h>
#include "prom.h"

/* Longest label value we build ourselves: "65535-65535", "18446744073709551615/h". */
#define PROM_VAL_LEN	32

/* A label value: backslash, double quote and newline escaped. */
void prom_label(FILE *f, const char *name, const char *val, bool last)
{
	fprintf(f, "%s=\"", name);
	for (const char *c = val; *c; c++) {
		if (*c == '\\' || *c == '"')
			fprintf(f, "\\%c", *c);
		else if (*c == '\n')
			fputs("\\n", f);
		else
			fputc(*c, f);
	}
	fputs(last ? "\"" : "\",", f);
}

void prom_family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* --- a rule's identity: policy and match; "" where the rule has no such match --- */

static void proto_value(const struct prom_rule *r, char *buf, size_t len)
{
	if (!(r->match_flags & SLUICE_MATCH_PROTO)) {
		buf[0] = '\0';
		return;
	}
	switch (r->proto) {
	case IPPROTO_TCP:	snprintf(buf, len, "tcp"); break;
	case IPPROTO_UDP:	snprintf(buf, len, "udp"); break;
	case IPPROTO_ICMP:	snprintf(buf, len, "icmp"); break;
	case IPPROTO_ICMPV6:	snprintf(buf, len, "icmpv6"); break;
	default:		snprintf(buf, len, "%u", r->proto); break;
	}
}

static void dport_value(const struct prom_rule *r, char *buf, size_t len)
{
	if (!(r->match_flags & SLUICE_MATCH_PORT))
		buf[0] = '\0';
	else if (r->dport_lo == r->dport_hi)
		snprintf(buf, len, "%u", r->dport_lo);
	else
		snprintf(buf, len, "%u-%u", r->dport_lo, r->dport_hi);
}

/* interface, policy, proto, dport, syn: the labels every per-rule series
 * starts with, so two rules on one CIDR are two series. */
/* The rule's identity labels; more: other labels follow. */
static void put_rule_identity(FILE *f, const struct prom_iface *i, const struct prom_rule *r,
			      bool more)
{
	char v[PROM_VAL_LEN];

	prom_label(f, "interface", i->name, false);
	prom_label(f, "policy", r->policy, false);
	proto_value(r, v, sizeof(v));
	prom_label(f, "proto", v, false);
	dport_value(r, v, sizeof(v));
	prom_label(f, "dport", v, false);
	prom_label(f, "syn", r->match_flags & SLUICE_MATCH_SYN ? "true" : "", false);
	/* A request rule's CIDR may have a packet rule too. */
	prom_label(f, "requests", r->unit == SLUICE_UNIT_REQUESTS ? "true" : "", !more);
}

/* --- what a limit rule does; "" for allow and deny --- */

static bool is_limit(const struct prom_rule *r)
{
	return r->action == SLUICE_ACT_LIMIT;
}

static void rate_value(const struct prom_rule *r, char *buf, size_t len)
{
	const char *per = r->period == SLUICE_PERIOD_HOUR ? "h" :
			  r->period == SLUICE_PERIOD_MIN ? "m" : "s";

	snprintf(buf, len, "%llu/%s", (unsigned long long)r->rate, per);
}

static void per_value(const struct prom_rule *r, char *buf, size_t len)
{
	switch (r->per) {
	case SLUICE_PER_PREFIX:	snprintf(buf, len, "/%u", r->per_len); break;
	case SLUICE_PER_RULE:	snprintf(buf, len, "rule"); break;
	default:		snprintf(buf, len, "source"); break;
	}
}

/* Seconds in decimal, no trailing zeros: 30, 0.25, 0.001. */
static void seconds_value(__u64 ns, char *buf, size_t len)
{
	__u64 frac = ns % SLUICE_NS_PER_SEC;
	int n = snprintf(buf, len, "%llu", (unsigned long long)(ns / SLUICE_NS_PER_SEC));
	int digits = 9;

	if (!frac || n < 0 || (size_t)n >= len)
		return;
	while (frac % 10 == 0) {
		frac /= 10;
		digits--;
	}
	snprintf(buf + n, len - (size_t)n, ".%0*llu", digits, (unsigned long long)frac);
}

static void put_rule_info(FILE *f, const struct prom_iface *i, const struct prom_rule *r)
{
	bool limit = is_limit(r);
	char v[PROM_VAL_LEN];

	fputs("sluice_rule_info{", f);
	put_rule_identity(f, i, r, true);
	prom_label(f, "kind", r->kind, false);
	prom_label(f, "unit", !limit ? "" : r->unit == SLUICE_UNIT_BYTES ? "bytes" :
		  r->unit == SLUICE_UNIT_REQUESTS ? "requests" : "packets", false);
	v[0] = '\0';
	if (limit)
		rate_value(r, v, sizeof(v));
	prom_label(f, "rate", v, false);
	if (limit)
		snprintf(v, sizeof(v), "%llu", (unsigned long long)r->burst);
	prom_label(f, "burst", v, false);
	v[0] = '\0';
	if (limit)
		per_value(r, v, sizeof(v));
	prom_label(f, "per", v, false);
	prom_label(f, "algo", !limit ? "" : r->algo ? r->algo : "token-bucket", false);
	v[0] = '\0';
	if (limit && r->window_ns)
		seconds_value(r->window_ns, v, sizeof(v));
	prom_label(f, "window_seconds", v, false);
	v[0] = '\0';
	if (limit)
		seconds_value(r->ban_ns, v, sizeof(v));
	prom_label(f, "ban_seconds", v, false);
	prom_label(f, "monitor", r->monitor ? "true" : "false", true);
	fputs("} 1\n", f);
}

/* --- the families --- */

static void put_reason_family(FILE *f, const struct prom_scrape *s, bool bytes)
{
	const char *name = bytes ? "sluice_bytes_total" : "sluice_packets_total";

	prom_family(f, name, "counter", bytes ?
		   "Bytes seen by the XDP program, by what it did and why." :
		   "Packets seen by the XDP program, by what it did and why.");
	for (size_t i = 0; i < s->nifaces; i++) {
		const struct prom_iface *ifc = &s->ifaces[i];

		for (unsigned int k = 0; k < ifc->nreasons; k++) {
			const struct prom_reason *r = &ifc->reasons[k];

			fprintf(f, "%s{", name);
			prom_label(f, "interface", ifc->name, false);
			prom_label(f, "action", r->drop ? "drop" : "pass", false);
			prom_label(f, "reason", r->name, true);
			fprintf(f, "} %llu\n",
				(unsigned long long)(bytes ? r->c.bytes : r->c.packets));
		}
	}
}

static void put_policy_family(FILE *f, const struct prom_scrape *s, bool bytes)
{
	const char *name = bytes ? "sluice_policy_bytes_total" : "sluice_policy_packets_total";

	prom_family(f, name, "counter", bytes ?
		   "Bytes decided by each rule of the live policy, passed or dropped." :
		   "Packets decided by each rule of the live policy, passed or dropped.");
	for (size_t i = 0; i < s->nifaces; i++)
		for (unsigned int k = 0; k < s->ifaces[i].nrules; k++)
			for (int drop = 0; drop < 2; drop++) {
				const struct prom_rule *r = &s->ifaces[i].rules[k];
				const struct sluice_policy_counter *c = &r->c;
				__u64 v = bytes ? (drop ? c->drop_bytes : c->pass_bytes) :
						  (drop ? c->drop_packets : c->pass_packets);

				fprintf(f, "%s{", name);
				put_rule_identity(f, &s->ifaces[i], r, true);
				prom_label(f, "action", drop ? "drop" : "pass", true);
				fprintf(f, "} %llu\n", (unsigned long long)v);
			}
}

/* The dry run per rule: of a --monitor rule's passed, those enforcing
 * would have dropped. A subset of its action="pass" series, so a family of
 * its own (summing sluice_policy_packets_total stays right). */
static void put_monitor_family(FILE *f, const struct prom_scrape *s, bool bytes)
{
	const char *name = bytes ? "sluice_policy_monitored_bytes_total" :
				   "sluice_policy_monitored_packets_total";

	prom_family(f, name, "counter", bytes ?
		   "Bytes each --monitor rule passed that enforcing it would have dropped." :
		   "Packets each --monitor rule passed that enforcing it would have dropped.");
	for (size_t i = 0; i < s->nifaces; i++)
		for (unsigned int k = 0; k < s->ifaces[i].nrules; k++) {
			const struct prom_rule *r = &s->ifaces[i].rules[k];

			if (!r->monitor)
				continue;
			fprintf(f, "%s{", name);
			put_rule_identity(f, &s->ifaces[i], r, false);
			fprintf(f, "} %llu\n", (unsigned long long)(bytes ? r->c.monitor_bytes :
									     r->c.monitor_packets));
		}
}

int prom_write(FILE *f, const struct prom_scrape *s)
{
	char id[16];

	prom_family(f, "sluice_build_info", "gauge", "Version of the sluice exporter; always 1.");
	fputs("sluice_build_info{", f);
	prom_label(f, "version", s->version, true);
	fputs("} 1\n", f);

	prom_family(f, "sluice_program_info", "gauge",
		   "The XDP program attached to each interface; always 1.");
	for (size_t i = 0; i < s->nifaces; i++) {
		const struct prom_iface *ifc = &s->ifaces[i];

		snprintf(id, sizeof(id), "%u", ifc->prog_id);
		fputs("sluice_program_info{", f);
		prom_label(f, "interface", ifc->name, false);
		prom_label(f, "mode", ifc->mode, false);
		prom_label(f, "prog_id", id, false);
		prom_label(f, "libxdp", ifc->multiprog ? "dispatcher" : "single", true);
		fputs("} 1\n", f);
	}

	put_reason_family(f, s, false);
	put_reason_family(f, s, true);

	prom_family(f, "sluice_tracked_sources", "gauge",
		   "Buckets in the source table now: one per tracked source, prefix or rule.");
	for (size_t i = 0; i < s->nifaces; i++) {
		fputs("sluice_tracked_sources{", f);
		prom_label(f, "interface", s->ifaces[i].name, true);
		fprintf(f, "} %ld\n", s->ifaces[i].sources);
	}
	prom_family(f, "sluice_tracked_sources_capacity", "gauge",
		   "Size of the source table; past it the least recently seen bucket is evicted.");
	for (size_t i = 0; i < s->nifaces; i++) {
		fputs("sluice_tracked_sources_capacity{", f);
		prom_label(f, "interface", s->ifaces[i].name, true);
		fprintf(f, "} %u\n", s->ifaces[i].capacity);
	}

	prom_family(f, "sluice_new_sources_total", "counter",
		   "Entries the source table took for sources (or keyed prefixes) never seen before.");
	for (size_t i = 0; i < s->nifaces; i++) {
		fputs("sluice_new_sources_total{", f);
		prom_label(f, "interface", s->ifaces[i].name, true);
		fprintf(f, "} %llu\n", (unsigned long long)s->ifaces[i].new_sources);
	}
	prom_family(f, "sluice_source_evictions_total", "counter",
		   "Entries evicted to make room: entries taken less those still tracked.");
	for (size_t i = 0; i < s->nifaces; i++) {
		const struct prom_iface *ifc = &s->ifaces[i];
		long tracked = ifc->sources > 0 ? ifc->sources : 0;

		fputs("sluice_source_evictions_total{", f);
		prom_label(f, "interface", ifc->name, true);
		fprintf(f, "} %llu\n", ifc->new_sources > (__u64)tracked ?
			(unsigned long long)(ifc->new_sources - (__u64)tracked) : 0ULL);
	}
	prom_family(f, "sluice_new_source_budget_per_second", "gauge",
		   "New sources the source table admits per second (limit new-sources); 0 is off.");
	for (size_t i = 0; i < s->nifaces; i++) {
		const struct prom_iface *ifc = &s->ifaces[i];

		fputs("sluice_new_source_budget_per_second{", f);
		prom_label(f, "interface", ifc->name, true);
		fprintf(f, "} %.17g\n", ifc->budget_period ?
			(double)ifc->budget_rate / ifc->budget_period : 0.0);
	}
	prom_family(f, "sluice_new_source_budget_burst", "gauge",
		   "New sources the budget admits at once; 0 when it is off.");
	for (size_t i = 0; i < s->nifaces; i++) {
		fputs("sluice_new_source_budget_burst{", f);
		prom_label(f, "interface", s->ifaces[i].name, true);
		fprintf(f, "} %llu\n", (unsigned long long)s->ifaces[i].budget_burst);
	}

	prom_family(f, "sluice_rule_info", "gauge",
		   "Each rule of the live policy, by its CIDR and match, and what it does; always 1.");
	for (size_t i = 0; i < s->nifaces; i++)
		for (unsigned int k = 0; k < s->ifaces[i].nrules; k++)
			put_rule_info(f, &s->ifaces[i], &s->ifaces[i].rules[k]);
	put_policy_family(f, s, false);
	put_policy_family(f, s, true);
	put_monitor_family(f, s, false);
	put_monitor_family(f, s, true);

	prom_family(f, "sluice_scrape_skipped_interfaces", "gauge",
		   "Pin directories that could not be read during this scrape.");
	fprintf(f, "sluice_scrape_skipped_interfaces %u\n", s->skipped);
	prom_family(f, "sluice_scrape_duration_seconds", "gauge",
		   "Time this scrape took to read the maps.");
	fprintf(f, "sluice_scrape_duration_seconds %.6f\n", s->duration_s);
	return ferror(f) ? -1 : 0;
}
