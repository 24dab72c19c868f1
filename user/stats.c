// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* stats, top, query: reading counters and buckets of an attached interface. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "sluice.h"
#include "sluice/gcra.h"

#define TOP_DEFAULT 10
#define TOP_MAX 100000
#define WATCH_MAX 86400

static volatile sig_atomic_t stop_watch;

static void on_signal(int sig)
{
	(void)sig;
	stop_watch = 1;
}

static int open_picked(struct sluice_maps *m)
{
	char iface[IF_NAMESIZE];
	int err = pick_iface(iface, sizeof(iface));

	return err ? err : maps_open_ro(iface, m);
}

static void stats_json(const struct sluice_maps *m, const struct sluice_counter *c,
		       long sources)
{
	static const char *const units[] = { "packets", "bytes" };
	struct json j;

	json_begin(&j, stdout);
	json_obj_open(&j, NULL);
	json_str(&j, "interface", m->iface);
	for (int u = 0; u < 2; u++) {
		json_obj_open(&j, units[u]);
		for (int drop = 0; drop < 2; drop++) {
			json_obj_open(&j, drop ? "drop" : "pass");
			for (__u32 r = 0; r < SLUICE_R_MAX; r++)
				if (sluice_reason_is_drop(r) == drop)
					json_u64(&j, reason_name(r), u ? c[r].bytes : c[r].packets);
			json_obj_close(&j);
		}
		json_obj_close(&j);
	}
	json_u64(&j, "tracked_sources", sources > 0 ? (__u64)sources : 0);
	json_u64(&j, "capacity", map_capacity(m->src_buckets));
	json_obj_close(&j);
	json_end(&j);
}

static void stats_text(const struct sluice_maps *m, const struct sluice_counter *c,
		       const struct sluice_counter *prev, double secs, long sources)
{
	printf("%s: %ld sources tracked of %u\n", m->iface, sources,
	       map_capacity(m->src_buckets));
	printf("  %-6s %-14s %16s %18s%s\n", "ACTION", "REASON", "PACKETS", "BYTES",
	       prev ? "         PKTS/S" : "");
	for (int drop = 0; drop < 2; drop++)
		for (__u32 r = 0; r < SLUICE_R_MAX; r++) {
			if (sluice_reason_is_drop(r) != drop)
				continue;
			printf("  %-6s %-14s %16llu %18llu", drop ? "drop" : "pass",
			       reason_name(r), (unsigned long long)c[r].packets,
			       (unsigned long long)c[r].bytes);
			if (prev)
				printf(" %14.0f", (double)(c[r].packets - prev[r].packets) / secs);
			putchar('\n');
		}
	fflush(stdout);
}

static const char stats_usage[] = "stats [-j] [--watch SECONDS]";

int cmd_stats(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "watch", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sluice_counter c[SLUICE_R_MAX], prev[SLUICE_R_MAX];
	struct sluice_maps m;
	__u64 watch = 0, t0, t1;
	bool have_prev = false;
	int ch, err;

	optind = 0;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'w':
			if (!parse_u64(optarg, 1, WATCH_MAX, &watch))
				return usage_err("bad --watch '%s': give seconds, 1..%d", optarg,
						 WATCH_MAX);
			break;
		case 'h':
			printf("Usage: sluice %s\n", stats_usage);
			return 0;
		default:
			return getopt_err(ch, argv, stats_usage);
		}
	}
	if (optind < argc)
		return usage_err("unexpected argument '%s': usage: sluice %s", argv[optind],
				 stats_usage);
	err = open_picked(&m);
	if (err)
		return err;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	t0 = mono_now_ns();
	do {
		err = read_counters(&m, c);
		if (err)
			break;
		t1 = mono_now_ns();
		if (opts.json)
			stats_json(&m, c, count_sources(&m));
		else
			stats_text(&m, c, have_prev ? prev : NULL,
				   (double)(t1 - t0) / SLUICE_NS_PER_SEC, count_sources(&m));
		memcpy(prev, c, sizeof(c));
		have_prev = true;
		t0 = t1;
		if (watch && !stop_watch)
			sleep((unsigned int)watch);
	} while (watch && !stop_watch);
	maps_close(&m);
	return err;
}

struct top_row {
	struct sluice_src_key addr;
	struct sluice_bucket b;
};

static int top_cmp(const void *a, const void *b)
{
	const struct top_row *x = a, *y = b;

	if (x->b.dropped != y->b.dropped)
		return x->b.dropped < y->b.dropped ? 1 : -1;
	if (x->b.passed != y->b.passed)
		return x->b.passed < y->b.passed ? 1 : -1;
	return memcmp(&x->addr, &y->addr, sizeof(x->addr));
}

struct top_rows {
	struct top_row *rows;
	size_t n, cap;
};

static int add_row(const struct sluice_src_key *addr, const struct sluice_bucket *b, void *ctx)
{
	struct top_rows *t = ctx;

	if (t->n == t->cap)	/* the table grew under us: enough */
		return 1;
	t->rows[t->n].addr = *addr;
	t->rows[t->n].b = *b;
	t->n++;
	return 0;
}

/* Every bucket; *n rows in *out (caller frees). */
static int read_buckets(const struct sluice_maps *m, struct top_row **out, size_t *n)
{
	struct top_rows t = { .cap = map_capacity(m->src_buckets) };
	long r;

	t.rows = calloc(t.cap ? t.cap : 1, sizeof(*t.rows));
	if (!t.rows)
		return runtime_err("out of memory");
	r = walk_buckets(m->src_buckets, add_row, &t);
	if (r < 0) {
		free(t.rows);
		return runtime_err("cannot read the source table: %s", strerror((int)-r));
	}
	*out = t.rows;
	*n = t.n;
	return 0;
}

static void rule_label(const struct policy *p, const struct rule *r, char *buf, size_t len)
{
	if (r == &p->def)
		snprintf(buf, len, "default");
	else
		rule_cidr_str(r, buf, len);
}

/* The rule the datapath resolves src to in the live policy (longest prefix
 * of src's own family). */
static const struct rule *resolve_rule(const struct sluice_maps *m, const struct policy *p,
				       __u64 gen_slot, const struct sluice_src_key *src)
{
	struct sluice_lpm_key k = {
		.prefixlen = SLUICE_LPM_FULL_PREFIX,
		.slot = (__u8)SLUICE_GEN_SLOT(gen_slot),
		.family = src->family,
	};
	struct sluice_lpm_val v;

	memcpy(k.addr, src->a, sizeof(k.addr));
	if (bpf_map_lookup_elem(m->policy_lpm, &k, &v))
		return &p->def;
	for (unsigned int i = 0; i < p->n; i++)
		if (p->rules[i].index == v.m[0].policy)
			return &p->rules[i];
	return &p->def;
}

static int table_entry(const struct sluice_maps *m, __u32 slot, __u32 idx,
		       struct sluice_policy *out)
{
	__u32 key = slot * SLUICE_MAX_POLICIES + idx;

	return idx < SLUICE_MAX_POLICIES ? bpf_map_lookup_elem(m->policy_table, &key, out) : -1;
}

/* One source as the datapath sees it now: the live rule that judges it and
 * its TAT under that rule, re-bound the way the datapath re-binds a bucket
 * whose policy generation is old (tokens carried over, see gcra_rebind). */
struct src_view {
	const struct rule *rule;
	bool tracked;
	struct sluice_bucket b;
	__u64 tat;
};

static void view_source(const struct sluice_maps *m, const struct policy *p,
			const struct sluice_config *cfg, const struct sluice_src_key *src,
			const struct sluice_bucket *b, __u64 now, struct src_view *v)
{
	__u64 gen_slot = cfg->gen_slot, gen = SLUICE_GEN(gen_slot), old_gen, at = now;
	__u32 slot = SLUICE_GEN_SLOT(gen_slot), old_idx;
	struct sluice_policy nv, ov;
	bool old_known;

	memset(v, 0, sizeof(*v));
	v->rule = resolve_rule(m, p, gen_slot, src);
	if (!b)
		return;
	v->tracked = true;
	v->b = *b;
	v->tat = b->tat;
	old_gen = SLUICE_BOUND_GEN(b->bound);
	old_idx = SLUICE_BOUND_IDX(b->bound);
	if (old_gen == gen || table_entry(m, slot, v->rule->index, &nv))
		return;
	if ((v->rule->index == old_idx && nv.since <= old_gen) || nv.action != SLUICE_ACT_LIMIT)
		return;
	old_known = old_gen + 1 == gen && !table_entry(m, !slot, old_idx, &ov);
	if (old_known && gcra_now(cfg->active_since_ns[slot]) < at)
		at = gcra_now(cfg->active_since_ns[slot]);
	v->tat = gcra_rebind(b->tat, at, old_known, old_known ? ov.action : 0,
			     old_known ? ov.interval : 0, old_known ? ov.tolerance : 0,
			     nv.action, nv.interval, nv.tolerance);
}

static void live_config(const struct sluice_maps *m, struct sluice_config *cfg)
{
	__u32 zero = 0;

	if (bpf_map_lookup_elem(m->config, &zero, cfg))
		memset(cfg, 0, sizeof(*cfg));
}

static const char top_usage[] = "top [-n N] [-j]";

int cmd_top(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char addr[INET6_ADDRSTRLEN], label[64];
	struct top_row *rows = NULL;
	struct sluice_config cfg;
	struct src_view v;
	__u64 now;
	struct sluice_maps m;
	struct policy *p = NULL;
	__u64 limit = TOP_DEFAULT;
	size_t n = 0;
	struct json j;
	int ch, err;

	optind = 0;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":n:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'n':
			if (!parse_u64(optarg, 1, TOP_MAX, &limit))
				return usage_err("bad -n '%s': give a count, 1..%d", optarg, TOP_MAX);
			break;
		case 'h':
			printf("Usage: sluice %s\n  Sources with the most dropped packets first.\n",
			       top_usage);
			return 0;
		default:
			return getopt_err(ch, argv, top_usage);
		}
	}
	if (optind < argc)
		return usage_err("unexpected argument '%s': usage: sluice %s", argv[optind],
				 top_usage);
	err = open_policy(&m, &p, false);
	if (err)
		return err;
	err = read_buckets(&m, &rows, &n);
	if (err)
		goto out;
	if (n)
		qsort(rows, n, sizeof(*rows), top_cmp);
	if (n > limit)
		n = limit;
	live_config(&m, &cfg);
	now = gcra_now(mono_now_ns());
	if (opts.json) {
		json_begin(&j, stdout);
		json_arr_open(&j, NULL);
	} else {
		printf("%-39s %-24s %14s %14s\n", "SOURCE", "POLICY", "PASSED", "DROPPED");
	}
	for (size_t i = 0; i < n; i++) {
		format_source(&rows[i].addr, addr, sizeof(addr));
		/* Labelled by the live policy, whatever generation the bucket
		 * was last judged in. */
		view_source(&m, p, &cfg, &rows[i].addr, &rows[i].b, now, &v);
		rule_label(p, v.rule, label, sizeof(label));
		if (opts.json) {
			json_obj_open(&j, NULL);
			json_str(&j, "source", addr);
			json_str(&j, "policy", label);
			json_str(&j, "action", action_name(v.rule->action));
			json_u64(&j, "passed", rows[i].b.passed);
			json_u64(&j, "dropped", rows[i].b.dropped);
			json_obj_close(&j);
		} else {
			printf("%-39s %-24s %14llu %14llu\n", addr, label,
			       (unsigned long long)rows[i].b.passed,
			       (unsigned long long)rows[i].b.dropped);
		}
	}
	if (opts.json) {
		json_arr_close(&j);
		json_end(&j);
	}
out:
	free(rows);
	free(p);
	maps_close(&m);
	return err;
}

static const char query_usage[] = "query ADDR [-j]";

int cmd_query(int argc, char **argv)
{
	struct sluice_src_key addr;
	struct sluice_config cfg;
	struct sluice_bucket b;
	struct sluice_maps m;
	const struct rule *r;
	struct policy *p;
	struct src_view v;
	char label[64], text[INET6_ADDRSTRLEN];
	__u64 now, interval = 0, tolerance = 0, tokens = 0, wait = 0;
	bool tracked;
	const char *e;
	int err;

	if (argc == 2 && is_help(argv[1])) {
		printf("Usage: sluice %s\n  One source's policy, tokens left and retry-after.\n",
		       query_usage);
		return 0;
	}
	if (argc < 2)
		return usage_err("query needs an address: usage: sluice %s", query_usage);
	if (argc > 2)
		return usage_err("unexpected argument '%s': usage: sluice %s", argv[2], query_usage);
	e = parse_source(argv[1], &addr);
	if (e)
		return usage_err("bad address '%s': %s", argv[1], e);
	err = open_policy(&m, &p, false);
	if (err)
		return err;
	tracked = !bpf_map_lookup_elem(m.src_buckets, &addr, &b);
	live_config(&m, &cfg);
	now = gcra_now(mono_now_ns());
	view_source(&m, p, &cfg, &addr, tracked ? &b : NULL, now, &v);
	r = v.rule;
	b = v.b;
	if (r->action == SLUICE_ACT_LIMIT) {
		interval = gcra_interval(r->rate);
		tolerance = gcra_tolerance(r->rate, r->burst);
		tokens = gcra_tokens(v.tat, now, interval, tolerance);
		wait = gcra_units_to_ns(gcra_wait(v.tat, now, interval, tolerance));
	}
	rule_label(p, r, label, sizeof(label));
	format_source(&addr, text, sizeof(text));

	if (opts.json) {
		struct json j;

		json_begin(&j, stdout);
		json_obj_open(&j, NULL);
		json_str(&j, "interface", m.iface);
		json_str(&j, "address", text);
		json_bool(&j, "tracked", tracked);
		json_str(&j, "policy", label);
		json_str(&j, "action", action_name(r->action));
		json_u64(&j, "rate", r->rate);
		json_u64(&j, "burst", r->burst);
		if (r->action == SLUICE_ACT_LIMIT) {
			json_u64(&j, "tokens", tokens);
			json_double(&j, "retry_after_seconds", (double)wait / SLUICE_NS_PER_SEC);
			json_u64(&j, "retry_after_ns", wait);
		} else {
			json_null(&j, "tokens");
			json_null(&j, "retry_after_seconds");
			json_null(&j, "retry_after_ns");
		}
		json_u64(&j, "passed", b.passed);
		json_u64(&j, "dropped", b.dropped);
		json_obj_close(&j);
		json_end(&j);
	} else {
		printf("%s on %s: %s, policy %s", text, m.iface,
		       tracked ? "tracked" : "not tracked", label);
		if (r->action == SLUICE_ACT_LIMIT)
			printf(" (limit %llu/s burst %llu)\n  tokens left %llu, retry after %.3f s\n",
			       (unsigned long long)r->rate, (unsigned long long)r->burst,
			       (unsigned long long)tokens, (double)wait / SLUICE_NS_PER_SEC);
		else
			printf(" (%s)\n", r->action == SLUICE_ACT_ALLOW ? "not limited" : "denied");
		printf("  passed %llu, dropped %llu\n", (unsigned long long)b.passed,
		       (unsigned long long)b.dropped);
	}
	free(p);
	maps_close(&m);
	return 0;
}
