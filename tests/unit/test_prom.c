/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Golden-text tests of the Prometheus writer (user/lib/prom.c): each case builds
 * a scrape by hand, and the writer's output must equal
 * tests/unit/golden/NAME.prom byte for byte. When promtool is installed each
 * golden file must also pass `promtool check metrics` cleanly. Needs neither
 * root nor a network namespace. Prints "ok NAME" or "FAIL NAME: detail" per
 * case and exits 1 if any case failed.
 *
 * usage: test_prom [CASE]    only the cases whose name contains CASE
 * SLUICE_GOLDEN_DIR          where the golden files are (default
 *                            tests/unit/golden, from the repository root)
 * SLUICE_GOLDEN_UPDATE=1     write the golden files instead of comparing:
 *                            then review the diff before committing it */
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "prom.h"
#include "harness.h"
#include "golden.h"

#define MS		1000000ULL	/* ns */

/* A failure without a line number (the golden diff says where). */
#define fail(...)	fail_at(0, __VA_ARGS__)

/* ---- building samples ---- */

/* The reasons in enum order, named as include/sluice/reasons.h lists them. */
#define REASON_NAME(id, name, drop, help) [SLUICE_R_##id] = name,
static const char *const reason_names[SLUICE_R_MAX] = { SLUICE_REASONS(REASON_NAME) };
#undef REASON_NAME

/* Every reason, with packets base+r and bytes 100 * that. */
static void fill_reasons(struct prom_iface *ifc, __u64 base)
{
	for (__u32 r = 0; r < SLUICE_R_MAX; r++) {
		ifc->reasons[r].name = reason_names[r];
		ifc->reasons[r].drop = sluice_reason_is_drop(r);
		ifc->reasons[r].c.packets = base + r;
		ifc->reasons[r].c.bytes = 100 * (base + r);
	}
	ifc->nreasons = SLUICE_R_MAX;
}

static void iface_init(struct prom_iface *ifc, const char *name, __u32 prog_id)
{
	memset(ifc, 0, sizeof(*ifc));
	snprintf(ifc->name, sizeof(ifc->name), "%s", name);
	ifc->read_ok = true;
	ifc->mode = "native";
	ifc->prog_id = prog_id;
	ifc->capacity = 262144;
}

static struct prom_rule rule_allow(const char *policy)
{
	struct prom_rule r = { .action = SLUICE_ACT_ALLOW, .kind = "allow" };

	snprintf(r.policy, sizeof(r.policy), "%s", policy);
	return r;
}

static struct prom_rule rule_deny(const char *policy)
{
	struct prom_rule r = rule_allow(policy);

	r.action = SLUICE_ACT_DENY;
	r.kind = "deny";
	return r;
}

static struct prom_rule rule_limit(const char *policy, __u64 rate, __u64 burst)
{
	struct prom_rule r = rule_allow(policy);

	r.action = SLUICE_ACT_LIMIT;
	r.kind = "limit";
	r.rate = rate;
	r.period = SLUICE_PERIOD_SEC;
	r.burst = burst;
	return r;
}

static void counts(struct prom_rule *r, __u64 pass, __u64 drop)
{
	r->c.pass_packets = pass;
	r->c.drop_packets = drop;
	r->c.pass_bytes = 60 * pass;
	r->c.drop_bytes = 60 * drop;
}

static struct prom_scrape scrape_of(const struct prom_iface *ifaces, size_t n)
{
	struct prom_scrape s = {
		.version = "0.1.0",
		.ifaces = ifaces,
		.nifaces = n,
		.duration_s = 0.000125,
	};
	return s;
}

/* ---- comparing with the golden file ---- */

static int write_scrape(FILE *f, const void *s)
{
	return prom_write(f, s);
}

static void check_golden(const char *name, const struct prom_scrape *s)
{
	golden_check(name, write_scrape, s);
}

/* ---- cases ---- */

/* No interface attached: the families are still all there, without series. */
static void case_empty(void)
{
	struct prom_scrape s = scrape_of(NULL, 0);

	check_golden("empty", &s);
}

/* One interface: every reason, the default and a few plain CIDR rules. */
static void case_one_iface(void)
{
	struct prom_rule rules[5] = {
		rule_limit("default", 100, 200),
		rule_limit("198.18.6.0/24", 10, 10),
		rule_deny("198.18.7.0/24"),
		rule_allow("2001:2::100/120"),
		rule_limit("198.18.8.0/24", 100, 25),
	};
	struct prom_iface ifc;
	struct prom_scrape s;

	counts(&rules[0], 1000, 5);
	counts(&rules[1], 40, 960);
	counts(&rules[2], 0, 300);
	counts(&rules[3], 300, 0);
	/* a sliding window of 250 ms: its budget is in burst */
	rules[4].algo = "sliding-window";
	rules[4].window_ns = 250000000;
	counts(&rules[4], 25, 75);
	iface_init(&ifc, "veth0", 42);
	fill_reasons(&ifc, 1);
	ifc.sources = 7;
	ifc.rules = rules;
	ifc.nrules = ARRAY_LEN(rules);
	s = scrape_of(&ifc, 1);
	check_golden("one_iface", &s);
}

/* Two interfaces in the order given, and a third that could not be read
 * (only its sluice_interface_up 0); the second in skb mode under libxdp's
 * dispatcher, with the default never set (allow). */
static void case_two_ifaces(void)
{
	struct prom_rule r0[2] = { rule_limit("default", 5, 5), rule_deny("198.18.0.0/16") };
	struct prom_rule r1[1] = { rule_allow("default") };
	struct prom_iface ifc[3];
	struct prom_scrape s;

	counts(&r0[0], 18446744073709551615ULL, 1);
	counts(&r0[1], 0, 2);
	iface_init(&ifc[0], "eth1", 7);
	fill_reasons(&ifc[0], 10);
	ifc[0].sources = 262144;
	/* a full table that has turned over: 300000 taken, 37856 reclaimed
	 * (100 of them established sources idle past their time), most of it
	 * established; a budget of 600 a minute (10 per second) */
	ifc[0].new_sources = 300000;
	ifc[0].reclaimed = 37856;
	ifc[0].established_reclaimed = 100;
	ifc[0].established = 200000;
	ifc[0].probation = 62144;
	ifc[0].lock_gave_up = 2;
	ifc[0].refused = 4321;
	ifc[0].budget_rate = 600;
	ifc[0].budget_period = SLUICE_PERIOD_MIN;
	ifc[0].budget_burst = 50;
	/* prefix bans in two lists, and the check server's */
	ifc[0].ban_capacity = 1048576;
	ifc[0].escalated = 3;
	ifc[0].nban_lists = 2;
	snprintf(ifc[0].ban_lists[0].name, sizeof(ifc[0].ban_lists[0].name), "default");
	ifc[0].ban_lists[0].added = 12;
	ifc[0].ban_lists[0].dropped = (struct sluice_counter){ .packets = 99, .bytes = 5940 };
	snprintf(ifc[0].ban_lists[1].name, sizeof(ifc[0].ban_lists[1].name), "spamhaus-drop");
	ifc[0].ban_lists[1].loaded = 1000000;
	ifc[0].ban_lists[1].dropped = (struct sluice_counter){ .packets = 7, .bytes = 420 };
	ifc[0].rules = r0;
	ifc[0].nrules = ARRAY_LEN(r0);
	iface_init(&ifc[1], "eth2", 8);
	ifc[1].mode = "skb";
	ifc[1].multiprog = true;
	ifc[1].capacity = 1024;
	fill_reasons(&ifc[1], 0);
	ifc[1].rules = r1;
	ifc[1].nrules = ARRAY_LEN(r1);
	memset(&ifc[2], 0, sizeof(ifc[2]));
	snprintf(ifc[2].name, sizeof(ifc[2].name), "eth3");
	s = scrape_of(ifc, 3);
	s.skipped = 1;
	s.duration_s = 1.5;
	check_golden("two_ifaces", &s);
}

/* Rules on one CIDR told apart by their match (or as a request rule), and
 * every limit option: bytes, /m and /h, --per /LEN and rule, --ban,
 * --monitor, --requests. */
static void case_rules_with_matches(void)
{
	struct prom_rule rules[10];
	struct prom_iface ifc;
	struct prom_scrape s;

	rules[0] = rule_limit("default", 1000, 1000);
	rules[1] = rule_limit("0.0.0.0/0", 100000, 200000);
	rules[1].per = SLUICE_PER_RULE;
	rules[2] = rule_limit("0.0.0.0/0", 20, 40);	/* --proto udp --dport 53 */
	rules[2].match_flags = SLUICE_MATCH_PROTO | SLUICE_MATCH_PORT;
	rules[2].proto = IPPROTO_UDP;
	rules[2].dport_lo = rules[2].dport_hi = 53;
	rules[2].ban_ns = 2000 * MS;
	rules[3] = rule_limit("0.0.0.0/0", 600, 60);	/* --proto tcp --dport 1000-2000 --syn */
	rules[3].match_flags = SLUICE_MATCH_ALL;
	rules[3].proto = IPPROTO_TCP;
	rules[3].dport_lo = 1000;
	rules[3].dport_hi = 2000;
	rules[3].period = SLUICE_PERIOD_MIN;
	rules[3].monitor = true;
	rules[4] = rule_limit("0.0.0.0/0", 10, 10);	/* --proto icmp */
	rules[4].match_flags = SLUICE_MATCH_PROTO;
	rules[4].proto = IPPROTO_ICMP;
	rules[4].ban_ns = 250 * MS;
	rules[5] = rule_deny("0.0.0.0/0");		/* --proto 47 */
	rules[5].match_flags = SLUICE_MATCH_PROTO;
	rules[5].proto = 47;
	rules[6] = rule_limit("2001:2::/48", 1000000, 1500000);	/* --bytes, --per /64 */
	rules[6].unit = SLUICE_UNIT_BYTES;
	rules[6].per = SLUICE_PER_PREFIX;
	rules[6].per_len = 64;
	rules[6].ban_ns = 3600000 * MS + 1;
	rules[7] = rule_limit("2001:2::/48", 3600, 100);	/* --proto icmpv6, /h */
	rules[7].match_flags = SLUICE_MATCH_PROTO;
	rules[7].proto = IPPROTO_ICMPV6;
	rules[7].period = SLUICE_PERIOD_HOUR;
	rules[8] = rule_limit("198.18.0.0/15", 1, 10);	/* --per /24 */
	rules[8].per = SLUICE_PER_PREFIX;
	rules[8].per_len = 24;
	rules[9] = rule_limit("198.18.0.0/15", 10, 20);	/* --requests, --ban 1m */
	rules[9].unit = SLUICE_UNIT_REQUESTS;
	rules[9].ban_ns = 60000 * MS;
	for (unsigned int i = 0; i < ARRAY_LEN(rules); i++)
		counts(&rules[i], 100 * i, 10 * i);
	rules[3].c.monitor_packets = 250;	/* of its 300 passed, --monitor */
	rules[3].c.monitor_bytes = 60 * 250;
	iface_init(&ifc, "veth0", 42);
	fill_reasons(&ifc, 1);
	ifc.sources = 3;
	ifc.rules = rules;
	ifc.nrules = ARRAY_LEN(rules);
	s = scrape_of(&ifc, 1);
	check_golden("rules_with_matches", &s);
}

/* Backslash, double quote and newline in label values come out escaped. */
static void case_label_escaping(void)
{
	struct prom_rule rules[1] = { rule_limit("a\\b\"c\nd", 1, 1) };
	struct prom_iface ifc;
	struct prom_scrape s;

	iface_init(&ifc, "x\"q\\\n", 1);
	fill_reasons(&ifc, 0);
	ifc.rules = rules;
	ifc.nrules = 1;
	s = scrape_of(&ifc, 1);
	s.version = "1.0\"-\\rc";
	check_golden("label_escaping", &s);
}

/* The cluster agent's families: only for the interfaces where an agent
 * has run, after the datapath's. eth1's agent is up with Redis answering
 * and has not yet seen its peers (N is 1); eth2 never had one; eth3's is
 * in fallback and has stopped answering its heartbeat. */
static void case_cluster(void)
{
	struct prom_rule r[3] = { rule_allow("default"), rule_allow("default"),
				  rule_allow("default") };
	struct prom_iface ifc[3];
	struct prom_cluster *c;
	struct prom_scrape s;

	for (unsigned int i = 0; i < ARRAY_LEN(ifc); i++) {
		char name[8];

		snprintf(name, sizeof(name), "eth%u", i + 1);
		iface_init(&ifc[i], name, 10 + i);
		fill_reasons(&ifc[i], i);
		ifc[i].rules = &r[i];
		ifc[i].nrules = 1;
	}
	c = &ifc[0].cluster;
	c->present = true;
	c->alive = true;
	c->st.mode = SLUICE_CLUSTER_UP;
	c->st.syncs = 1200;
	c->st.sync_failures = 0;
	c->st.grants = 340;
	c->st.granted = 34000;
	c->st.leases = 17;
	c->st.redis_ops = 2400;
	c = &ifc[2].cluster;
	c->present = true;
	c->st.mode = SLUICE_CLUSTER_FALLBACK;
	c->st.peers = 3;
	c->st.syncs = 18446744073709551615ULL;
	c->st.sync_failures = 9;
	c->st.redis_ops = 1;
	c->fallback_s = 12.25;
	s = scrape_of(ifc, ARRAY_LEN(ifc));
	check_golden("cluster", &s);
}

/* A stream that cannot be written: prom_write says so. */
static void case_write_error(void)
{
	struct prom_scrape s = scrape_of(NULL, 0);
	FILE *f = fopen("/dev/null", "r");

	if (!f) {
		fail("cannot open /dev/null");
		return;
	}
	if (prom_write(f, &s) != -1)
		fail("prom_write to a read-only stream returned success");
	fclose(f);
}

static const struct test_case cases[] = {
	{ "empty", case_empty },
	{ "one_iface", case_one_iface },
	{ "two_ifaces", case_two_ifaces },
	{ "rules_with_matches", case_rules_with_matches },
	{ "label_escaping", case_label_escaping },
	{ "cluster", case_cluster },
	{ "write_error", case_write_error },
};

int main(int argc, char **argv)
{
	return run_cases("test_prom", cases, ARRAY_LEN(cases), argc, argv);
}
