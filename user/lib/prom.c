// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The Prometheus text writer (format 0.0.4): the scrape's samples in, text
 * out. The exporter samples the maps; this only formats, so that golden
 * files can pin its output down byte for byte. */
#include <netinet/in.h>
#include <stdarg.h>
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

static void put_rule_info(FILE *f, const char *name, const struct prom_iface *i,
			  const struct prom_rule *r)
{
	bool limit = is_limit(r);
	char v[PROM_VAL_LEN];

	fprintf(f, "%s{", name);
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

/* --- the samples of each family --- */

/* One family: its HELP and TYPE, then its samples, written by one of
 * once (for the whole scrape) or each (for each interface). */
struct family {
	const char *name, *type, *help;
	void (*once)(FILE *f, const struct family *fam, const struct prom_scrape *s);
	void (*each)(FILE *f, const struct family *fam, const struct prom_iface *i);
	bool bytes;			/* the bytes twin of a packets family */
	bool every;			/* of unread interfaces too (they have no other) */
	bool cluster;			/* the cluster agent's: only where one has run */
};

void prom_sample(FILE *f, const char *name, const char *const *labels, const char *fmt, ...)
{
	va_list ap;

	fputs(name, f);
	if (labels && labels[0]) {
		fputc('{', f);
		for (const char *const *l = labels; l[0]; l += 2)
			prom_label(f, l[0], l[1], !l[2]);
		fputc('}', f);
	}
	fputc(' ', f);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap); /* NOLINT(clang-analyzer-valist.Uninitialized): va_start above */
	va_end(ap);
	fputc('\n', f);
}

static void put_build_info(FILE *f, const struct family *fam, const struct prom_scrape *s)
{
	prom_sample(f, fam->name, PROM_LABELS("version", s->version), "1");
}

static void put_program_info(FILE *f, const struct family *fam, const struct prom_iface *i)
{
	char id[16];

	snprintf(id, sizeof(id), "%u", i->prog_id);
	prom_sample(f, fam->name, PROM_LABELS("interface", i->name, "mode", i->mode,
					      "prog_id", id,
					      "libxdp", i->multiprog ? "dispatcher" : "single"), "1");
}

static void put_reasons(FILE *f, const struct family *fam, const struct prom_iface *i)
{
	for (unsigned int k = 0; k < i->nreasons; k++) {
		const struct prom_reason *r = &i->reasons[k];

		prom_sample(f, fam->name, PROM_LABELS("interface", i->name,
						      "action", r->drop ? "drop" : "pass",
						      "reason", r->name),
			    "%llu", (unsigned long long)(fam->bytes ? r->c.bytes : r->c.packets));
	}
}

static void put_tracked_sources(FILE *f, const struct family *fam, const struct prom_iface *i)
{
	prom_sample(f, fam->name, PROM_LABELS("interface", i->name), "%ld", i->sources);
}

static void put_established(FILE *f, const struct family *fam, const struct prom_iface *i)
{
	prom_sample(f, fam->name, PROM_LABELS("interface", i->name), "%llu",
		    (unsigned long long)i->established);
}

static void put_probation(FILE *f, const struct family *fam, const struct prom_iface *i)
{
	prom_sample(f, fam->name, PROM_LABELS("interface", i->name), "%llu",
		    (unsigned long long)i->probation);
}

static void put_established_evictions(FILE *f, const struct family *fam,
				      const struct prom_iface *i)
{
	prom_sample(f, fam->name, PROM_LABELS("interface", i->name), "%llu",
		    (unsigned long long)i->established_reclaimed);
}

static void put_lock_gave_up(FILE *f, const struct family *fam, const struct prom_iface *i)
{
	prom_sample(f, fam->name, PROM_LABELS("interface", i->name), "%llu",
		    (unsigned long long)i->lock_gave_up);
}

static void put_capacity(FILE *f, const struct family *fam, const struct prom_iface *i)
{
	prom_sample(f, fam->name, PROM_LABELS("interface", i->name), "%u", i->capacity);
}

static void put_new_sources(FILE *f, const struct family *fam, const struct prom_iface *i)
{
	prom_sample(f, fam->name, PROM_LABELS("interface", i->name), "%llu",
		    (unsigned long long)i->new_sources);
}

static void put_refused(FILE *f, const struct family *fam, const struct prom_iface *i)
{
	prom_sample(f, fam->name, PROM_LABELS("interface", i->name), "%llu",
		    (unsigned long long)i->refused);
}

/* Slots reclaimed from idle buckets, home or keyed: the datapath's count. */
static void put_evictions(FILE *f, const struct family *fam, const struct prom_iface *i)
{
	prom_sample(f, fam->name, PROM_LABELS("interface", i->name), "%llu",
		    (unsigned long long)i->reclaimed);
}

static void put_budget_rate(FILE *f, const struct family *fam, const struct prom_iface *i)
{
	prom_sample(f, fam->name, PROM_LABELS("interface", i->name), "%.17g",
		    i->budget_period ? (double)i->budget_rate / i->budget_period : 0.0);
}

static void put_budget_burst(FILE *f, const struct family *fam, const struct prom_iface *i)
{
	prom_sample(f, fam->name, PROM_LABELS("interface", i->name), "%llu",
		    (unsigned long long)i->budget_burst);
}

static void put_rules_info(FILE *f, const struct family *fam, const struct prom_iface *i)
{
	for (unsigned int k = 0; k < i->nrules; k++)
		put_rule_info(f, fam->name, i, &i->rules[k]);
}

/* Each rule's passed and dropped. */
static void put_policy(FILE *f, const struct family *fam, const struct prom_iface *i)
{
	for (unsigned int k = 0; k < i->nrules; k++)
		for (int drop = 0; drop < 2; drop++) {
			const struct sluice_policy_counter *c = &i->rules[k].c;
			__u64 v = fam->bytes ? (drop ? c->drop_bytes : c->pass_bytes) :
					       (drop ? c->drop_packets : c->pass_packets);

			fprintf(f, "%s{", fam->name);
			put_rule_identity(f, i, &i->rules[k], true);
			prom_label(f, "action", drop ? "drop" : "pass", true);
			fprintf(f, "} %llu\n", (unsigned long long)v);
		}
}

/* The dry run per rule: of a --monitor rule's passed, those enforcing
 * would have dropped. A subset of its action="pass" series, so a family of
 * its own (summing sluice_policy_packets_total stays right). */
static void put_monitored(FILE *f, const struct family *fam, const struct prom_iface *i)
{
	for (unsigned int k = 0; k < i->nrules; k++) {
		const struct prom_rule *r = &i->rules[k];

		if (!r->monitor)
			continue;
		fprintf(f, "%s{", fam->name);
		put_rule_identity(f, i, r, false);
		fprintf(f, "} %llu\n", (unsigned long long)(fam->bytes ? r->c.monitor_bytes :
								     r->c.monitor_packets));
	}
}

static void put_interface_up(FILE *f, const struct family *fam, const struct prom_iface *i)
{
	prom_sample(f, fam->name, PROM_LABELS("interface", i->name), "%d", i->read_ok ? 1 : 0);
}

static void put_skipped(FILE *f, const struct family *fam, const struct prom_scrape *s)
{
	prom_sample(f, fam->name, NULL, "%u", s->skipped);
}

static void put_duration(FILE *f, const struct family *fam, const struct prom_scrape *s)
{
	prom_sample(f, fam->name, NULL, "%.6f", s->duration_s);
}

/* --- the cluster agent's, of the interfaces where one has run --- */

static void put_cluster_up(FILE *f, const struct family *fam, const struct prom_iface *i)
{
	const struct prom_cluster *c = &i->cluster;

	prom_sample(f, fam->name, PROM_LABELS("interface", i->name), "%s",
		    c->st.mode == SLUICE_CLUSTER_UP && c->alive ? "1" : "0");
}

static void put_cluster_peers(FILE *f, const struct family *fam, const struct prom_iface *i)
{
	const struct sluice_cluster_state *st = &i->cluster.st;

	prom_sample(f, fam->name, PROM_LABELS("interface", i->name), "%llu",
		    (unsigned long long)(st->peers ? st->peers : 1));
}

static void put_cluster_syncs(FILE *f, const struct family *fam, const struct prom_iface *i)
{
	const struct sluice_cluster_state *st = &i->cluster.st;

	prom_sample(f, fam->name, PROM_LABELS("interface", i->name, "result", "ok"), "%llu",
		    (unsigned long long)st->syncs);
	prom_sample(f, fam->name, PROM_LABELS("interface", i->name, "result", "failed"), "%llu",
		    (unsigned long long)st->sync_failures);
}

static void put_cluster_grants(FILE *f, const struct family *fam, const struct prom_iface *i)
{
	prom_sample(f, fam->name, PROM_LABELS("interface", i->name), "%llu",
		    (unsigned long long)i->cluster.st.grants);
}

static void put_cluster_granted(FILE *f, const struct family *fam, const struct prom_iface *i)
{
	prom_sample(f, fam->name, PROM_LABELS("interface", i->name), "%llu",
		    (unsigned long long)i->cluster.st.granted);
}

static void put_cluster_leases(FILE *f, const struct family *fam, const struct prom_iface *i)
{
	prom_sample(f, fam->name, PROM_LABELS("interface", i->name), "%llu",
		    (unsigned long long)i->cluster.st.leases);
}

static void put_cluster_redis_ops(FILE *f, const struct family *fam, const struct prom_iface *i)
{
	prom_sample(f, fam->name, PROM_LABELS("interface", i->name), "%llu",
		    (unsigned long long)i->cluster.st.redis_ops);
}

static void put_cluster_fallback(FILE *f, const struct family *fam, const struct prom_iface *i)
{
	prom_sample(f, fam->name, PROM_LABELS("interface", i->name), "%.6f",
		    i->cluster.fallback_s);
}

static void put_bans(FILE *f, const struct family *fam, const struct prom_iface *i)
{
	for (unsigned int k = 0; k < i->nban_lists; k++) {
		const struct prom_ban_list *l = &i->ban_lists[k];

		prom_sample(f, fam->name,
			    PROM_LABELS("interface", i->name, "kind", "added", "list", l->name),
			    "%llu", (unsigned long long)l->added);
		prom_sample(f, fam->name,
			    PROM_LABELS("interface", i->name, "kind", "loaded", "list", l->name),
			    "%llu", (unsigned long long)l->loaded);
	}
	prom_sample(f, fam->name, PROM_LABELS("interface", i->name, "kind", "escalated", "list", ""),
		    "%llu", (unsigned long long)i->escalated);
}

static void put_ban_capacity(FILE *f, const struct family *fam, const struct prom_iface *i)
{
	prom_sample(f, fam->name, PROM_LABELS("interface", i->name), "%u", i->ban_capacity);
}

static void put_ban_dropped(FILE *f, const struct family *fam, const struct prom_iface *i)
{
	for (unsigned int k = 0; k < i->nban_lists; k++) {
		const struct prom_ban_list *l = &i->ban_lists[k];

		prom_sample(f, fam->name, PROM_LABELS("interface", i->name, "list", l->name), "%llu",
			    (unsigned long long)(fam->bytes ? l->dropped.bytes : l->dropped.packets));
	}
}

/* --- the families, in the order they are written --- */

static const struct family families[] = {
	{ "sluice_build_info", "gauge", "Version of the sluice exporter; always 1.",
	  .once = put_build_info },
	{ "sluice_interface_up", "gauge",
	  "1 when this scrape read the interface's maps; 0 when it could not, and its other series are left out of this scrape.",
	  .each = put_interface_up, .every = true },
	{ "sluice_program_info", "gauge", "The XDP program attached to each interface; always 1.",
	  .each = put_program_info },
	{ "sluice_packets_total", "counter",
	  "Packets seen by the XDP program, by what it did and why.", .each = put_reasons },
	{ "sluice_bytes_total", "counter",
	  "Bytes seen by the XDP program, by what it did and why.", .each = put_reasons,
	  .bytes = true },
	{ "sluice_tracked_sources", "gauge",
	  "Buckets held now: one per tracked source, prefix or rule.",
	  .each = put_tracked_sources },
	{ "sluice_tracked_sources_capacity", "gauge",
	  "Sources the source table holds at once (attach --max-sources).",
	  .each = put_capacity },
	{ "sluice_tracked_sources_established", "gauge",
	  "Slots held by established sources, which a flood of fresh sources never displaces.",
	  .each = put_established },
	{ "sluice_tracked_sources_probation", "gauge",
	  "Slots held by sources on probation (not established): where a full table makes room.",
	  .each = put_probation },
	{ "sluice_new_sources_total", "counter",
	  "Entries the source table took for sources (or keyed prefixes) never seen before.",
	  .each = put_new_sources },
	{ "sluice_source_evictions_total", "counter",
	  "Entries given to new sources: slots of idle sources and idle keyed buckets reclaimed.",
	  .each = put_evictions },
	{ "sluice_established_source_evictions_total", "counter",
	  "Slots of established sources reclaimed after their idle time (also in sluice_source_evictions_total).",
	  .each = put_established_evictions },
	{ "sluice_new_sources_refused_total", "counter",
	  "New sources dropped because every slot they may take was held (in debt, or established).",
	  .each = put_refused },
	{ "sluice_source_lock_gave_up_total", "counter",
	  "New sources dropped as no_bucket because another CPU held their stripe lock past the bounded tries.",
	  .each = put_lock_gave_up },
	{ "sluice_new_source_budget_per_second", "gauge",
	  "New sources the source table admits per second (limit new-sources); 0 is off.",
	  .each = put_budget_rate },
	{ "sluice_new_source_budget_burst", "gauge",
	  "New sources the budget admits at once; 0 when it is off.", .each = put_budget_burst },
	{ "sluice_bans", "gauge",
	  "Bans now: prefixes by kind (added, loaded) and list, and the check server's escalated bans.",
	  .each = put_bans },
	{ "sluice_ban_table_capacity", "gauge",
	  "Prefixes the ban table holds at once (attach --max-bans).", .each = put_ban_capacity },
	{ "sluice_ban_dropped_packets_total", "counter",
	  "Packets dropped by each list's prefix bans (also counted as reason banned).",
	  .each = put_ban_dropped },
	{ "sluice_ban_dropped_bytes_total", "counter",
	  "Bytes dropped by each list's prefix bans (also counted as reason banned).",
	  .each = put_ban_dropped, .bytes = true },
	{ "sluice_rule_info", "gauge",
	  "Each rule of the live policy, by its CIDR and match, and what it does; always 1.",
	  .each = put_rules_info },
	{ "sluice_policy_packets_total", "counter",
	  "Packets decided by each rule of the live policy, passed or dropped.",
	  .each = put_policy },
	{ "sluice_policy_bytes_total", "counter",
	  "Bytes decided by each rule of the live policy, passed or dropped.",
	  .each = put_policy, .bytes = true },
	{ "sluice_policy_monitored_packets_total", "counter",
	  "Packets each --monitor rule passed that enforcing it would have dropped.",
	  .each = put_monitored },
	{ "sluice_policy_monitored_bytes_total", "counter",
	  "Bytes each --monitor rule passed that enforcing it would have dropped.",
	  .each = put_monitored, .bytes = true },
	{ "sluice_scrape_skipped_interfaces", "gauge",
	  "Interfaces whose pins could not be read during this scrape (sluice_interface_up 0).",
	  .once = put_skipped },
	{ "sluice_scrape_duration_seconds", "gauge", "Time this scrape took to read the maps.",
	  .once = put_duration },
	{ "sluice_cluster_up", "gauge",
	  "1 while the cluster agent runs and Redis answers; 0 in fallback (limit / N) or with the agent gone.",
	  .each = put_cluster_up, .cluster = true },
	{ "sluice_cluster_peers", "gauge",
	  "Hosts in the cluster (N) as the agent last saw them; --cluster rules share by it.",
	  .each = put_cluster_peers, .cluster = true },
	{ "sluice_cluster_syncs_total", "counter",
	  "Sync intervals of the agent, by whether Redis answered.",
	  .each = put_cluster_syncs, .cluster = true },
	{ "sluice_cluster_lease_grants_total", "counter",
	  "Leases the agent wrote into the datapath: one per hot bucket per sync.",
	  .each = put_cluster_grants, .cluster = true },
	{ "sluice_cluster_leased_units_total", "counter",
	  "Tokens (packets) granted by Redis to this host in leases.",
	  .each = put_cluster_granted, .cluster = true },
	{ "sluice_cluster_leases", "gauge", "Hot buckets holding a lease now.",
	  .each = put_cluster_leases, .cluster = true },
	{ "sluice_cluster_redis_ops_total", "counter", "Commands the agent sent to Redis.",
	  .each = put_cluster_redis_ops, .cluster = true },
	{ "sluice_cluster_fallback_seconds_total", "counter",
	  "Time spent in fallback (Redis not answering), the current period included.",
	  .each = put_cluster_fallback, .cluster = true },
};

/* The cluster families only when an agent has run on some interface, so
 * that pages without one have none of them. */
int prom_write(FILE *f, const struct prom_scrape *s)
{
	bool agents = false;

	for (size_t i = 0; i < s->nifaces; i++)
		agents |= s->ifaces[i].cluster.present;
	for (size_t k = 0; k < sizeof(families) / sizeof(families[0]); k++) {
		const struct family *fam = &families[k];

		if (fam->cluster && !agents)
			continue;
		prom_family(f, fam->name, fam->type, fam->help);
		if (fam->once)
			fam->once(f, fam, s);
		for (size_t i = 0; fam->each && i < s->nifaces; i++)
			if ((s->ifaces[i].read_ok || fam->every) &&
			    (!fam->cluster || s->ifaces[i].cluster.present))
				fam->each(f, fam, &s->ifaces[i]);
	}
	return ferror(f) ? -1 : 0;
}
