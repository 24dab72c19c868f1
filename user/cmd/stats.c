// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* stats, top, query: reading counters and buckets of an attached interface. */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "core.h"
#include "cli.h"
#include "rule.h"
#include "sluice/algo.h"

#define TOP_DEFAULT 10
#define TOP_MAX 100000
#define WATCH_MAX 86400

static volatile sig_atomic_t stop_watch;

static void on_signal(int sig)
{
	(void)sig;
	stop_watch = 1;
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
	json_u64(&j, "capacity", srctab_capacity(m));
	json_obj_close(&j);
	json_end(&j);
}

static void stats_text(const struct sluice_maps *m, const struct sluice_counter *c,
		       const struct sluice_counter *prev, double secs, long sources)
{
	printf("%s: %ld sources tracked of %u\n", m->iface, sources,
	       srctab_capacity(m));
	printf("  %-6s %-18s %12s %18s%s\n", "ACTION", "REASON", "PACKETS", "BYTES",
	       prev ? "         PKTS/S" : "");
	for (int drop = 0; drop < 2; drop++)
		for (__u32 r = 0; r < SLUICE_R_MAX; r++) {
			if (sluice_reason_is_drop(r) != drop)
				continue;
			printf("  %-6s %-18s %12llu %18llu", drop ? "drop" : "pass",
			       reason_name(r), (unsigned long long)c[r].packets,
			       (unsigned long long)c[r].bytes);
			if (prev)
				printf(" %14.0f", (double)(c[r].packets - prev[r].packets) / secs);
			putchar('\n');
		}
	fflush(stdout);
}

struct stats_options {
	__u64 watch;	/* seconds; 0: print once */
};

static const struct stats_options stats_defaults = { .watch = 0 };

static const struct cli_opt stats_opts[] = {
	CLI_U64("watch", 0, "SECONDS", "print again every SECONDS until interrupted",
		struct stats_options, watch, 1, WATCH_MAX, "seconds"),
	CLI_OPT_END,
};

static int stats_run(const struct cli_cmd *cmd, struct cli_args *a)
{
	struct sluice_counter c[SLUICE_R_MAX], prev[SLUICE_R_MAX];
	struct sluice_maps m;
	__u64 watch = CLI_OPTIONS(a, struct stats_options)->watch, t0, t1;
	bool have_prev = false;
	int err;

	(void)cmd;
	err = maps_open_picked(&m, false);
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

/* Dropped and would-drop packets together: whom a rule hits, or would. */
static __u64 hits(const struct sluice_bucket *b)
{
	return (__u64)b->dropped + b->would_drop;
}

static int top_cmp(const void *a, const void *b)
{
	const struct bucket_row *x = a, *y = b;

	if (hits(&x->b) != hits(&y->b))
		return hits(&x->b) < hits(&y->b) ? 1 : -1;
	if (x->b.passed != y->b.passed)
		return x->b.passed < y->b.passed ? 1 : -1;
	return memcmp(&x->key, &y->key, sizeof(x->key));
}

/* The best rows of a walk by top_cmp, at most cap of them, kept as a heap
 * whose root is the last of them: a table of millions costs its walk, not
 * a copy and a sort of all of its rows. */
struct top_keep {
	struct bucket_row *rows;
	size_t n, cap;
};

static void top_swap(struct bucket_row *a, struct bucket_row *b)
{
	struct bucket_row t = *a;

	*a = *b;
	*b = t;
}

static void top_sift_down(struct top_keep *k, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, last = i;

		if (l < k->n && top_cmp(&k->rows[l], &k->rows[last]) > 0)
			last = l;
		if (r < k->n && top_cmp(&k->rows[r], &k->rows[last]) > 0)
			last = r;
		if (last == i)
			return;
		top_swap(&k->rows[i], &k->rows[last]);
		i = last;
	}
}

static int top_keep_row(const struct sluice_src_key *key, const struct sluice_bucket *b,
			void *ctx)
{
	struct top_keep *k = ctx;
	struct bucket_row row = { .key = *key, .b = *b };
	size_t i;

	if (k->n < k->cap) {
		i = k->n++;
		k->rows[i] = row;
		while (i && top_cmp(&k->rows[i], &k->rows[(i - 1) / 2]) > 0) {
			top_swap(&k->rows[i], &k->rows[(i - 1) / 2]);
			i = (i - 1) / 2;
		}
	} else if (k->cap && top_cmp(&row, &k->rows[0]) < 0) {
		k->rows[0] = row;
		top_sift_down(k, 0);
	}
	return 0;
}

/* The trie entry covering src in the live slot; false when none does. */
static bool lpm_entry(const struct sluice_maps *m, __u64 gen_slot,
		      const struct sluice_src_key *src, struct sluice_lpm_val *v)
{
	struct sluice_lpm_key k = {
		.prefixlen = SLUICE_LPM_FULL_PREFIX,
		.slot = (__u8)SLUICE_GEN_SLOT(gen_slot),
		.family = src->family,
	};

	memcpy(k.addr, src->a, sizeof(k.addr));
	return !bpf_map_lookup_elem(m->policy_lpm, &k, v) && v->n <= SLUICE_MATCH_MAX;
}

/* The rule the datapath resolves src to in the live policy for a packet
 * that no rule's match fits: the first candidate without a match, else
 * the default. */
static const struct rule *resolve_rule(const struct sluice_maps *m, const struct policy *p,
				       __u64 gen_slot, const struct sluice_src_key *src)
{
	struct sluice_lpm_val v;
	const struct rule *r;

	if (!lpm_entry(m, gen_slot, src, &v))
		return &p->def;
	for (__u32 i = 0; i < v.n; i++)
		if (!v.m[i].flags) {
			r = rule_by_index(p, v.m[i].policy);
			return r ? r : &p->def;
		}
	return &p->def;
}

/* The rule a bucket is judged by now: a keyed bucket's own, a home
 * bucket's by its source (the live resolution, whatever it was bound to). */
static const struct rule *bucket_rule(const struct sluice_maps *m, const struct policy *p,
				      __u64 gen_slot, const struct sluice_src_key *key)
{
	const struct rule *r;

	if (key->policy != SLUICE_KEY_HOME) {
		r = rule_by_index(p, key->policy);
		if (r)
			return r;
	}
	return resolve_rule(m, p, gen_slot, key);
}

/* One source as the datapath sees it now: the live rule that judges it and
 * its state word under that rule, re-bound the way the datapath re-binds a
 * bucket whose policy generation is old (see limit_rebind). */
struct src_view {
	const struct rule *rule;
	bool tracked;
	struct sluice_bucket b;
	__u64 tat;
};

/* When the limit of active-slot entry sp last changed (CLOCK_MONOTONIC ns). */
static __u64 entry_changed(const struct sluice_config *cfg, const struct sluice_policy *sp)
{
	return sp->since == SLUICE_GEN(cfg->gen_slot) ?
	       cfg->active_since_ns[SLUICE_GEN_SLOT(cfg->gen_slot)] : sp->since_ns;
}

static void view_source(const struct sluice_maps *m, const struct rule *rule,
			const struct sluice_config *cfg, const struct sluice_bucket *b, __u64 now,
			struct src_view *v)
{
	__u64 gen_slot = cfg->gen_slot, gen = SLUICE_GEN(gen_slot), old_gen, at = now, changed;
	__u32 slot = SLUICE_GEN_SLOT(gen_slot), old_idx;
	struct sluice_limit nl, ol = { 0 };
	struct sluice_policy nv, ov;
	bool old_known;

	memset(v, 0, sizeof(*v));
	v->rule = rule;
	if (!b)
		return;
	v->tracked = true;
	v->b = *b;
	v->tat = b->tat;
	old_gen = SLUICE_BOUND_GEN_FULL(b->bound, gen);
	old_idx = SLUICE_BOUND_IDX(b->bound);
	if (old_gen == gen || policy_entry(m, slot, v->rule->index, &nv))
		return;
	if ((v->rule->index == old_idx && nv.since <= old_gen) || nv.action != SLUICE_ACT_LIMIT)
		return;
	/* As the datapath's rebind: as of the rule's last change, from the
	 * limit before it; on a move to another rule, from the old rule's
	 * entry in the previous generation or unchanged since. */
	changed = entry_changed(cfg, &nv);
	if (v->rule->index == old_idx) {
		old_known = nv.prev_since <= old_gen;
		ov.action = nv.prev_action;
		ol.interval = nv.prev_interval;
		ol.tolerance = nv.prev_tolerance;
		ol.ban = nv.prev_ban;
		ol.ban_windows = nv.prev_ban_windows;
		ol.algo = nv.prev_algo;
		ol.bits = nv.prev_bits;
	} else {
		/* An entry no policy uses is not known (its zero action is
		 * no allow). */
		old_known = old_gen + 1 == gen && !policy_entry(m, !slot, old_idx, &ov) &&
			    ov.in_use;
		if (!old_known && !policy_entry(m, slot, old_idx, &ov)) {
			old_known = ov.since <= old_gen && ov.in_use;
			if (entry_changed(cfg, &ov) > changed)
				changed = entry_changed(cfg, &ov);
		}
		if (old_known) {
			changed = cfg->active_since_ns[slot];
			limit_of(&ov, &ol);
		}
	}
	if (changed < at)
		at = changed;
	limit_of(&nv, &nl);
	v->tat = limit_rebind(b->tat, at, old_known, old_known ? ov.action : 0, &ol, nv.action,
			      &nl);
}

struct top_options {
	__u64 n;	/* how many sources */
};

static const struct top_options top_defaults = { .n = TOP_DEFAULT };

static const struct cli_opt top_opts[] = {
	CLI_U64(NULL, 'n', "N", "how many sources", struct top_options, n, 1, TOP_MAX,
		"sources"),
	CLI_OPT_END,
};

/* A source's packets as they went: under a --monitor rule the bucket's
 * dropped are would-drops, which passed. */
struct src_counts {
	__u64 passed, dropped, would_drop;
};

/* A bucket's counts as shown: its would-drops passed, so they count in
 * passed too. Each packet keeps the label of the mode it was judged in,
 * whatever the rule's mode now. */
static void split_counts(const struct sluice_bucket *b, struct src_counts *c)
{
	c->passed = (__u64)b->passed + b->would_drop;
	c->dropped = b->dropped;
	c->would_drop = b->would_drop;
}

static int top_run(const struct cli_cmd *cmd, struct cli_args *a)
{
	struct src_counts c;
	char addr[SLUICE_CIDR_STR_MAX], label[RULE_TEXT_MAX];
	struct bucket_row *rows = NULL;
	struct sluice_config cfg;
	struct src_view v;
	__u64 now;
	struct sluice_maps m;
	struct policy *p = NULL;
	__u64 limit = CLI_OPTIONS(a, struct top_options)->n;
	struct top_keep keep = { .cap = (size_t)limit };
	size_t n = 0;
	struct json j;
	long walked;
	int err;

	(void)cmd;
	err = open_policy(&m, &p, false);
	if (err)
		return err;
	rows = keep.rows = calloc(keep.cap ? keep.cap : 1, sizeof(*rows));
	if (!rows) {
		err = runtime_err("out of memory");
		goto out;
	}
	walked = walk_buckets(&m, top_keep_row, &keep);
	if (walked < 0) {
		err = runtime_err("cannot read the source table: %s", strerror((int)-walked));
		goto out;
	}
	n = keep.n;
	if (n)
		qsort(rows, n, sizeof(*rows), top_cmp);
	live_config(&m, &cfg);
	now = mono_now_ns();
	if (opts.json) {
		json_begin(&j, stdout);
		json_arr_open(&j, NULL);
	} else {
		printf("%-43s %-24s %14s %14s %14s\n", "SOURCE", "POLICY", "PASSED", "DROPPED",
		       "WOULD DROP");
	}
	for (size_t i = 0; i < n; i++) {
		format_source(&rows[i].key, addr, sizeof(addr));
		/* Labelled by the live policy, whatever generation the bucket
		 * was last judged in. */
		view_source(&m, bucket_rule(&m, p, cfg.gen_slot, &rows[i].key), &cfg, &rows[i].b,
			    now, &v);
		policy_rule_label(p, v.rule, label, sizeof(label));
		split_counts(&rows[i].b, &c);
		if (opts.json) {
			json_obj_open(&j, NULL);
			json_str(&j, "source", addr);
			json_str(&j, "policy", label);
			json_str(&j, "action", action_name(v.rule->action));
			json_u64(&j, "passed", c.passed);
			json_u64(&j, "dropped", c.dropped);
			json_u64(&j, "would_drop", c.would_drop);
			json_bool(&j, "monitor", v.rule->monitor);
			json_obj_close(&j);
		} else {
			char would[24] = "-";

			if (v.rule->monitor || c.would_drop)
				snprintf(would, sizeof(would), "%llu", (unsigned long long)c.would_drop);
			printf("%-43s %-24s %14llu %14llu %14s\n", addr, label,
			       (unsigned long long)c.passed, (unsigned long long)c.dropped, would);
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

const struct cli_cmd top_cmd = {
	.name = "top", .path = "top", .json = true, .opts = top_opts, .run = top_run,
	CLI_DEFAULTS(top_defaults),
	.help = "Sources (and keyed prefixes) with the most dropped packets first.",
};

/* The bucket that holds src's state under rule r (index idx, table entry
 * sp): its home bucket, or a keyed one. Returns whether it exists. */
static bool find_bucket(const struct sluice_maps *m, const struct sluice_src_key *src,
			const struct sluice_policy *sp, __u32 idx, struct sluice_src_key *key,
			struct sluice_bucket *b)
{
	*key = *src;
	if (sp->key_len >= SLUICE_KEY_LEN_SOURCE && !bucket_lookup(m, key, b))
		return true;
	source_key_mask(src, sp->key_len, (__u16)idx, key);
	if (!bucket_lookup(m, key, b))
		return true;
	if (sp->key_len >= SLUICE_KEY_LEN_SOURCE)
		*key = *src;
	return false;
}

/* What query says about a limited source's state, whatever its algorithm. */
struct state_view {
	__u64 available;	/* tokens, or what is left of the window's budget */
	__u64 wait;		/* ns until one more unit is admitted */
	__u64 ban_left;		/* ns */
	__u64 win_start;	/* windows: CLOCK_MONOTONIC ns of the window's start */
	__u64 win_elapsed;	/* ns into it */
	__u64 count;		/* units it has admitted */
	__u64 prev;		/* sliding-window: the previous window's count */
	__u64 estimate;		/* sliding-window: the blended count */
};

static void view_state(const struct sluice_policy *sp, __u64 st, __u64 now, struct state_view *s)
{
	struct sluice_limit l;
	__u64 w;

	memset(s, 0, sizeof(*s));
	limit_of(sp, &l);
	s->available = limit_available(&l, st, now);
	s->wait = limit_wait(&l, st, now, 1);
	s->ban_left = limit_ban_left(&l, st, now);
	if (l.algo == SLUICE_ALGO_TOKEN_BUCKET || !l.interval)
		return;
	w = win_index(now, l.interval);
	s->win_start = w * l.interval;
	s->win_elapsed = now - s->win_start;
	if (l.algo == SLUICE_ALGO_FIXED_WINDOW) {
		s->count = fw_count(st, now, l.interval, l.tolerance);
		return;
	}
	sw_counts(st, w, l.bits, &s->prev, &s->count);
	s->estimate = sw_estimate(st, now, l.interval, l.bits, l.ban_windows);
	if (s->ban_left) {
		s->count = l.tolerance;
		s->estimate = l.tolerance;
	}
}

/* The live rule bans that hold the queried source (ban list's, of its
 * buckets under every rule). */
struct query_bans {
	struct source_ban *b;
	size_t n;
};

static void ban_label(const struct policy *p, const struct source_ban *b, char *label,
		      size_t len)
{
	if (b->rule)
		policy_rule_label(p, b->rule, label, len);
	else
		snprintf(label, len, "(a rule since deleted)");
}

static void query_bans_json(struct json *j, const struct policy *p, const struct query_bans *qb)
{
	char label[RULE_TEXT_MAX], key[SLUICE_CIDR_STR_MAX];

	json_arr_open(j, "bans");
	for (size_t i = 0; i < qb->n; i++) {
		ban_label(p, &qb->b[i], label, sizeof(label));
		format_source(&qb->b[i].key, key, sizeof(key));
		json_obj_open(j, NULL);
		json_str(j, "policy", label);
		json_str(j, "kind", qb->b[i].escalated ? "escalated" : "rule");
		json_str(j, "bucket", key);
		json_u64(j, "left_ms", (qb->b[i].left_ns + 999999) / 1000000);
		json_double(j, "left_seconds", (double)qb->b[i].left_ns / SLUICE_NS_PER_SEC);
		json_obj_close(j);
	}
	json_arr_close(j);
}

static void query_json(const struct sluice_maps *m, const char *text, const char *bucket,
		       const struct policy *p, const struct src_view *v, const char *label,
		       const struct sluice_lpm_val *cands, const struct state_view *s,
		       const struct query_bans *qb)
{
	const struct rule *r = v->rule;
	__u64 tokens = s->available, wait = s->wait, ban_left = s->ban_left;
	char cl[RULE_TEXT_MAX];
	struct src_counts c;
	struct json j;

	json_begin(&j, stdout);
	json_obj_open(&j, NULL);
	json_str(&j, "interface", m->iface);
	json_str(&j, "address", text);
	json_bool(&j, "tracked", v->tracked);
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
	split_counts(&v->b, &c);
	json_u64(&j, "passed", c.passed);
	json_u64(&j, "dropped", c.dropped);
	json_u64(&j, "would_drop", c.would_drop);
	rule_json_fields(&j, r, r == &p->def);
	if (r->action == SLUICE_ACT_LIMIT && r->algo != SLUICE_ALGO_TOKEN_BUCKET) {
		json_obj_open(&j, "window");
		json_u64(&j, "start_ns", s->win_start);
		json_u64(&j, "elapsed_ns", s->win_elapsed);
		json_u64(&j, "budget", r->burst);
		json_u64(&j, "count", s->count);
		if (r->algo == SLUICE_ALGO_SLIDING_WINDOW) {
			json_u64(&j, "previous", s->prev);
			json_u64(&j, "estimate", s->estimate);
		}
		json_obj_close(&j);
	} else {
		json_null(&j, "window");
	}
	json_str(&j, "bucket", bucket);
	/* Banned by any rule; the longest ban's time left. */
	if (qb->n && qb->b[0].left_ns > ban_left)
		ban_left = qb->b[0].left_ns;
	json_bool(&j, "banned", ban_left != 0);
	json_u64(&j, "ban_left_ms", (ban_left + 999999) / 1000000);
	query_bans_json(&j, p, qb);
	/* Rules with a match that decide this source's packets they fit,
	 * before the policy above. */
	json_arr_open(&j, "match_rules");
	for (__u32 i = 0; cands && i < cands->n && cands->m[i].flags; i++) {
		const struct rule *c = rule_by_index(p, cands->m[i].policy);

		if (!c)
			continue;
		policy_rule_label(p, c, cl, sizeof(cl));
		json_str(&j, NULL, cl);
	}
	json_arr_close(&j);
	json_obj_close(&j);
	json_end(&j);
}

/* query's text: where the source stands under its rule, then its counts. */
static void query_text(const struct sluice_maps *m, const char *text, const char *bucket,
		       const struct policy *p, const struct rule *r, const struct src_view *v,
		       char *label, const struct sluice_lpm_val *cands,
		       const struct state_view *sv, const struct query_bans *qb)
{
	char key[SLUICE_CIDR_STR_MAX];
	struct state_view st = *sv;
	struct src_counts c;
	bool tracked = v->tracked;
	bool have_cands = cands != NULL;
	char words[RULE_TEXT_MAX];

	printf("%s on %s: %s, policy %s", text, m->iface,
	       tracked ? "tracked" : "not tracked", label);
	if (r->action == SLUICE_ACT_LIMIT) {
		rule_format(r, r == &p->def, words, sizeof(words));
		printf(" (%s)\n  bucket %s: %s left %llu, retry after %.3f s\n", words,
		       bucket, r->algo != SLUICE_ALGO_TOKEN_BUCKET ? unit_name(r->unit) :
		       r->unit == SLUICE_UNIT_BYTES ? "bytes" : "tokens",
		       (unsigned long long)st.available, (double)st.wait / SLUICE_NS_PER_SEC);
		if (r->algo == SLUICE_ALGO_FIXED_WINDOW)
			printf("  window %.3f s in (started at %.3f s): %llu of %llu\n",
			       (double)st.win_elapsed / SLUICE_NS_PER_SEC,
			       (double)st.win_start / SLUICE_NS_PER_SEC,
			       (unsigned long long)st.count, (unsigned long long)r->burst);
		else if (r->algo == SLUICE_ALGO_SLIDING_WINDOW)
			printf("  window %.3f s in (started at %.3f s): %llu, previous %llu, "
			       "estimate %llu of %llu\n",
			       (double)st.win_elapsed / SLUICE_NS_PER_SEC,
			       (double)st.win_start / SLUICE_NS_PER_SEC,
			       (unsigned long long)st.count, (unsigned long long)st.prev,
			       (unsigned long long)st.estimate, (unsigned long long)r->burst);
		if (st.ban_left)
			printf("  banned for %.3f s more\n", (double)st.ban_left / SLUICE_NS_PER_SEC);
	} else {
		printf(" (%s)\n", r->action == SLUICE_ACT_ALLOW ? "not limited" : "denied");
	}
	for (__u32 i = 0; have_cands && i < cands->n && cands->m[i].flags; i++) {
		const struct rule *c = rule_by_index(p, cands->m[i].policy);

		if (!c)
			continue;
		policy_rule_label(p, c, label, RULE_TEXT_MAX);
		printf("  packets fitting %s go to that rule first\n", label);
	}
	/* Bans of other rules' buckets (the one above is shown already). */
	for (size_t i = 0; i < qb->n; i++) {
		format_source(&qb->b[i].key, key, sizeof(key));
		if (qb->b[i].rule == r && !qb->b[i].escalated && !strcmp(key, bucket) && st.ban_left)
			continue;
		ban_label(p, &qb->b[i], label, RULE_TEXT_MAX);
		printf("  banned by %s%s (bucket %s) for %.3f s more\n", label,
		       qb->b[i].escalated ? ", escalated" : "", key,
		       (double)qb->b[i].left_ns / SLUICE_NS_PER_SEC);
	}
	split_counts(&v->b, &c);
	if (r->monitor && !c.dropped)
		printf("  passed %llu, would drop %llu (monitor)\n",
		       (unsigned long long)c.passed, (unsigned long long)c.would_drop);
	else if (c.would_drop)
		printf("  passed %llu, dropped %llu, would drop %llu (while monitored)\n",
		       (unsigned long long)c.passed, (unsigned long long)c.dropped,
		       (unsigned long long)c.would_drop);
	else
		printf("  passed %llu, dropped %llu\n", (unsigned long long)c.passed,
		       (unsigned long long)c.dropped);
}

static int query_run(const struct cli_cmd *cmd, struct cli_args *a)
{
	struct sluice_src_key addr, key;
	struct sluice_lpm_val cands;
	struct sluice_config cfg;
	struct sluice_policy sp;
	struct sluice_bucket b;
	struct sluice_maps m;
	const struct rule *r;
	struct policy *p;
	struct src_view v;
	char label[RULE_TEXT_MAX], text[SLUICE_CIDR_STR_MAX], bucket[SLUICE_CIDR_STR_MAX];
	struct state_view st = { 0 };
	struct query_bans qb = { 0 };
	bool tracked, have_cands;
	__u64 now;
	const char *e;
	int err;

	(void)cmd;
	e = parse_source(a->pos[0], &addr);
	if (e)
		return usage_err("bad address '%s': %s", a->pos[0], e);
	err = open_policy(&m, &p, false);
	if (err)
		return err;
	live_config(&m, &cfg);
	r = resolve_rule(&m, p, cfg.gen_slot, &addr);
	have_cands = lpm_entry(&m, cfg.gen_slot, &addr, &cands);
	if (policy_entry(&m, SLUICE_GEN_SLOT(cfg.gen_slot), r->index, &sp)) {
		memset(&sp, 0, sizeof(sp));
		sp.key_len = SLUICE_KEY_LEN_SOURCE;
	}
	tracked = find_bucket(&m, &addr, &sp, r->index, &key, &b);
	now = policy_now_ns(&sp);
	view_source(&m, r, &cfg, tracked ? &b : NULL, now, &v);
	if (r->action == SLUICE_ACT_LIMIT)
		view_state(&sp, v.tat, now, &st);
	policy_rule_label(p, r, label, sizeof(label));
	format_source(&addr, text, sizeof(text));
	format_source(&key, bucket, sizeof(bucket));
	err = source_bans(&m, p, &addr, &qb.b, &qb.n);
	if (err)
		goto out;
	if (opts.json)
		query_json(&m, text, bucket, p, &v, label, have_cands ? &cands : NULL, &st, &qb);
	else
		query_text(&m, text, bucket, p, r, &v, label, have_cands ? &cands : NULL, &st, &qb);
out:
	free(qb.b);
	free(p);
	maps_close(&m);
	return err;
}

const struct cli_cmd query_cmd = {
	.name = "query", .path = "query", .args = "ADDR", .min_pos = 1, .max_pos = 1,
	.json = true, .run = query_run,
	.help = "One source: the rule that decides it, its bucket's tokens left, retry-after\n"
		"and ban; rules with a match that its packets may fit first; every live ban of\n"
		"a --ban rule or a request rule that holds it.",
};

const struct cli_cmd stats_cmd = {
	.name = "stats", .path = "stats", .json = true, .opts = stats_opts, .run = stats_run,
	CLI_DEFAULTS(stats_defaults),
	.help = "Packets and bytes passed and dropped, by reason, and the sources tracked.",
};
