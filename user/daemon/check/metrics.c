// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The check server's /metrics text, written from one sample through
 * prom.h's prom_family and prom_label. */
#include "metrics.h"
#include "prom.h"

const char *const outcome_names[OUT_MAX] = {
	"ok", "limited", "unlimited", "monitored", "banned", "bad_request", "untrusted",
	"table_full", "repeat",
};

const char *const refusal_names[REFUSE_MAX] = { "full", "prefix_share" };

/* A series of one label, interface: NAME{interface="IFACE"} VALUE. */
static void put_iface_series(FILE *f, const char *name, const char *ifc,
			     unsigned long long v)
{
	fprintf(f, "%s{", name);
	prom_label(f, "interface", ifc, true);
	fprintf(f, "} %llu\n", v);
}

static void put_answers(FILE *f, const struct check_prom *p)
{
	prom_family(f, "sluice_check_answers_total", "counter",
		    "Checks answered by the check server, by outcome.");
	for (int o = 0; o < OUT_MAX; o++) {
		fputs("sluice_check_answers_total{", f);
		prom_label(f, "interface", p->iface, false);
		prom_label(f, "outcome", outcome_names[o], true);
		fprintf(f, "} %llu\n", (unsigned long long)p->answers[o]);
	}
}

static void put_rules(FILE *f, const struct check_prom *p)
{
	prom_family(f, "sluice_check_requests_total", "counter",
		    "Requests judged by each request rule, by verdict (a --monitor rule's "
		    "limited ones were answered 200).");
	for (unsigned int i = 0; i < p->nrules; i++) {
		const struct check_prom_rule *r = &p->rules[i];

		for (int v = 0; v < 2; v++) {
			fputs("sluice_check_requests_total{", f);
			prom_label(f, "interface", p->iface, false);
			prom_label(f, "rule", r->name, false);
			prom_label(f, "verdict", v ? "limited" : "pass", true);
			fprintf(f, "} %llu\n", (unsigned long long)(v ? r->limited : r->pass));
		}
	}
	prom_family(f, "sluice_check_escalation_bans_total", "counter",
		    "Sources each request rule banned in XDP for ignoring their 429s.");
	for (unsigned int i = 0; i < p->nrules; i++) {
		fputs("sluice_check_escalation_bans_total{", f);
		prom_label(f, "interface", p->iface, false);
		prom_label(f, "rule", p->rules[i].name, true);
		fprintf(f, "} %llu\n", (unsigned long long)p->rules[i].bans);
	}
}

int check_prom_write(FILE *f, const struct check_prom *p)
{
	prom_family(f, "sluice_build_info", "gauge", "Version of the sluice check server; always 1.");
	fputs("sluice_build_info{", f);
	prom_label(f, "version", p->version, true);
	fputs("} 1\n", f);
	put_answers(f, p);
	put_rules(f, p);
	prom_family(f, "sluice_check_escalation_ban_failures_total", "counter",
		    "Bans the check server could not put in XDP (the ban table was full).");
	put_iface_series(f, "sluice_check_escalation_ban_failures_total", p->iface,
			 p->ban_failures);
	prom_family(f, "sluice_check_tracked_sources", "gauge",
		    "Entries of the check server's source table in use.");
	put_iface_series(f, "sluice_check_tracked_sources", p->iface, p->tracked);
	prom_family(f, "sluice_check_tracked_sources_capacity", "gauge",
		    "Size of the check server's source table (--max-sources).");
	put_iface_series(f, "sluice_check_tracked_sources_capacity", p->iface, p->capacity);
	prom_family(f, "sluice_check_table_refusals_total", "counter",
		    "New clients refused (answered table_full) for want of room in the source "
		    "table: it was full with no idle entry, or the client's prefix (IPv6 /48, "
		    "IPv4 /24) held its share of it.");
	for (int r = 0; r < REFUSE_MAX; r++) {
		fputs("sluice_check_table_refusals_total{", f);
		prom_label(f, "interface", p->iface, false);
		prom_label(f, "reason", refusal_names[r], true);
		fprintf(f, "} %llu\n", (unsigned long long)p->refused[r]);
	}
	return ferror(f) ? -1 : 0;
}
