// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* limit, allow, deny, policy: editing the policy of an attached interface.
 * Every edit is validated whole, then committed to the inactive slot and
 * switched to atomically; a rejected edit changes nothing. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "sluice.h"

#define WHY_LEN 256
#define POLICY_LINE_MAX 1024	/* characters, newline included */
#define POLICY_WORDS_MAX 16

static int policy_end(struct sluice_maps *m, struct policy *p, bool commit)
{
	int err = commit ? policy_commit(m, p) : 0;

	free(p);
	maps_close(m);
	return err;
}

/* Apply one edit given as words (CLI argv from the object name on). */
static int edit_words(int argc, char **argv)
{
	char why[WHY_LEN], cidr[64];
	struct sluice_maps m;
	struct policy *p;
	bool is_default, is_del;
	struct rule r;
	int err;

	if (parse_rule_words(argc, argv, &r, &is_default, &is_del, why, sizeof(why)))
		return usage_err("%s", why);
	err = open_policy(&m, &p, true);
	if (err)
		return err;
	rule_cidr_str(&r, cidr, sizeof(cidr));
	if (is_default) {
		p->def.action = r.action;
		p->def.rate = r.rate;
		p->def.burst = r.burst;
	} else if (is_del) {
		struct rule *old = policy_find(p, &r.cidr);

		if (!old) {
			policy_end(&m, p, false);
			return usage_err("no rule for %s: see 'sluice limit list'", cidr);
		}
		*old = p->rules[--p->n];
	} else if (policy_put(p, &r, why, sizeof(why))) {
		policy_end(&m, p, false);
		return usage_err("%s", why);
	}
	err = policy_end(&m, p, true);
	if (!err && !opts.json) {
		if (is_default)
			printf("default: limit %llu/s burst %llu\n",
			       (unsigned long long)r.rate, (unsigned long long)r.burst);
		else if (is_del)
			printf("%s: rule deleted\n", cidr);
		else if (r.action == SLUICE_ACT_LIMIT)
			printf("%s: limit %llu/s burst %llu\n", cidr,
			       (unsigned long long)r.rate, (unsigned long long)r.burst);
		else
			printf("%s: %s\n", cidr, action_name(r.action));
	}
	return err;
}

static int rule_cmp(const void *a, const void *b)
{
	const struct rule *x = a, *y = b;
	bool xv4 = addr_is_v4(&x->cidr.addr), yv4 = addr_is_v4(&y->cidr.addr);
	int c;

	if (xv4 != yv4)
		return xv4 ? -1 : 1;
	c = memcmp(&x->cidr.addr, &y->cidr.addr, sizeof(x->cidr.addr));
	if (c)
		return c;
	return (int)x->cidr.prefixlen - (int)y->cidr.prefixlen;
}

static void list_one_json(struct json *j, const char *cidr, const struct rule *r,
			  const struct sluice_policy_counter *pc)
{
	json_obj_open(j, NULL);
	json_str(j, "cidr", cidr);
	json_str(j, "action", action_name(r->action));
	json_u64(j, "rate", r->rate);
	json_u64(j, "burst", r->burst);
	json_u64(j, "passed", pc->pass_packets);
	json_u64(j, "dropped", pc->drop_packets);
	json_obj_close(j);
}

static void list_one_text(const char *cidr, const struct rule *r,
			  const struct sluice_policy_counter *pc)
{
	char rate[24] = "-", burst[24] = "-";

	if (r->action == SLUICE_ACT_LIMIT) {
		snprintf(rate, sizeof(rate), "%llu", (unsigned long long)r->rate);
		snprintf(burst, sizeof(burst), "%llu", (unsigned long long)r->burst);
	}
	printf("%-43s %-6s %12s %12s %14llu %14llu\n", cidr, action_name(r->action),
	       rate, burst, (unsigned long long)pc->pass_packets,
	       (unsigned long long)pc->drop_packets);
}

static int limit_list(int argc, char **argv)
{
	struct sluice_policy_counter pc;
	struct sluice_maps m;
	struct policy *p;
	struct json j;
	char cidr[64];
	int err;

	if (argc > 1)
		return usage_err("unexpected argument '%s': usage: sluice limit list [-j]", argv[1]);
	err = open_policy(&m, &p, false);
	if (err)
		return err;
	qsort(p->rules, p->n, sizeof(p->rules[0]), rule_cmp);

	if (opts.json) {
		json_begin(&j, stdout);
		json_arr_open(&j, NULL);
	} else {
		printf("%-43s %-6s %12s %12s %14s %14s\n", "CIDR", "ACTION", "RATE/S",
		       "BURST", "PASSED", "DROPPED");
	}
	for (unsigned int i = 0; i <= p->n && !err; i++) {
		const struct rule *r = i == 0 ? &p->def : &p->rules[i - 1];

		err = read_policy_counter(&m, r->index, &pc);
		if (err)
			break;
		if (i == 0)
			snprintf(cidr, sizeof(cidr), "default");
		else
			rule_cidr_str(r, cidr, sizeof(cidr));
		if (opts.json)
			list_one_json(&j, cidr, r, &pc);
		else
			list_one_text(cidr, r, &pc);
	}
	if (opts.json) {
		json_arr_close(&j);
		json_end(&j);
	}
	free(p);
	maps_close(&m);
	return err;
}

static const char limit_usage[] =
	"limit { default --rate PPS [--burst N] | set CIDR --rate PPS [--burst N] |\n"
	"                del CIDR | list [-j] }";

int cmd_limit(int argc, char **argv)
{
	if (argc < 2 || is_help(argv[1]) || (argc > 2 && is_help(argv[argc - 1]))) {
		FILE *f = argc < 2 ? stderr : stdout;

		fprintf(f, "Usage: sluice %s\n"
			"  PPS is packets per second (%llu..%llu); burst defaults to PPS.\n",
			limit_usage, SLUICE_RATE_MIN, SLUICE_RATE_MAX);
		return argc < 2 ? EXIT_USAGE : 0;
	}
	if (!strcmp(argv[1], "list"))
		return limit_list(argc - 1, argv + 1);
	return edit_words(argc, argv);
}

int cmd_allow(int argc, char **argv)
{
	if (argc == 2 && is_help(argv[1])) {
		printf("Usage: sluice allow CIDR\n  Sources in CIDR are never limited.\n");
		return 0;
	}
	return edit_words(argc, argv);
}

int cmd_deny(int argc, char **argv)
{
	if (argc == 2 && is_help(argv[1])) {
		printf("Usage: sluice deny CIDR\n  Packets from CIDR are always dropped.\n");
		return 0;
	}
	return edit_words(argc, argv);
}

/* Split a line into words in place; '#' starts a comment. */
static int split_words(char *line, char **words, int max)
{
	int n = 0;
	char *s = line;

	for (;;) {
		while (isspace((unsigned char)*s))
			s++;
		if (!*s || *s == '#')
			break;
		if (n == max)
			return -1;
		words[n++] = s;
		while (*s && !isspace((unsigned char)*s) && *s != '#')
			s++;
		if (*s == '#') {
			*s = '\0';
			break;
		}
		if (*s)
			*s++ = '\0';
	}
	return n;
}

/* Parse a whole policy file into p; on error prints "FILE:LINE: why". */
static int parse_policy_file(const char *path, struct policy *p)
{
	char why[WHY_LEN], cidr[64], *line = NULL;
	char *words[POLICY_WORDS_MAX];
	unsigned int lineno = 0, def_line = 0;
	bool is_default, is_del;
	struct stat st;
	struct rule r;
	size_t cap = 0;
	ssize_t len;
	int n, err = 0;
	FILE *f;

	f = fopen(path, "r");
	if (!f)
		return usage_err("cannot read %s: %s", path, strerror(errno));
	if (fstat(fileno(f), &st) || S_ISDIR(st.st_mode)) {
		fclose(f);
		return usage_err("%s is a directory: give a policy file", path);
	}
	policy_init(p);
	while (!err && (len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if (len > POLICY_LINE_MAX) {
			err = usage_err("%s:%u: line longer than %d characters", path, lineno,
					POLICY_LINE_MAX);
			break;
		}
		if (strlen(line) != (size_t)len) {
			err = usage_err("%s:%u: a NUL byte: this is not a policy file", path, lineno);
			break;
		}
		n = split_words(line, words, POLICY_WORDS_MAX);
		if (n == 0)
			continue;
		if (n < 0 || parse_rule_words(n, words, &r, &is_default, &is_del,
					      why, sizeof(why))) {
			err = usage_err("%s:%u: %s", path, lineno, n < 0 ? "too many words" : why);
		} else if (is_del) {
			err = usage_err("%s:%u: a policy file lists rules; leave a rule out to delete it",
					path, lineno);
		} else if (is_default) {
			if (def_line)
				err = usage_err("%s:%u: second default (the first is on line %u)",
						path, lineno, def_line);
			def_line = lineno;
			p->def.action = r.action;
			p->def.rate = r.rate;
			p->def.burst = r.burst;
		} else if (policy_find(p, &r.cidr)) {
			rule_cidr_str(&r, cidr, sizeof(cidr));
			err = usage_err("%s:%u: %s has a rule already earlier in the file",
					path, lineno, cidr);
		} else if (policy_put(p, &r, why, sizeof(why))) {
			err = usage_err("%s:%u: %s", path, lineno, why);
		}
	}
	if (!err && ferror(f))
		err = runtime_err("cannot read %s: %s", path, strerror(errno));
	free(line);
	fclose(f);
	return err;
}

static void dump_rule(const char *prefix, const struct rule *r, const char *cidr)
{
	if (r->action == SLUICE_ACT_LIMIT)
		printf("limit %s%s --rate %llu --burst %llu\n", prefix, cidr,
		       (unsigned long long)r->rate, (unsigned long long)r->burst);
	else
		printf("%s %s\n", action_name(r->action), cidr);
}

static int policy_show(void)
{
	struct sluice_maps m;
	struct policy *p;
	char cidr[64];
	int err = open_policy(&m, &p, false);

	if (err)
		return err;
	qsort(p->rules, p->n, sizeof(p->rules[0]), rule_cmp);
	printf("# sluice policy of %s\n", m.iface);
	if (p->def.action == SLUICE_ACT_LIMIT)
		dump_rule("", &p->def, "default");
	else
		printf("# default: not limited\n");
	for (unsigned int i = 0; i < p->n; i++) {
		rule_cidr_str(&p->rules[i], cidr, sizeof(cidr));
		dump_rule("set ", &p->rules[i], cidr);
	}
	return policy_end(&m, p, false);
}

static const char policy_usage[] = "policy { apply FILE | check FILE | show }";

int cmd_policy(int argc, char **argv)
{
	struct sluice_maps m;
	struct policy *next, *cur;
	int err;

	for (int i = 1; i < argc; i++)
		if (is_help(argv[i]))
			argc = -1;
	if (argc < 0) {
		printf("Usage: sluice %s\n"
		       "  apply replaces the whole policy with FILE's, atomically;\n"
		       "  check only validates FILE; show prints the live policy as a file.\n",
		       policy_usage);
		return 0;
	}
	if (argc < 2)
		return usage_err("policy needs apply, check or show: usage: sluice %s", policy_usage);
	if (!strcmp(argv[1], "show")) {
		if (argc > 2)
			return usage_err("unexpected argument '%s': usage: sluice %s", argv[2],
					 policy_usage);
		return policy_show();
	}
	if (strcmp(argv[1], "apply") != 0 && strcmp(argv[1], "check") != 0)
		return usage_err("unknown policy command '%s': usage: sluice %s", argv[1],
				 policy_usage);
	if (argc < 3)
		return usage_err("policy %s needs a FILE: usage: sluice %s", argv[1], policy_usage);
	if (argc > 3)
		return usage_err("unexpected argument '%s': usage: sluice %s", argv[3],
				 policy_usage);

	next = malloc(sizeof(*next));
	if (!next)
		return runtime_err("out of memory");
	policy_init(next);
	err = parse_policy_file(argv[2], next);
	if (err || !strcmp(argv[1], "check")) {
		if (!err)
			printf("%s: %u rules, valid\n", argv[2], next->n);
		free(next);
		return err;
	}
	err = open_policy(&m, &cur, true);
	if (err) {
		free(next);
		return err;
	}
	free(cur);
	err = policy_commit(&m, next);
	if (!err)
		printf("%s: applied %u rules to %s\n", argv[2], next->n, m.iface);
	free(next);
	maps_close(&m);
	return err;
}
