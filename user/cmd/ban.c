// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* ban list, ban del: the live bans of rules (read by user/lib/live_bans.c)
 * and of prefixes (ban_prefix.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "core.h"
#include "ban.h"
#include "sluice/algo.h"
#include "cli.h"
#include "rule.h"

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
static void rule_ban_rows(const struct sluice_maps *m, const struct policy *p,
			  struct rule_ban *bans, size_t n, struct json *j)
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
	struct rule_ban *bans = NULL;
	struct bantab t;
	struct json j;
	size_t n = 0;
	int err, np, peek;

	(void)c;
	err = open_policy(&m, &p, false);
	if (err)
		return err;
	if (!o->list)
		err = rule_bans_read(&m, p, &bans, &n);
	if (err)
		goto out;
	/* Whether the prefix bans can be read, before anything is printed. */
	peek = prefix_bans_peek(&pm, &t);
	if (peek < 0 || (peek > 0 && (err = prefixes_unreadable(&t, o->list, m.iface)))) {
		err = err ? err : EXIT_RUNTIME;
		goto out;
	}
	if (n)
		qsort(bans, n, sizeof(*bans), rule_ban_cmp);
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

/* Lift one ban: the bucket becomes spent as of now (a token bucket empty,
 * refilling at its rate; a window full for the rest of this window). Its
 * slot of the source table (home or keyed) moves by CAS, as the
 * datapath's do: a lift that loses to a packet is read and tried again. */
/* Lifts that lose CAS after CAS to the datapath: the source sends that hard. */
#define LIFT_TRIES 64

static int lift(const struct sluice_maps *m, const struct rule_ban *ban, bool *lifted)
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
	struct rule_ban *bans = NULL;
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
	err = rule_bans_read(&m, p, &bans, &n);
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
		if (!rule_ban_covers(&bans[i].row.key, &want, prefix))
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
