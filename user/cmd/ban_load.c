// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* ban load: a whole list of prefix bans from a file, replacing the list
 * (or merged into it) in one step: the file is read and checked whole
 * first, a new trie is built with every other list's bans and this list's
 * new ones, and swapped in for the live one, so the datapath sees the old
 * table or the new, never a half-loaded one.
 *
 * Lines: `ADDR[/LEN] [DURATION]`; ipset's `add SET ADDR[/LEN] [timeout N]`
 * (`create` lines and other sets' options are skipped: `ipset save`);
 * FireHOL's .netset (prefixes and # comments); Spamhaus DROP's
 * `PREFIX ; SBL…`. `#` and `;` start comments; blank lines are skipped. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "sluice.h"
#include "cli.h"
#include "rule.h"

/* Words of one line, at most. */
#define LOAD_WORDS	64

struct load_entry {
	struct sluice_ban_key key;
	__u64 until_ns;		/* 0: forever */
};

struct load_set {
	struct load_entry *e;
	size_t n, cap;
};

static int set_push(struct load_set *s, const struct load_entry *e)
{
	struct load_entry *grown;

	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 4096;
		grown = realloc(s->e, s->cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		s->e = grown;
	}
	s->e[s->n++] = *e;
	return 0;
}

/* Splits line into at most LOAD_WORDS words, comments cut: the count, or
 * -1 when there are more. */
static int split_words(char *line, char *w[LOAD_WORDS])
{
	char *save = NULL, *tok;
	int n = 0;

	line[strcspn(line, "#;\r\n")] = '\0';
	for (tok = strtok_r(line, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
		if (n == LOAD_WORDS)
			return -1;
		w[n++] = tok;
	}
	return n;
}

/* ipset's `timeout N` (seconds, 0: forever) among words w[from..n). */
static int ipset_timeout(char **w, int from, int n, __u64 *until, char *why, size_t len)
{
	__u64 secs;

	for (int i = from; i + 1 < n; i++) {
		if (strcmp(w[i], "timeout") != 0)
			continue;
		if (!parse_u64(w[i + 1], 0, SLUICE_BAN_FOR_NS_MAX / SLUICE_NS_PER_SEC, &secs)) {
			snprintf(why, len, "bad ipset timeout '%s'", w[i + 1]);
			return -1;
		}
		*until = secs ? mono_now_ns() + secs * SLUICE_NS_PER_SEC : 0;
	}
	return 0;
}

/* One line into *e: 1 for an entry, 0 for none (blank, comment, ipset's
 * create), -1 with why. */
static int parse_line(char *line, struct load_entry *e, char *why, size_t len)
{
	char *w[LOAD_WORDS], reason[200];
	const char *pfx;
	struct cidr c;
	int n = split_words(line, w), at = 0;

	memset(e, 0, sizeof(*e));
	if (n < 0) {
		snprintf(why, len, "too many words: not a format ban load reads");
		return -1;
	}
	if (n == 0 || !strcmp(w[0], "create"))
		return 0;
	if (!strcmp(w[0], "add")) {
		/* ipset: add SET ADDR[/LEN] [timeout N] [other options] */
		if (n < 3) {
			snprintf(why, len, "ipset 'add' without a set and an address");
			return -1;
		}
		at = 2;
		if (ipset_timeout(w, 3, n, &e->until_ns, why, len))
			return -1;
	} else if (n > 2) {
		snprintf(why, len, "'%s ...': not ADDR[/LEN] [DURATION], ipset, .netset or DROP", w[0]);
		return -1;
	} else if (n == 2 && parse_ban_for("duration", w[1], &e->until_ns, why, len)) {
		return -1;
	}
	pfx = w[at];
	if (parse_ban_prefix(pfx, &c, reason, sizeof(reason))) {
		snprintf(why, len, "%s", reason);
		return -1;
	}
	bantab_key(&c, &e->key);
	return 1;
}

/* Reads every entry of f into s: 0, or an exit status (the bad line
 * named). */
static int read_entries(FILE *f, const char *name, struct load_set *s)
{
	char *line = NULL, why[300];
	size_t cap = 0, lineno = 0;
	struct load_entry e;
	int r, err = 0;

	while (getline(&line, &cap, f) >= 0) {
		lineno++;
		r = parse_line(line, &e, why, sizeof(why));
		if (r < 0) {
			err = usage_err("%s:%zu: %s; nothing was changed", name, lineno, why);
			break;
		}
		if (r && set_push(s, &e)) {
			err = runtime_err("out of memory at %s:%zu", name, lineno);
			break;
		}
	}
	if (!err && ferror(f))
		err = runtime_err("cannot read %s: %s", name, strerror(errno));
	free(line);
	return err;
}

struct ban_load_options {
	const char *list;
	bool merge;
};
static const struct ban_load_options ban_load_defaults = { .list = BANTAB_DEFAULT_LIST };
enum { BAN_LOAD_LIST, BAN_LOAD_MERGE };
static const struct cli_opt ban_load_opts[] = {
	[BAN_LOAD_LIST] = CLI_STR("list", 0, "NAME", "the list to replace (default 'default')",
				  struct ban_load_options, list),
	[BAN_LOAD_MERGE] = CLI_FLAG("merge", 0, "add to the list instead of replacing it",
				    struct ban_load_options, merge),
	CLI_OPT_END,
};

/* Copies trie `from`'s entries into `to`: this list's dropped unless merge;
 * expired ones left out. Tallies of t counted anew. 0 or -errno. */
static int copy_others(struct bantab *t, int from, int to, int li, bool merge)
{
	struct ban_entry *e;
	__u64 now = mono_now_ns();
	size_t n;
	int err = bantab_read(from, &e, &n);

	for (size_t i = 0; !err && i < n; i++) {
		if (e[i].v.until_ns && e[i].v.until_ns <= now)
			continue;
		if (!merge)
			e[i].v.lists &= ~(1ULL << li);
		if (!e[i].v.lists)
			continue;
		e[i].v.list = bantab_first_list(e[i].v.lists);
		if (map_update(to, &e[i].key, &e[i].v, BPF_NOEXIST))
			err = errno == E2BIG ? -ENOSPC : -errno;
		else
			bantab_tally(t, &e[i].v, 1);
	}
	free(e);
	return err;
}

/* Whether any list but li holds prefixes (t's tallies, before build). */
static bool others_hold(const struct bantab *t, int li)
{
	for (int i = 0; i < (int)SLUICE_BAN_LISTS; i++)
		if (i != li && (t->lists[i].entries[SLUICE_BAN_KIND_ADDED] ||
				t->lists[i].entries[SLUICE_BAN_KIND_LOADED]))
			return true;
	return false;
}

/* Builds the new trie: every other list's bans, then the file's. Its fd,
 * or -errno (-ENOSPC: more than the table holds). */
static int build(struct bantab *t, const struct load_set *s, int li, bool merge)
{
	/* The old trie is read only when something of it stays: a replace
	 * of the only list in use starts from nothing. */
	bool copy = t->trie >= 0 && (merge || others_hold(t, li));
	int fd = bantab_new_trie(t), err = 0;

	if (fd < 0)
		return fd;
	for (__u32 i = 0; i < SLUICE_BAN_LISTS; i++) {
		memset(t->lists[i].entries, 0, sizeof(t->lists[i].entries));
		t->lists[i].next_expiry = 0;
	}
	if (copy)
		err = copy_others(t, t->trie, fd, li, merge);
	for (size_t i = 0; !err && i < s->n; i++)
		err = prefix_put(t, fd, &s->e[i].key, li, s->e[i].until_ns, SLUICE_BAN_KIND_LOADED);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

static __u64 list_size(const struct sluice_ban_list *l)
{
	return l->entries[SLUICE_BAN_KIND_ADDED] + l->entries[SLUICE_BAN_KIND_LOADED];
}

/* Swaps the new trie in and reports. */
static int load_commit(struct sluice_maps *m, struct bantab *t, const struct load_set *s,
		       const char *list, int li, __u64 before, double took)
{
	int err = 0;

	if (bantab_empty(t->trie))
		err = bantab_install(m, t, -1);
	if (!err)
		err = bantab_lists_write(m, t);
	if (err)
		return runtime_err("cannot write the ban table: %s", strerror(-err));
	log_event(LOG_NOTICE, "%s: ban load: list %s: %llu prefixes, %llu before (%zu lines with a prefix, by ban load)",
		m->iface, list, (unsigned long long)list_size(&t->lists[li]), (unsigned long long)before,
		s->n);
	bantab_warn_full(m, t);
	if (!opts.json)
		printf("list %s: %llu prefixes (%llu before), loaded in %.2f s\n", list,
		       (unsigned long long)list_size(&t->lists[li]), (unsigned long long)before,
		       took);
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int ban_load_run(const struct cli_cmd *cmd, struct cli_args *a)
{
	const struct ban_load_options *o = CLI_OPTIONS(a, struct ban_load_options);
	const char *path = a->pos[0];
	struct load_set s = { 0 };
	struct sluice_maps m;
	struct bantab t;
	double t0 = now_s();
	__u64 before;
	FILE *f;
	int err, li, fd;

	(void)cmd;
	if (!bantab_list_name_ok(o->list))
		return usage_err("bad --list '%s': 1 to %d letters, digits, '.', '_' or '-'",
				 o->list, SLUICE_BAN_LIST_NAME - 1);
	f = strcmp(path, "-") != 0 ? fopen(path, "r") : stdin;
	if (!f)
		return usage_err("cannot read %s: %s", path, strerror(errno));
	err = read_entries(f, strcmp(path, "-") != 0 ? path : "(stdin)", &s);
	if (f != stdin)
		fclose(f);
	if (err)
		goto out_free;
	err = prefix_bans_open(&m, &t, true);
	if (err)
		goto out_free;
	li = prefix_list_take(&t, o->list);
	if (li < 0) {
		err = EXIT_RUNTIME;
		goto out;
	}
	before = list_size(&t.lists[li]);
	fd = build(&t, &s, li, o->merge);
	if (fd == -ENOSPC) {
		err = runtime_err("%s: the ban table would hold more than its %u prefixes (attach --max-bans); nothing was changed",
				  path, t.capacity);
		goto out;
	}
	if (fd < 0) {
		err = runtime_err("cannot build the ban table: %s; nothing was changed", strerror(-fd));
		goto out;
	}
	err = bantab_install(&m, &t, fd);
	if (err) {
		close(fd);
		err = runtime_err("cannot install the ban table: %s; nothing was changed",
				  strerror(-err));
		goto out;
	}
	err = load_commit(&m, &t, &s, o->list, li, before, now_s() - t0);
out:
	prefix_bans_close(&m, &t);
out_free:
	free(s.e);
	return err;
}

const struct cli_cmd ban_load_cmd = {
	.name = "load", .path = "ban load", .args = "FILE|-", .min_pos = 1, .max_pos = 1,
	.opts = ban_load_opts, .run = ban_load_run, CLI_DEFAULTS(ban_load_defaults),
	.help = "Replaces a list of prefix bans (--list NAME, default 'default') with the\n"
		"prefixes of FILE ('-': standard input), or adds them to it (--merge), in one\n"
		"step. Lines: ADDR[/LEN] [DURATION]; ipset save's 'add SET ADDR[/LEN] [timeout N]';\n"
		"FireHOL .netset; Spamhaus DROP's 'PREFIX ; SBL...'. '#' and ';' start comments.\n"
		"A bad line exits 2 naming it, and nothing changes.",
};
