// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* ban list, ban del: the live bans of --ban rules. A packet rule's ban is
 * kept in a bucket's state word (a token bucket's TAT more than its
 * tolerance ahead of now, a window's count past the window: see algo.h),
 * so these walk the source table and judge each bucket by the live policy.
 * A request rule's ban (the check server's escalation) is an entry of the
 * ban table, written here by ban_put. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "sluice.h"
#include "sluice/algo.h"
#include "cli.h"
#include "rule.h"

/* A banned bucket, or an entry of the ban table (escalated): its rule and
 * how long the ban has left. */
struct ban {
	struct bucket_row row;		/* an escalated ban's key, and no bucket */
	const struct rule *rule;
	struct sluice_limit lim;	/* of its rule in the live slot */
	__u64 left_ns;
	bool escalated;
};

/* The ban table's entries in batches. */
#define BAN_BATCH	256

int ban_writer_open(const struct sluice_maps *m, struct ban_writer *w)
{
	w->len = (size_t)sysconf(_SC_PAGESIZE);
	/* Close-on-exec as every descriptor here: nothing the server runs
	 * inherits a writable ban table. */
	w->fd = fcntl(m->bans, F_DUPFD_CLOEXEC, 0);
	if (w->fd < 0)
		return runtime_err("cannot use the ban table of %s: %s", m->iface, strerror(errno));
	w->state = map_mmap(m->ban_state, w->len);
	if (w->state == MAP_FAILED) {
		close(w->fd);
		w->fd = -1;
		w->state = NULL;
		return runtime_err("cannot map the ban state of %s: %s", m->iface,
				   strerror(errno));
	}
	return 0;
}

void ban_writer_close(struct ban_writer *w)
{
	if (w->fd >= 0)
		close(w->fd);
	if (w->state && w->state != MAP_FAILED)
		munmap(w->state, w->len);
	w->fd = -1;
	w->state = NULL;
}

/* The entry first, then the word: a sweeper that read the word before this
 * CAS cannot clear it (its CAS fails), and one that read it after finds
 * the entry. */
int ban_put(struct ban_writer *w, const struct sluice_src_key *src, __u32 idx, __u64 until_ns)
{
	struct sluice_ban v = { .until_ns = until_ns, .policy = idx };
	__u64 *word = &w->state->bans, old;

	if (map_update(w->fd, src, &v, BPF_ANY))
		return -errno;
	old = __atomic_load_n(word, __ATOMIC_ACQUIRE);
	while (!__atomic_compare_exchange_n(word, &old, (old + SLUICE_BANS_WRITE) | SLUICE_BANS_LIVE,
					    false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		;
	return 0;
}

/* Calls fn for each entry of the ban table fd, read in batches, until fn
 * returns non-zero: 0, fn's value, or -errno. */
typedef int (*ban_fn)(const struct sluice_src_key *key, const struct sluice_ban *v, void *ctx);
static int ban_walk(int fd, ban_fn fn, void *ctx)
{
	struct sluice_src_key keys[BAN_BATCH], next, *cursor = NULL;
	struct sluice_ban vals[BAN_BATCH];
	__u32 n;
	int err, r;

	do {
		n = BAN_BATCH;
		err = bpf_map_lookup_batch(fd, cursor, &next, keys, vals, &n, NULL);
		if (err && errno != ENOENT)
			return -errno;
		for (__u32 i = 0; i < n; i++) {
			r = fn(&keys[i], &vals[i], ctx);
			if (r)
				return r;
		}
		cursor = &next;
	} while (!err);
	return 0;
}

struct sweep {
	int fd;
	__u64 now;
	int live;
};

/* An entry read as expired may have been written again since (a check
 * server thread banning the same source anew), and a delete by key would
 * remove that fresh ban. So the entry is taken out with the value it holds
 * at that moment, one atomic step (lookup-and-delete, under the same bucket
 * lock as a writer's update), and a value that is not expired is put back:
 * unless a writer has written the key again meanwhile (BPF_NOEXIST fails),
 * and then the writer's entry, newer still, stands. A ban is missing from
 * the table only between the two calls, never lost. */
static int sweep_one(const struct sluice_src_key *key, const struct sluice_ban *v, void *ctx)
{
	struct sweep *sw = ctx;
	struct sluice_ban got;

	if (v->until_ns > sw->now) {
		sw->live++;
		return 0;
	}
	if (ban_sweep_window)
		ban_sweep_window(key);
	if (map_take(sw->fd, key, &got))
		return errno == ENOENT ? 0 : -errno;
	if (got.until_ns <= sw->now)
		return 0;
	sw->live++;
	if (map_update(sw->fd, key, &got, BPF_NOEXIST) && errno != EEXIST)
		return -errno;
	return 0;
}

int ban_sweep(struct ban_writer *w)
{
	__u64 *word = &w->state->bans, seen = __atomic_load_n(word, __ATOMIC_ACQUIRE);
	struct sweep sw = { .fd = w->fd, .now = mono_now_ns() };
	int err = ban_walk(w->fd, sweep_one, &sw);

	if (err)
		return err;
	if (!sw.live && (seen & SLUICE_BANS_LIVE))
		__atomic_compare_exchange_n(word, &seen, seen & ~SLUICE_BANS_LIVE, false,
					    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	return sw.live;
}

/* The live entries of the ban table, appended to a growing array. */
struct escalated {
	const struct policy *p;
	struct ban **bans;
	size_t *nb, *cap;
	__u64 now;
};

static int add_escalated(const struct sluice_src_key *key, const struct sluice_ban *v, void *ctx)
{
	struct escalated *e = ctx;
	struct ban *grown, *b;

	if (v->until_ns <= e->now)
		return 0;
	if (*e->nb == *e->cap) {
		grown = realloc(*e->bans, (*e->cap * 2 + 16) * sizeof(**e->bans));
		if (!grown)
			return -ENOMEM;
		*e->bans = grown;
		*e->cap = *e->cap * 2 + 16;
	}
	b = &(*e->bans)[(*e->nb)++];
	memset(b, 0, sizeof(*b));
	b->row.key = *key;
	b->rule = rule_by_index(e->p, v->policy);
	b->left_ns = v->until_ns - e->now;
	b->escalated = true;
	return 0;
}

static int read_escalated(const struct sluice_maps *m, const struct policy *p, struct ban **bans,
			  size_t *nb, size_t *cap)
{
	struct escalated e = { .p = p, .bans = bans, .nb = nb, .cap = cap, .now = mono_now_ns() };
	int err = ban_walk(m->bans, add_escalated, &e);

	if (err)
		return runtime_err("cannot read the ban table: %s", strerror(-err));
	return 0;
}

/* The live limit of a bucket's rule; false when it does not limit. A
 * bucket's rule is its bound index; the active slot's entry says how to
 * read its state. */
static bool bucket_limit(const struct sluice_maps *m, __u32 slot,
			 const struct sluice_bucket *b, struct sluice_limit *l)
{
	struct sluice_policy sp;

	if (policy_entry(m, slot, SLUICE_BOUND_IDX(b->bound), &sp) || !sp.in_use ||
	    sp.action != SLUICE_ACT_LIMIT)
		return false;
	limit_of(&sp, l);
	return true;
}

/* Every banned bucket now, longest ban first. */
static int read_bans(const struct sluice_maps *m, const struct policy *p, struct ban **out,
		     size_t *n)
{
	struct bucket_row *rows;
	struct sluice_config cfg;
	size_t nrows, nb = 0, cap;
	struct ban *bans;
	__u64 now;
	int err;

	err = read_buckets(m, &rows, &nrows);
	if (err)
		return err;
	bans = calloc(nrows ? nrows : 1, sizeof(*bans));
	if (!bans) {
		free(rows);
		return runtime_err("out of memory");
	}
	live_config(m, &cfg);
	now = mono_now_ns();
	for (size_t i = 0; i < nrows; i++) {
		const struct sluice_bucket *b = &rows[i].b;
		struct sluice_limit l;
		__u64 left;

		if (!bucket_limit(m, SLUICE_GEN_SLOT(cfg.gen_slot), b, &l))
			continue;
		left = limit_ban_left(&l, b->tat, now);
		if (!left)
			continue;
		bans[nb].row = rows[i];
		bans[nb].rule = rule_by_index(p, SLUICE_BOUND_IDX(b->bound));
		bans[nb].lim = l;
		bans[nb].left_ns = left;
		nb++;
	}
	free(rows);
	cap = nrows ? nrows : 1;
	err = read_escalated(m, p, &bans, &nb, &cap);
	if (err) {
		free(bans);
		return err;
	}
	*out = bans;
	*n = nb;
	return 0;
}

static int ban_cmp(const void *a, const void *b)
{
	const struct ban *x = a, *y = b;

	if (x->left_ns != y->left_ns)
		return x->left_ns < y->left_ns ? 1 : -1;
	return memcmp(&x->row.key, &y->row.key, sizeof(x->row.key));
}

struct ban_list_options {
	const char *list;
};
static const struct ban_list_options ban_list_defaults = { 0 };
static const struct cli_opt ban_list_opts[] = {
	CLI_STR("list", 0, "NAME", "only the prefix bans of list NAME", struct ban_list_options,
		list),
	CLI_OPT_END,
};

/* A reader of the pins' group reads the lists' sizes (ban_lists) but not
 * the prefix trie: its fd is got by id, which needs CAP_SYS_ADMIN. With no
 * prefix held (in list name, or in any) nothing is lost; otherwise an
 * error that says what cannot be read, never an empty list. 0 or the exit
 * status. */
static int prefixes_unreadable(const struct bantab *t, const char *name, const char *iface)
{
	char held[200] = "";
	__u64 total = 0, n;

	for (__u32 i = 0; i < SLUICE_BAN_LISTS; i++) {
		if (!t->lists[i].name[0] || (name && strcmp(t->lists[i].name, name) != 0))
			continue;
		n = bantab_list_size(&t->lists[i]);
		if (!n)
			continue;
		total += n;
		str_append(held, sizeof(held), "%slist %s %llu", held[0] ? ", " : "",
			   t->lists[i].name, (unsigned long long)n);
	}
	if (!total)
		return 0;
	return runtime_err("%s has prefix bans (%s) that only root can read (the ban table is got by its id, which needs CAP_SYS_ADMIN); nothing is shown rather than part of the bans: run 'sudo sluice ban list'",
			   iface, held);
}

/* The prefix bans, first: their count, or -1 after an error (printed). */
static int list_prefixes(struct bantab *t, bool readable, const char *name, struct json *j)
{
	int li = -1;

	if (!readable)
		return 0;	/* none held: prefixes_unreadable said so */
	/* A list is freed with its last prefix: one not found holds none. */
	if (name && (li = bantab_list_find(t, name)) < 0)
		return 0;
	return prefix_bans_list(t, li, j);
}

/* The bans of --ban rules and of the check server's escalation. */
static void rule_ban_rows(const struct sluice_maps *m, const struct policy *p, struct ban *bans,
			  size_t n, struct json *j)
{
	char src[SLUICE_CIDR_STR_MAX], label[RULE_TEXT_MAX];

	(void)m;
	if (!opts.json && n)
		printf("%s%-43s %-40s %12s\n", "", "SOURCE", "RULE", "LEFT");
	for (size_t i = 0; i < n; i++) {
		format_source(&bans[i].row.key, src, sizeof(src));
		if (bans[i].rule)
			policy_rule_label(p, bans[i].rule, label, sizeof(label));
		else
			snprintf(label, sizeof(label), "(a rule since deleted)");
		if (!opts.json) {
			printf("%-43s %-40s %11.3fs\n", src, label,
			       (double)bans[i].left_ns / SLUICE_NS_PER_SEC);
			continue;
		}
		json_obj_open(j, NULL);
		json_str(j, "source", src);
		json_str(j, "policy", label);
		json_str(j, "kind", bans[i].escalated ? "escalated" : "rule");
		json_u64(j, "left_ms", (bans[i].left_ns + 999999) / 1000000);
		json_double(j, "left_seconds", (double)bans[i].left_ns / SLUICE_NS_PER_SEC);
		if (bans[i].escalated)
			json_null(j, "dropped");
		else
			json_u64(j, "dropped", bans[i].row.b.dropped);
		json_obj_close(j);
	}
}

static int ban_list(const struct cli_cmd *c, struct cli_args *a)
{
	const struct ban_list_options *o = CLI_OPTIONS(a, struct ban_list_options);
	struct sluice_maps m, pm;
	struct policy *p;
	struct ban *bans = NULL;
	struct bantab t;
	struct json j;
	size_t n = 0;
	int err, np, peek;

	(void)c;
	err = open_policy(&m, &p, false);
	if (err)
		return err;
	if (!o->list)
		err = read_bans(&m, p, &bans, &n);
	if (err)
		goto out;
	/* Whether the prefix bans can be read, before anything is printed. */
	peek = prefix_bans_peek(&pm, &t);
	if (peek < 0 || (peek > 0 && (err = prefixes_unreadable(&t, o->list, m.iface)))) {
		err = err ? err : EXIT_RUNTIME;
		goto out;
	}
	if (n)
		qsort(bans, n, sizeof(*bans), ban_cmp);
	if (opts.json) {
		json_begin(&j, stdout);
		json_arr_open(&j, NULL);
	}
	np = list_prefixes(&t, !peek, o->list, &j);
	if (!peek)
		prefix_bans_close(&pm, &t);
	if (np < 0) {
		err = EXIT_RUNTIME;
	} else {
		if (!opts.json && np && n)
			printf("\n");
		rule_ban_rows(&m, p, bans, n, &j);
	}
	if (opts.json) {
		json_arr_close(&j);
		json_end(&j);
	} else if (!err && !n && !np) {
		printf("no bans on %s\n", m.iface);
	}
out:
	free(bans);
	free(p);
	maps_close(&m);
	return err;
}

/* Whether bucket key k covers what ban del names: an address (any bucket
 * holding it), or ADDR/LEN (the keyed bucket of exactly that prefix). */
static bool ban_covers(const struct sluice_src_key *k, const struct sluice_src_key *want,
		       bool prefix)
{
	struct sluice_src_key masked;

	if (k->family != want->family)
		return false;
	if (prefix)
		return k->policy != SLUICE_KEY_HOME && k->key_len == want->key_len &&
		       !memcmp(k->a, want->a, sizeof(k->a));
	if (k->policy == SLUICE_KEY_HOME)
		return !memcmp(k->a, want->a, sizeof(k->a));
	source_key_mask(want, k->key_len, k->policy, &masked);
	return !memcmp(k->a, masked.a, sizeof(k->a));
}

int source_bans(const struct sluice_maps *m, const struct policy *p,
		const struct sluice_src_key *addr, struct source_ban **out, size_t *n)
{
	struct ban *bans = NULL;
	size_t nb = 0, k = 0;
	int err = read_bans(m, p, &bans, &nb);

	*out = NULL;
	*n = 0;
	if (err)
		return err;
	if (nb)
		qsort(bans, nb, sizeof(*bans), ban_cmp);
	*out = calloc(nb ? nb : 1, sizeof(**out));
	if (!*out) {
		free(bans);
		return runtime_err("out of memory");
	}
	for (size_t i = 0; i < nb; i++) {
		if (!ban_covers(&bans[i].row.key, addr, false))
			continue;
		(*out)[k].key = bans[i].row.key;
		(*out)[k].rule = bans[i].rule;
		(*out)[k].left_ns = bans[i].left_ns;
		(*out)[k].escalated = bans[i].escalated;
		k++;
	}
	*n = k;
	free(bans);
	return 0;
}

/* Lift one ban: the bucket becomes spent as of now (a token bucket empty,
 * refilling at its rate; a window full for the rest of this window). Its
 * slot of the source table (home or keyed) moves by CAS, as the
 * datapath's do: a lift that loses to a packet is read and tried again. */
/* Lifts that lose CAS after CAS to the datapath: the source sends that hard. */
#define LIFT_TRIES 64

static int lift(const struct sluice_maps *m, const struct ban *ban, bool *lifted)
{
	struct sluice_bucket b;
	__u64 now;
	int r, err;

	*lifted = false;
	for (int tries = 0; tries < LIFT_TRIES; tries++) {
		err = bucket_lookup(m, &ban->row.key, &b);
		if (err)
			return err == -ENOENT ? 0 : err;
		now = mono_now_ns();
		if (!limit_banned(&ban->lim, b.tat, now))
			return 0;	/* ended meanwhile */
		r = bucket_set_state(m, &ban->row.key, &b, limit_state_with(&ban->lim, now, 0));
		if (r < 0)
			return r;
		if (r) {
			*lifted = true;
			return 0;
		}
	}
	return -EAGAIN;
}

/* The prefix ban on exactly arg's prefix (of list, or of every list),
 * lifted: *done counts it. 0 or an exit status. */
static int del_prefix(const char *arg, const char *list, size_t *done)
{
	struct sluice_maps m;
	struct bantab t;
	struct cidr c;
	char why[256];
	int err, li = -1, r;

	if (parse_ban_prefix(arg, &c, why, sizeof(why)))
		return usage_err("%s: give ADDR or ADDR/LEN", why);
	err = prefix_bans_open(&m, &t, true);
	if (err)
		return err;
	/* A list is freed with its last prefix: one not found holds none. */
	if (list && (li = bantab_list_find(&t, list)) < 0) {
		prefix_bans_close(&m, &t);
		return 0;
	}
	r = prefix_ban_del(&m, &t, &c, li);
	prefix_bans_close(&m, &t);
	if (r < 0 || r > 1)
		return r < 0 ? EXIT_RUNTIME : r;
	*done += (size_t)r;
	return 0;
}

/* The bans of --ban rules and escalations on arg, lifted: *done counts
 * them. 0 or an exit status. */
static int del_rule_bans(const char *arg, size_t *done)
{
	const char *e;
	struct sluice_src_key want;
	struct sluice_maps m;
	struct policy *p;
	struct ban *bans = NULL;
	char why[256];
	size_t n = 0;
	bool prefix = strchr(arg, '/') != NULL, lifted, swept = false;
	struct ban_writer w = { .fd = -1 };
	int err;

	if (prefix) {
		struct cidr cidr;

		if (parse_cidr(arg, &cidr, why, sizeof(why)))
			return usage_err("%s: give ADDR or ADDR/LEN", why);
		memset(&want, 0, sizeof(want));
		memcpy(want.a, cidr.addr.a, sizeof(want.a));
		want.family = cidr_family(&cidr);
		want.key_len = (__u8)cidr.prefixlen;
	} else if ((e = parse_source(arg, &want))) {
		return usage_err("bad address '%s': %s", arg, e);
	}
	err = open_policy(&m, &p, true);
	if (err)
		return err;
	err = read_bans(&m, p, &bans, &n);
	for (size_t i = 0; !err && i < n; i++) {
		if (bans[i].escalated) {
			/* The ban table holds addresses: ADDR names it. */
			if (prefix || memcmp(&bans[i].row.key, &want, sizeof(want)) != 0)
				continue;
			if (map_delete(m.bans, &want) && errno != ENOENT) {
				err = runtime_err("cannot lift the ban on %s: %s", arg,
						  strerror(errno));
				break;
			}
			(*done)++;
			swept = true;
			log_event(LOG_NOTICE, "%s: ban removed: %s (escalated, by ban del)", m.iface,
				  arg);
			continue;
		}
		if (!ban_covers(&bans[i].row.key, &want, prefix))
			continue;
		err = lift(&m, &bans[i], &lifted);
		if (err) {
			err = runtime_err("cannot lift the ban on %s: %s", arg, strerror(-err));
			break;
		}
		*done += lifted;
		if (lifted)
			log_event(LOG_NOTICE, "%s: ban removed: %s (a --ban rule's, by ban del)",
				  m.iface, arg);
	}
	/* The last ban gone: the datapath may stop looking (a running check
	 * server would do it within a second; there may be none). */
	if (!err && swept && !ban_writer_open(&m, &w)) {
		ban_sweep(&w);
		ban_writer_close(&w);
	}
	free(bans);
	free(p);
	maps_close(&m);
	return err;
}

struct ban_del_options {
	const char *list;
};
static const struct ban_del_options ban_del_defaults = { 0 };
static const struct cli_opt ban_del_opts[] = {
	CLI_STR("list", 0, "NAME", "lift only list NAME's prefix ban", struct ban_del_options,
		list),
	CLI_OPT_END,
};

static int ban_del(const struct cli_cmd *c, struct cli_args *a)
{
	const struct ban_del_options *o = CLI_OPTIONS(a, struct ban_del_options);
	const char *arg = a->pos[0];
	size_t done = 0;
	int err;

	(void)c;
	err = del_prefix(arg, o->list, &done);
	if (!err && !o->list)
		err = del_rule_bans(arg, &done);
	if (!err && !done)
		err = runtime_err("no ban on %s%s%s: see 'sluice ban list'", arg,
				  o->list ? " in list " : "", o->list ? o->list : "");
	if (!err && !opts.json)
		printf("%s: lifted %zu ban%s\n", arg, done, done == 1 ? "" : "s");
	return err;
}

static const struct cli_cmd ban_list_cmd = {
	.name = "list", .path = "ban list", .json = true, .run = ban_list,
	.opts = ban_list_opts, CLI_DEFAULTS(ban_list_defaults),
	.help = "Every ban: prefix bans (ban add, ban load) with their kind, list, time left\n"
		"and packets dropped; then the live bans of --ban rules (kind 'rule') and of\n"
		"request rules (the check server's escalation, kind 'escalated').\n"
		"--list NAME shows only that list's prefix bans.",
};
static const struct cli_cmd ban_del_cmd = {
	.name = "del", .path = "ban del", .args = "ADDR[/LEN]", .min_pos = 1, .max_pos = 1,
	.opts = ban_del_opts, .json_quiet = true, .run = ban_del, CLI_DEFAULTS(ban_del_defaults),
	.help = "Lifts the prefix ban on exactly ADDR[/LEN] (from every list, or --list NAME's\n"
		"only); without --list also every ban of a --ban rule on a bucket holding ADDR,\n"
		"or on the keyed prefix ADDR/LEN (the bucket is left empty and refills at its\n"
		"rate), and a request rule's ban on ADDR. Exit 1 when there is none.",
};
static const struct cli_cmd *const ban_cmds[] = { &ban_add_cmd, &ban_del_cmd, &ban_list_cmd,
						  &ban_load_cmd, NULL };

const struct cli_cmd ban_obj = {
	.name = "ban", .path = "ban", .sub = ban_cmds,
	.help = "Bans: prefixes banned by name or in lists (ban add, ban load), and sources\n"
		"a rule with --ban DURATION banned for DURATION.",
};
