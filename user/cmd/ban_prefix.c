// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* ban add, and the prefix bans' part of ban del and ban list: prefixes
 * banned by name, in lists, in the trie the datapath checks before any
 * rule (sluice/bans.h, user/lib/bantab.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "core.h"
#include "ban.h"
#include "cli.h"
#include "rule.h"

int prefix_bans_open(struct sluice_maps *m, struct bantab *t, bool edit)
{
	const char *iface = m->iface;
	int err, r;

	memset(t, 0, sizeof(*t));
	t->trie = -1;
	err = maps_open_picked(m, edit);
	if (err)
		return err;
	r = bantab_open(m, t);
	if (r == -ESTALE) {
		err = runtime_err("the ban table of %s was made by another version of sluice: attach with this one, which says what to do (doc/upgrading.md); nothing was changed",
				  iface);
		goto fail;
	}
	if (r) {
		err = runtime_err("cannot read the ban table of %s: %s%s", iface, strerror(-r),
				  r == -EPERM ? " (reading its prefixes needs root)" : "");
		goto fail;
	}
	if (edit && (r = bantab_sweep(m, t, "sweep")) < 0) {
		err = runtime_err("cannot sweep the expired bans of %s: %s", iface, strerror(-r));
		goto fail;
	}
	return 0;
fail:
	prefix_bans_close(m, t);
	return err;
}

int prefix_bans_peek(struct sluice_maps *m, struct bantab *t)
{
	const char *iface = m->iface;
	int r;

	memset(t, 0, sizeof(*t));
	t->trie = -1;
	if (maps_open_picked(m, false))
		return -1;
	r = bantab_open(m, t);
	if (!r)
		return 0;
	prefix_bans_close(m, t);
	if (r == -EPERM)
		return 1;
	if (r == -ESTALE)
		runtime_err("the ban table of %s was made by another version of sluice: attach with this one, which says what to do (doc/upgrading.md)",
			    iface);
	else
		runtime_err("cannot read the ban table of %s: %s", iface, strerror(-r));
	return -1;
}

void prefix_bans_close(struct sluice_maps *m, struct bantab *t)
{
	bantab_close(t);
	maps_close(m);
}

/* "for 1h" or "forever", for the log and the reply. */
static void until_words(__u64 until_ns, char *buf, size_t len)
{
	__u64 now = mono_now_ns();
	char d[32];

	if (!until_ns) {
		snprintf(buf, len, "forever");
		return;
	}
	duration_words(until_ns > now ? until_ns - now : 0, d, sizeof(d));
	snprintf(buf, len, "for %s", d);
}

struct ban_add_options {
	const char *for_;
	const char *list;
	bool force;
};
static const struct ban_add_options ban_add_defaults = { .list = BANTAB_DEFAULT_LIST };
enum { BAN_ADD_FOR, BAN_ADD_LIST, BAN_ADD_FORCE };
static const struct cli_opt ban_add_opts[] = {
	[BAN_ADD_FOR] = CLI_STR("for", 0, "DURATION", "ban for DURATION (1s to 3650d), not forever",
				struct ban_add_options, for_),
	[BAN_ADD_LIST] = CLI_STR("list", 0, "NAME", "the list it belongs to",
				 struct ban_add_options, list),
	[BAN_ADD_FORCE] = CLI_FLAG("force", 0, "ban 0.0.0.0/0 or ::/0 (every source) all the same",
				   struct ban_add_options, force),
	CLI_OPT_END,
};

/* The prefix of a ban command's first word, or a usage error. */
static int ban_prefix_arg(const char *arg, struct cidr *c)
{
	char why[256];

	if (parse_ban_prefix(arg, c, why, sizeof(why)))
		return usage_err("%s: give ADDR or ADDR/LEN", why);
	return 0;
}

static int ban_add_run(const struct cli_cmd *cmd, struct cli_args *a)
{
	const struct ban_add_options *o = CLI_OPTIONS(a, struct ban_add_options);
	char why[256], pfx[SLUICE_CIDR_STR_MAX], until_s[48];
	struct sluice_ban_key k;
	struct sluice_maps m;
	struct bantab t;
	struct cidr c = { 0 };
	__u64 until = 0;
	int err, li, fd, fresh = 0;

	(void)cmd;
	if (ban_prefix_arg(a->pos[0], &c))
		return EXIT_USAGE;
	if (prefix_everything(&c) && !o->force)
		return prefix_everything_err(&c, "");
	if (o->for_ && parse_ban_for("--for", o->for_, &until, why, sizeof(why)))
		return usage_err("%s", why);
	if (!bantab_list_name_ok(o->list))
		return usage_err("bad --list '%s': 1 to %d letters, digits, '.', '_' or '-'",
				 o->list, SLUICE_BAN_LIST_NAME - 1);
	err = prefix_bans_open(&m, &t, true);
	if (err)
		return err;
	li = prefix_list_take(&t, o->list);
	if (li < 0) {
		err = EXIT_RUNTIME;
		goto out;
	}
	fd = t.trie;
	if (fd < 0) {
		fd = bantab_new_trie(&t);
		fresh = 1;
	}
	if (fd < 0) {
		err = runtime_err("cannot make the ban table: %s", strerror(-fd));
		goto out;
	}
	bantab_key(&c, &k);
	err = prefix_put(&t, fd, &k, li, until, SLUICE_BAN_KIND_ADDED);
	if (!err && fresh)
		err = bantab_install(&m, &t, fd);
	if (!err)
		err = bantab_lists_write(&m, &t);
	format_cidr(&c, pfx, sizeof(pfx));
	if (err == -ENOSPC) {
		err = runtime_err("cannot ban %s: the ban table is full (%u prefixes; attach --max-bans)",
				  pfx, t.capacity);
	} else if (err == -EMLINK) {
		err = runtime_err("cannot ban %s in list %s: %u lists hold it already, the most one prefix may be in (ban del --list NAME lets one go)",
				  pfx, o->list, SLUICE_BAN_ENDS);
	} else if (err) {
		err = runtime_err("cannot ban %s: %s", pfx, strerror(-err));
	} else {
		if (o->for_)
			snprintf(until_s, sizeof(until_s), "for %s", o->for_);
		else
			until_words(until, until_s, sizeof(until_s));
		log_event(LOG_NOTICE, "%s: ban added: %s (list %s, %s, by ban add)",
			  m.iface, pfx, o->list, until_s);
		bantab_warn_full(&m, &t);
		if (!opts.json)
			printf("%s: banned %s (list %s)\n", pfx, until_s, o->list);
	}
	if (fresh && fd >= 0 && t.trie != fd)
		close(fd);	/* never installed */
out:
	prefix_bans_close(&m, &t);
	return err;
}

int prefix_ban_del(const struct sluice_maps *m, struct bantab *t, const struct cidr *c, int list)
{
	char pfx[SLUICE_CIDR_STR_MAX], names[SLUICE_BAN_LISTS * SLUICE_BAN_LIST_NAME] = "";
	struct sluice_ban_key k;
	struct sluice_pfx_ban v = { 0 };
	__u64 drop;
	int r;

	bantab_key(c, &k);
	r = prefix_exact(t->trie, &k, &v);
	if (r <= 0)
		return r ? runtime_err("cannot read the ban table: %s", strerror(-r)) : 0;
	drop = list < 0 ? v.lists : v.lists & (1ULL << list);
	if (!drop)
		return 0;
	for (__u32 i = 0; i < SLUICE_BAN_LISTS; i++)
		if (drop & (1ULL << i))
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 names[0] ? ", " : "", t->lists[i].name);
	bantab_tally(t, &v, -1);
	bantab_end_drop(&v, drop);
	if (v.lists ? map_update(t->trie, &k, &v, BPF_EXIST) : map_delete(t->trie, &k))
		return runtime_err("cannot lift the ban: %s", strerror(errno));
	bantab_tally(t, &v, 1);
	if (bantab_empty(t->trie) && (r = bantab_install(m, t, -1)))
		return runtime_err("cannot remove the empty ban table: %s", strerror(-r));
	if ((r = bantab_lists_write(m, t)))
		return runtime_err("cannot write the ban lists: %s", strerror(-r));
	format_cidr(c, pfx, sizeof(pfx));
	log_event(LOG_NOTICE, "%s: ban removed: %s (list %s, by ban del)", m->iface, pfx,
		  names);
	return 1;
}

static const char *kind_name(const struct sluice_pfx_ban *v, __u32 li)
{
	return v->loaded & (1ULL << li) ? "loaded" : "added";
}

static int entry_cmp(const void *a, const void *b)
{
	const struct ban_entry *x = a, *y = b;

	if (x->v.list != y->v.list)
		return x->v.list < y->v.list ? -1 : 1;
	if (x->key.family != y->key.family)
		return x->key.family < y->key.family ? -1 : 1;
	return memcmp(x->key.addr, y->key.addr, sizeof(x->key.addr));
}

/* Seconds left of an end (0: forever) as JSON. */
static void json_left(struct json *j, const char *key, __u64 end, __u64 now)
{
	if (end)
		json_double(j, key, (double)(end > now ? end - now : 0) / SLUICE_NS_PER_SEC);
	else
		json_null(j, key);
}

/* One prefix ban of ban list's output: its list li's ban when li names
 * one, else the prefix's (its latest end, and the list that has it). */
static void prefix_row(const struct bantab *t, const struct ban_entry *e, int li, __u64 now,
		       struct json *j)
{
	char pfx[SLUICE_CIDR_STR_MAX], left[32];
	__u32 shown = li >= 0 ? (__u32)li : e->v.list % SLUICE_BAN_LISTS;
	__u64 end = li >= 0 ? bantab_end_of(&e->v, li) : e->v.until_ns;
	__u64 ns = end > now ? end - now : 0;

	bantab_format(&e->key, pfx, sizeof(pfx));
	if (!opts.json) {
		if (end)
			snprintf(left, sizeof(left), "%.3fs", (double)ns / SLUICE_NS_PER_SEC);
		else
			snprintf(left, sizeof(left), "forever");
		printf("%-43s %-9s %-16s %14s %12llu\n", pfx, kind_name(&e->v, shown),
		       t->lists[shown].name, left, (unsigned long long)e->v.dropped);
		return;
	}
	json_obj_open(j, NULL);
	json_str(j, "prefix", pfx);
	json_str(j, "kind", kind_name(&e->v, shown));
	json_str(j, "list", t->lists[shown].name);
	json_arr_open(j, "lists");
	for (__u32 i = 0; i < SLUICE_BAN_LISTS; i++)
		if (e->v.lists & (1ULL << i))
			json_str(j, NULL, t->lists[i].name);
	json_arr_close(j);
	json_left(j, "left_seconds", end, now);
	/* Each list's own ban: the prefix is banned while one is live. */
	json_obj_open(j, "left_by_list");
	for (__u32 i = 0; i < SLUICE_BAN_LISTS; i++)
		if (e->v.lists & (1ULL << i))
			json_left(j, t->lists[i].name, bantab_end_of(&e->v, (int)i), now);
	json_obj_close(j);
	json_u64(j, "dropped", e->v.dropped);
	json_obj_close(j);
}

int prefix_bans_list(const struct bantab *t, int list, struct json *j)
{
	struct ban_entry *e;
	__u64 now = mono_now_ns(), end;
	size_t n, shown = 0;
	int err = bantab_read(t->trie, &e, &n);

	if (err) {
		runtime_err("cannot read the ban table: %s", strerror(-err));
		return -1;
	}
	if (n)
		qsort(e, n, sizeof(*e), entry_cmp);
	for (size_t i = 0; i < n; i++) {
		if (list >= 0 && !(e[i].v.lists & (1ULL << list)))
			continue;
		end = list >= 0 ? bantab_end_of(&e[i].v, list) : e[i].v.until_ns;
		if (end && end <= now)
			continue;	/* expired, not yet swept */
		if (!opts.json && !shown)
			printf("%-43s %-9s %-16s %14s %12s\n", "PREFIX", "KIND", "LIST", "LEFT",
			       "DROPPED");
		prefix_row(t, &e[i], list, now, j);
		shown++;
	}
	free(e);
	return (int)shown;
}

const struct cli_cmd ban_add_cmd = {
	.name = "add", .path = "ban add", .args = "ADDR[/LEN]", .min_pos = 1, .max_pos = 1,
	.opts = ban_add_opts, .json_quiet = true, .run = ban_add_run, CLI_DEFAULTS(ban_add_defaults),
	.help = "Bans an address or a prefix, IPv4 or IPv6, forever or --for DURATION: its\n"
		"packets are dropped before any rule, counted as 'banned' and to the list.\n"
		"Adding it again sets its end anew. The ban belongs to --list NAME\n"
		"(default 'default'); a prefix in several lists (at most 8) keeps each list's\n"
		"end and stays banned while one of them lasts. 0.0.0.0/0 and ::/0 need --force.",
};
