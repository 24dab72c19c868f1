// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* ban load: a whole list of prefix bans from a file, replacing the list
 * (or merged into it) in one step: the file is read and checked whole
 * first, a new trie is built with every other list's bans and this list's
 * new ones, and swapped in for the live one, so the datapath sees the old
 * table or the new, never a half-loaded one.
 *
 * Lines: `ADDR[/LEN] [DURATION]`; ipset's `add SET ADDR[/LEN] [timeout N]`
 * (`ipset save`: `create` lines skipped, other options read past; one set
 * only, or the one --set names; a `nomatch` exception is no ban and is
 * skipped); FireHOL's .netset (prefixes and # comments); Spamhaus DROP's
 * `PREFIX ; SBL…`. Words are split at blanks outside double quotes; `#`
 * and `;` outside quotes start comments; blank lines are skipped. A bad
 * line is named by its number and what is wrong with it, never by its
 * text: the file may be one the caller could not read (sudo). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "core.h"
#include "ban.h"
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

/* What the lines of one input share: the set --set names, the first
 * ipset set met (and its line), the line being read, --force. */
struct load_ctx {
	const char *set;
	char seen[SLUICE_BAN_LIST_NAME];
	size_t seen_line, lineno, nomatch, set_lines;
	struct cidr everything;	/* a line's 0.0.0.0/0 or ::/0, refused */
	bool force;
};

/* Splits line into at most LOAD_WORDS words: at blanks, a word that opens
 * with '"' runs to the next '"' (ipset's comment "..."), and '#' or ';'
 * outside quotes ends the line. The count; -1 when there are more, -2 for
 * a quote left open. */
static int split_words(char *line, char *w[LOAD_WORDS])
{
	static const char blank[] = " \t\r\n";
	char *p = line, *q;
	int n = 0;

	for (;;) {
		p += strspn(p, blank);
		if (!*p || *p == '#' || *p == ';')
			return n;
		if (n == LOAD_WORDS)
			return -1;
		if (*p == '"') {
			q = strchr(p + 1, '"');
			if (!q)
				return -2;
			w[n++] = p + 1;
			*q = '\0';
			p = q + 1;
			continue;
		}
		w[n++] = p;
		p += strcspn(p, " \t\r\n#;");
		if (*p == '#' || *p == ';') {
			*p = '\0';
			return n;
		}
		if (*p)
			*p++ = '\0';
	}
}

/* ipset options that take a value (ipset(8), as `ipset save` writes them). */
static const char *const ipset_valued[] = { "timeout", "packets", "bytes", "comment", "skbmark",
					    "skbprio", "skbqueue", NULL };

static bool ipset_takes_value(const char *opt)
{
	for (int i = 0; ipset_valued[i]; i++)
		if (!strcmp(opt, ipset_valued[i]))
			return true;
	return false;
}

/* ipset's options among words w[from..n): `timeout N` (seconds, 0:
 * forever) into *until, `nomatch` into *nomatch; the others read past
 * with their values. */
static int ipset_options(char **w, int from, int n, __u64 *until, bool *nomatch, char *why,
			 size_t len)
{
	__u64 secs;

	for (int i = from; i < n; i++) {
		if (!strcmp(w[i], "nomatch")) {
			*nomatch = true;
			continue;
		}
		if (!ipset_takes_value(w[i])) {
			snprintf(why, len, "word %d is no ipset option ban load knows", i + 1);
			return -1;
		}
		if (i + 1 == n) {
			snprintf(why, len, "ipset option (word %d) without its value", i + 1);
			return -1;
		}
		if (!strcmp(w[i], "timeout")) {
			if (!parse_u64(w[i + 1], 0, SLUICE_BAN_FOR_NS_MAX / SLUICE_NS_PER_SEC,
				       &secs)) {
				snprintf(why, len, "the ipset timeout is not 0 to %llu seconds",
					 SLUICE_BAN_FOR_NS_MAX / SLUICE_NS_PER_SEC);
				return -1;
			}
			*until = secs ? mono_now_ns() + secs * SLUICE_NS_PER_SEC : 0;
		}
		i++;
	}
	return 0;
}

/* Whether ipset set `name` (of line lineno) is to be loaded: the one --set
 * names, or the only one of the input. -1 with why when the input holds
 * two sets and no --set chooses. */
static int ipset_wanted(struct load_ctx *x, const char *name, char *why, size_t len)
{
	if (x->set) {
		if (strcmp(name, x->set) != 0)
			return 0;
		x->set_lines++;
		return 1;
	}
	if (!x->seen[0] && strlen(name) < sizeof(x->seen)) {
		snprintf(x->seen, sizeof(x->seen), "%s", name);
		x->seen_line = x->lineno;
		return 1;
	}
	if (!strcmp(name, x->seen))
		return 1;
	snprintf(why, len, "another ipset set than line %zu's: say which to load with --set NAME",
		 x->seen_line);
	return -1;
}

/* An ipset `add SET ADDR[/LEN] [options]` line: 1 with *at the address's
 * word, 0 for another set's line or an exception, -1 with why. */
static int ipset_add(struct load_ctx *x, char **w, int n, struct load_entry *e, char *why,
		     size_t len)
{
	bool nomatch = false;
	int r;

	if (n < 3) {
		snprintf(why, len, "ipset 'add' without a set and an address");
		return -1;
	}
	r = ipset_wanted(x, w[1], why, len);
	if (r <= 0)
		return r;
	if (ipset_options(w, 3, n, &e->until_ns, &nomatch, why, len))
		return -1;
	if (nomatch) {
		/* An exception carved out of the set: no ban of its own. */
		x->nomatch++;
		return 0;
	}
	return 1;
}

/* One line into *e: 1 for an entry, 0 for none (blank, comment, ipset's
 * create, another set, an exception), -1 with why (which never quotes the
 * line). */
static int parse_line(struct load_ctx *x, char *line, struct load_entry *e, char *why,
		      size_t len)
{
	char *w[LOAD_WORDS], reason[200];
	struct cidr c = { 0 };
	int n = split_words(line, w), at = 0, r;

	memset(e, 0, sizeof(*e));
	if (n < 0) {
		snprintf(why, len, n == -1 ? "more than %d words: not a format ban load reads"
					   : "a double quote that is never closed", LOAD_WORDS);
		return -1;
	}
	if (n == 0 || !strcmp(w[0], "create"))
		return 0;
	if (!strcmp(w[0], "add")) {
		r = ipset_add(x, w, n, e, why, len);
		if (r <= 0)
			return r;
		at = 2;
	} else if (n > 2) {
		snprintf(why, len, "not ADDR[/LEN] [DURATION], ipset save, .netset or DROP");
		return -1;
	} else if (n == 2 && parse_ban_for("duration", w[1], &e->until_ns, reason,
					   sizeof(reason))) {
		snprintf(why, len, "the duration is not 1s to 3650d");
		return -1;
	}
	if (parse_ban_prefix(w[at], &c, reason, sizeof(reason))) {
		snprintf(why, len, "not an address or ADDR/LEN (a prefix without host bits)");
		return -1;
	}
	if (prefix_everything(&c) && !x->force) {
		x->everything = c;
		return -2;
	}
	bantab_key(&c, &e->key);
	return 1;
}

/* Reads every entry of f into s: 0, or an exit status (the bad line
 * named by its number). */
static int read_entries(FILE *f, const char *name, struct load_ctx *x, struct load_set *s)
{
	char *line = NULL, why[300], where[PATH_MAX + 32];
	size_t cap = 0;
	ssize_t got;
	struct load_entry e;
	int r, err = 0, read_errno = 0;

	while ((errno = 0, got = getline(&line, &cap, f)) >= 0) {
		x->lineno++;
		if (memchr(line, '\0', (size_t)got)) {
			err = usage_err("%s:%zu: a NUL byte: ban load reads text; nothing was changed",
					name, x->lineno);
			break;
		}
		/* Only the last line may lack its newline: input cut short (a
		 * download that stopped, a full disk) ends so, and its last
		 * prefix may be cut too ("198.18.5.12" read as "198.18.5.1"). */
		if (line[got - 1] != '\n') {
			err = usage_err("%s:%zu: the last line has no newline at its end: the input looks cut short; nothing was changed",
					name, x->lineno);
			break;
		}
		r = parse_line(x, line, &e, why, sizeof(why));
		if (r == -2) {
			snprintf(where, sizeof(where), "%s:%zu: ", name, x->lineno);
			err = prefix_everything_err(&x->everything, where);
			break;
		}
		if (r < 0) {
			err = usage_err("%s:%zu: %s; nothing was changed", name, x->lineno, why);
			break;
		}
		if (r && set_push(s, &e)) {
			err = runtime_err("out of memory at %s:%zu; nothing was changed", name,
					  x->lineno);
			break;
		}
	}
	read_errno = errno;
	/* getline's -1 is the end of the input only when feof says so: a
	 * read error or no memory for a line ends it too. */
	if (!err && (ferror(f) || !feof(f)))
		err = runtime_err("cannot read %s: %s; nothing was changed", name,
				  strerror(read_errno ? read_errno : EIO));
	if (!err && x->set && !x->set_lines)
		err = usage_err("%s: no ipset 'add %s' line in it; nothing was changed", name, x->set);
	free(line);
	return err;
}

struct ban_load_options {
	const char *list;
	const char *set;
	bool merge;
	bool force;
	bool allow_empty;
};
static const struct ban_load_options ban_load_defaults = { .list = BANTAB_DEFAULT_LIST };
enum { BAN_LOAD_LIST, BAN_LOAD_MERGE, BAN_LOAD_SET, BAN_LOAD_FORCE, BAN_LOAD_ALLOW_EMPTY };
static const struct cli_opt ban_load_opts[] = {
	[BAN_LOAD_LIST] = CLI_STR("list", 0, "NAME", "the list to replace",
				  struct ban_load_options, list),
	[BAN_LOAD_MERGE] = CLI_FLAG("merge", 0, "add to the list instead of replacing it",
				    struct ban_load_options, merge),
	[BAN_LOAD_SET] = CLI_STR("set", 0, "NAME", "of ipset save input, only set NAME's lines",
				 struct ban_load_options, set),
	[BAN_LOAD_FORCE] = CLI_FLAG("force", 0, "load 0.0.0.0/0 or ::/0 (every source) all the same",
				    struct ban_load_options, force),
	[BAN_LOAD_ALLOW_EMPTY] = CLI_FLAG("allow-empty", 0,
					  "let input without a prefix empty a list that holds some",
					  struct ban_load_options, allow_empty),
	CLI_OPT_END,
};

/* Copies trie `from`'s entries into `to`: this list's bans dropped unless
 * merge, every list's expired ones left out, each other list's end kept.
 * Tallies of t counted anew. 0 or -errno. */
static int copy_others(struct bantab *t, int from, int to, int li, bool merge)
{
	struct ban_entry *e;
	__u64 now = mono_now_ns();
	size_t n;
	int err = bantab_read(from, &e, &n);

	for (size_t i = 0; !err && i < n; i++) {
		bantab_end_drop(&e[i].v, bantab_ended(&e[i].v, now) | (merge ? 0 : 1ULL << li));
		if (!e[i].v.lists)
			continue;
		e[i].v.prefixlen = e[i].key.prefixlen;
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
		if (i != li && bantab_list_size(&t->lists[i]))
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
		m->iface, list, (unsigned long long)bantab_list_size(&t->lists[li]), (unsigned long long)before,
		s->n);
	bantab_warn_full(m, t);
	if (!opts.json)
		printf("list %s: %llu prefixes (%llu before), loaded in %.2f s\n", list,
		       (unsigned long long)bantab_list_size(&t->lists[li]), (unsigned long long)before,
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
	const char *path = a->pos[0], *name = strcmp(path, "-") != 0 ? path : "(stdin)";
	struct load_ctx x = { .set = o->set, .force = o->force };
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
	if (o->set && !*o->set)
		return usage_err("bad --set '': an ipset set's name");
	f = strcmp(path, "-") != 0 ? fopen(path, "r") : stdin;
	if (!f)
		return usage_err("cannot read %s: %s", path, strerror(errno));
	err = read_entries(f, name, &x, &s);
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
	before = bantab_list_size(&t.lists[li]);
	if (!s.n && before && !o->merge && !o->allow_empty) {
		err = usage_err("%s holds no prefix while list %s holds %llu (a feed that failed?); nothing was changed: --allow-empty empties the list",
				name, o->list, (unsigned long long)before);
		goto out;
	}
	fd = build(&t, &s, li, o->merge);
	if (fd == -EMLINK) {
		err = runtime_err("%s: a prefix of it is in %u lists already, the most one prefix may be in (ban del --list NAME lets one go); nothing was changed",
				  path, SLUICE_BAN_ENDS);
		goto out;
	}
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
	if (!err && x.nomatch)
		log_event(LOG_NOTICE, "%s: ban load: %zu ipset 'nomatch' exceptions skipped: sluice bans no exceptions, so their addresses stay banned where a loaded prefix covers them",
			  m.iface, x.nomatch);
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
		"step. Lines: ADDR[/LEN] [DURATION]; ipset save's 'add SET ADDR[/LEN] [timeout N]'\n"
		"(one set, or --set NAME's; 'nomatch' exceptions skipped); FireHOL .netset;\n"
		"Spamhaus DROP's 'PREFIX ; SBL...'. '#' and ';' outside quotes start comments.\n"
		"0.0.0.0/0 and ::/0 need --force. A bad line exits 2 naming its number, and\n"
		"nothing changes; so does input cut short (a last line without its newline),\n"
		"and input without a prefix for a list that holds some (a feed that failed)\n"
		"unless --allow-empty.",
};
