// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The command-line grammar: commands select by word from tables, options
 * parse by their table, and usage and --help are printed from the same
 * tables, so what is accepted and what is documented cannot drift apart. */
#include <string.h>
#include "opts.h"
#include "output.h"
#include "parse.h"
#include "cli.h"

#define CLI_LABEL_MAX	128	/* "--name", or a group's names: "--a, --b or --c" */

bool cli_is_help(const char *arg)
{
	return !strcmp(arg, "-h") || !strcmp(arg, "--help");
}

static bool opt_here(const struct cli_cmd *c, const struct cli_opt *o)
{
	return !o->only || !c->on || (o->only & c->on);
}

static bool opt_end(const struct cli_opt *o)
{
	return !o->name && !o->short_name;
}

int cli_opt_index(const struct cli_cmd *c, const char *name)
{
	for (int i = 0; c->opts && !opt_end(&c->opts[i]); i++)
		if (c->opts[i].name && !strcmp(c->opts[i].name, name))
			return i;
	return -1;
}

/* Whether c requires o (alone, or one of its group). */
static bool opt_needed(const struct cli_cmd *c, const struct cli_opt *o)
{
	return opt_here(c, o) && o->need && (!c->on || (o->need & c->on));
}

/* Shown in c's usage and --help: taken here, and neither refused nor
 * left for later. */
static bool opt_shown(const struct cli_cmd *c, const struct cli_opt *o)
{
	return opt_here(c, o) && !o->later && !o->refuse;
}

/* "--name" or "-n", as the user would write it. */
static void opt_label(const struct cli_opt *o, char *buf, size_t len)
{
	if (o->name)
		snprintf(buf, len, "--%s", o->name);
	else
		snprintf(buf, len, "-%c", o->short_name);
}

/* The table entry a word names (its value may follow '=' or, for a short
 * option, the letter); *inline_val is set when it does. Also finds entries
 * this command does not take, so the error can say so. */
static int find_opt(const struct cli_cmd *c, const char *w, const char **inline_val)
{
	const char *eq;
	int found = -1;
	size_t n;

	*inline_val = NULL;
	if (!c->opts)
		return -1;
	if (w[1] == '-') {
		eq = strchr(w + 2, '=');
		n = eq ? (size_t)(eq - (w + 2)) : strlen(w + 2);
		/* The entry this command takes, when entries share a name. */
		for (int i = 0; !opt_end(&c->opts[i]); i++) {
			const char *name = c->opts[i].name;

			if (name && strlen(name) == n && !strncmp(name, w + 2, n) &&
			    (found < 0 || opt_here(c, &c->opts[i]))) {
				*inline_val = eq ? eq + 1 : NULL;
				found = i;
				if (opt_here(c, &c->opts[i]))
					break;
			}
		}
		return found;
	}
	for (int i = 0; !opt_end(&c->opts[i]); i++)
		if (c->opts[i].short_name && c->opts[i].short_name == w[1]) {
			if (w[2])
				*inline_val = w + 2;
			return i;
		}
	return -1;
}

/* Whether an option of group g that c takes was given. */
static bool group_given(const struct cli_cmd *c, const struct cli_args *a, unsigned char g)
{
	for (int i = 0; !opt_end(&c->opts[i]); i++)
		if (c->opts[i].group == g && opt_here(c, &c->opts[i]) && a->val[i])
			return true;
	return false;
}

/* "--trace or --pattern", "--rate, --bytes or --requests": the options of
 * group g that c shows, with their values' metavariables when args. */
static void group_words(const struct cli_cmd *c, unsigned char g, bool args, char *buf,
			size_t len)
{
	const struct cli_opt *o = c->opts;
	size_t n = 0;
	int k = 0, total = 0;

	for (int i = 0; !opt_end(&o[i]); i++)
		total += o[i].group == g && opt_shown(c, &o[i]);
	buf[0] = 0;
	for (int i = 0; !opt_end(&o[i]) && n < len; i++) {
		if (o[i].group != g || !opt_shown(c, &o[i]))
			continue;
		k++;
		n += (size_t)snprintf(buf + n, len - n, "%s--%s%s%s",
				      k == 1 ? "" : k == total ? " or " : ", ", o[i].name,
				      args && o[i].arg ? " " : "", args && o[i].arg ? o[i].arg : "");
	}
}

/* "give --a or --b, not both", "give one of --a, --b or --c". */
static void group_conflict(const struct cli_cmd *c, unsigned char g, char *why, size_t len)
{
	char names[CLI_LABEL_MAX];
	bool two;

	group_words(c, g, false, names, sizeof(names));
	two = !strchr(names, ',');
	snprintf(why, len, "give %s%s%s: see 'sluice %s --help'", two ? "" : "one of ", names,
		 two ? ", not both" : "", c->path);
}

/* Every option c requires, alone or one of its group, was given. */
static int check_needed(const struct cli_cmd *c, const struct cli_args *a, char *why, size_t len)
{
	char words[CLI_LABEL_MAX * 4];

	for (int i = 0; c->opts && !opt_end(&c->opts[i]); i++) {
		const struct cli_opt *o = &c->opts[i];

		if (!opt_needed(c, o) || a->val[i] || (o->group && group_given(c, a, o->group)))
			continue;
		if (o->group) {
			group_words(c, o->group, true, words, sizeof(words));
			snprintf(why, len, "give %s: see 'sluice %s --help'", words, c->path);
		} else {
			opt_label(o, words, sizeof(words));
			snprintf(why, len, "missing %s%s%s: see 'sluice %s --help'", words,
				 o->arg ? " " : "", o->arg ? o->arg : "", c->path);
		}
		return -1;
	}
	return 0;
}

int cli_parse(const struct cli_cmd *c, int argc, char **argv, struct cli_args *a,
	      char *why, size_t len)
{
	bool only_pos = false;
	char label[CLI_LABEL_MAX];

	memset(a, 0, sizeof(*a));
	for (int i = 0; i < argc; i++) {
		const char *w = argv[i], *val;
		const struct cli_opt *o;
		int k;

		if (!only_pos && !strcmp(w, "--")) {
			only_pos = true;
			continue;
		}
		if (only_pos || w[0] != '-' || !w[1]) {
			if (a->npos >= c->max_pos || a->npos >= CLI_POS_MAX) {
				snprintf(why, len, "unexpected argument '%s': see 'sluice %s --help'",
					 w, c->path);
				return -1;
			}
			a->pos[a->npos++] = argv[i];
			continue;
		}
		k = find_opt(c, w, &val);
		if (k < 0) {
			snprintf(why, len, "unknown option '%s': see 'sluice %s --help'", w, c->path);
			return -1;
		}
		o = &c->opts[k];
		opt_label(o, label, sizeof(label));
		if (!opt_here(c, o)) {
			snprintf(why, len, "%s takes no %s: see 'sluice %s --help'", c->path, label,
				 c->path);
			return -1;
		}
		if (o->later) {
			snprintf(why, len, "%s is not supported yet: %s", label, o->later);
			return -1;
		}
		if (o->refuse) {
			snprintf(why, len, "%s takes no %s: %s", c->path, label, o->refuse);
			return -1;
		}
		if (a->val[k]) {
			snprintf(why, len, "%s given twice: give it once", label);
			return -1;
		}
		if (o->group && group_given(c, a, o->group)) {
			group_conflict(c, o->group, why, len);
			return -1;
		}
		if (!o->arg) {
			if (val) {
				snprintf(why, len, "%s takes no value, got '%s'", label, w);
				return -1;
			}
			a->val[k] = "";
			continue;
		}
		if (!val) {
			if (i + 1 >= argc) {
				snprintf(why, len, "%s needs a value: %s %s", label, label, o->arg);
				return -1;
			}
			val = argv[++i];
		}
		a->val[k] = val;
	}
	if (a->npos < c->min_pos) {
		snprintf(why, len, "%s needs %s: see 'sluice %s --help'", c->path,
			 c->args ? c->args : "more arguments", c->path);
		return -1;
	}
	return check_needed(c, a, why, len);
}

/* "native, skb or auto": an enum's words, for its error. */
static void words_list(const char *const *w, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (int i = 0; w[i] && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i == 0 ? "" : w[i + 1] ? ", " : " or ",
				      w[i]);
}

/* One typed value into its field; false when it is out of its bounds. */
static bool fill_one(const struct cli_opt *o, const char *val, unsigned char *field)
{
	bool yes = true;
	__u64 v;
	__u32 v32;

	switch (o->type) {
	case CLI_T_FLAG:
		memcpy(field, &yes, sizeof(yes));
		return true;
	case CLI_T_STR:
		memcpy(field, &val, sizeof(val));
		return true;
	case CLI_T_U32:
		if (!parse_u64(val, o->min, o->max, &v))
			return false;
		v32 = (__u32)v;
		memcpy(field, &v32, sizeof(v32));
		return true;
	case CLI_T_U64:
		if (!parse_u64(val, o->min, o->max, &v))
			return false;
		memcpy(field, &v, sizeof(v));
		return true;
	case CLI_T_ENUM:
		for (int i = 0; o->words[i]; i++)
			if (!strcmp(val, o->words[i])) {
				memcpy(field, &i, sizeof(i));
				return true;
			}
		return false;
	case CLI_T_NONE:
		break;
	}
	return true;
}

int cli_fill(const struct cli_cmd *c, struct cli_args *a, char *why, size_t len)
{
	char label[32], words[128];

	memset(a->obj, 0, sizeof(a->obj));
	if (c->defaults && c->defaults_size <= sizeof(a->obj))
		memcpy(a->obj, c->defaults, c->defaults_size);
	for (int i = 0; c->opts && !opt_end(&c->opts[i]); i++) {
		const struct cli_opt *o = &c->opts[i];

		if (!a->val[i] || o->type == CLI_T_NONE || fill_one(o, a->val[i], a->obj + o->off))
			continue;
		opt_label(o, label, sizeof(label));
		if (o->type == CLI_T_ENUM) {
			words_list(o->words, words, sizeof(words));
			snprintf(why, len, "bad %s '%s': give %s", label, a->val[i], words);
		} else {
			snprintf(why, len, "bad %s '%s': give %llu..%llu%s%s", label, a->val[i],
				 (unsigned long long)o->min, (unsigned long long)o->max,
				 o->unit ? " " : "", o->unit ? o->unit : "");
		}
		return -1;
	}
	return 0;
}

/* "--name ARG" or "--name". */
static void put_opt(FILE *f, const struct cli_opt *o)
{
	char label[CLI_LABEL_MAX];

	opt_label(o, label, sizeof(label));
	fprintf(f, "%s%s%s", label, o->arg ? " " : "", o->arg ? o->arg : "");
}

/* Option i of c in the usage line: " --a X" when required, " [--a X]"
 * when not; a group at its first entry, " (--a X | --b Y)" or
 * " [--a X | --b Y]", and not again at the others. */
static void usage_opt(FILE *f, const struct cli_cmd *c, int i)
{
	const struct cli_opt *o = c->opts;
	bool need = false, first = true;

	if (!o[i].group) {
		fputs(opt_needed(c, &o[i]) ? " " : " [", f);
		put_opt(f, &o[i]);
		fputs(opt_needed(c, &o[i]) ? "" : "]", f);
		return;
	}
	for (int k = 0; k < i; k++)
		if (o[k].group == o[i].group && opt_shown(c, &o[k]))
			return;
	for (int k = i; !opt_end(&o[k]); k++)
		need |= o[k].group == o[i].group && opt_needed(c, &o[k]);
	need |= c->args_group == o[i].group;
	fputs(need ? " (" : " [", f);
	if (c->args_group == o[i].group && c->args) {
		fputs(c->args, f);
		first = false;
	}
	for (int k = i; !opt_end(&o[k]); k++) {
		if (o[k].group != o[i].group || !opt_shown(c, &o[k]))
			continue;
		fputs(first ? "" : " | ", f);
		put_opt(f, &o[k]);
		first = false;
	}
	fputs(need ? ")" : "]", f);
}

void cli_usage_line(FILE *f, const struct cli_cmd *c)
{
	fprintf(f, "sluice %s", c->path);
	if (c->sub) {
		fputs(" COMMAND ...", f);
		return;
	}
	if (c->args && !c->args_group)
		fprintf(f, " %s", c->args);
	if (c->json || c->json_quiet)
		fputs(" [-j]", f);
	for (int i = 0; c->opts && !opt_end(&c->opts[i]); i++)
		if (opt_shown(c, &c->opts[i]))
			usage_opt(f, c, i);
}

/* Lines of text, each indented. */
static void put_indented(FILE *f, const char *text, const char *indent)
{
	while (text && *text) {
		const char *nl = strchr(text, '\n');
		size_t n = nl ? (size_t)(nl - text) : strlen(text);

		fprintf(f, "%s%.*s\n", indent, (int)n, text);
		text += n + (nl ? 1 : 0);
	}
}

/* A typed option's bounds and default, from its entry and the command's
 * defaults constant: " (1024..16777216 sources, default 262144)". */
static void put_typed(FILE *f, const struct cli_cmd *c, const struct cli_opt *o)
{
	const unsigned char *def = c->defaults && o->off < c->defaults_size ?
				   (const unsigned char *)c->defaults + o->off : NULL;
	const char *str = NULL;
	__u64 v = 0;
	__u32 v32;
	int k = -1;

	switch (o->type) {
	case CLI_T_U32:
	case CLI_T_U64:
		if (def && o->type == CLI_T_U32) {
			memcpy(&v32, def, sizeof(v32));
			v = v32;
		} else if (def) {
			memcpy(&v, def, sizeof(v));
		}
		fprintf(f, " (%llu..%llu%s%s", (unsigned long long)o->min,
			(unsigned long long)o->max, o->unit ? " " : "", o->unit ? o->unit : "");
		if (v)
			fprintf(f, ", default %llu", (unsigned long long)v);
		fputc(')', f);
		break;
	case CLI_T_ENUM:
		if (def)
			memcpy(&k, def, sizeof(k));
		if (k >= 0)
			fprintf(f, " (default %s)", o->words[k]);
		break;
	case CLI_T_STR:
		if (def)
			memcpy(&str, def, sizeof(str));
		if (str)
			fprintf(f, " (default '%s')", str);
		break;
	case CLI_T_FLAG:
	case CLI_T_NONE:
		break;
	}
}

void cli_help(FILE *f, const struct cli_cmd *c)
{
	char label[64];
	bool any = false;

	if (c->sub) {
		fprintf(f, "Usage: sluice %s%sCOMMAND ...\n", c->path, *c->path ? " " : "");
		for (const struct cli_cmd *const *s = c->sub; *s; s++) {
			fputs("       ", f);
			cli_usage_line(f, *s);
			fputc('\n', f);
		}
		put_indented(f, c->help, "  ");
		return;
	}
	fputs("Usage: ", f);
	cli_usage_line(f, c);
	fputc('\n', f);
	put_indented(f, c->help, "  ");
	for (int i = 0; c->opts && !opt_end(&c->opts[i]); i++) {
		const struct cli_opt *o = &c->opts[i];

		if (!opt_here(c, o) || o->refuse)
			continue;
		if (!any)
			fputs("Options:\n", f);
		any = true;
		opt_label(o, label, sizeof(label));
		if (o->arg) {
			size_t n = strlen(label);

			snprintf(label + n, sizeof(label) - n, " %s", o->arg);
		}
		fprintf(f, "  %-30s %s", label, o->help);
		put_typed(f, c, o);
		if (opt_needed(c, o) && !o->group)
			fputs(" (required)", f);
		fprintf(f, "%s%s\n", o->later ? ": not supported yet, " : "", o->later ? o->later : "");
	}
	if (c->json)
		fprintf(f, "  %-30s %s\n", "-j, --json", "print JSON");
	else if (c->json_quiet)
		fprintf(f, "  %-30s %s\n", "-j, --json", "print nothing on success, an error as JSON");
}

const struct cli_cmd *cli_find(const struct cli_cmd *obj, const char *word)
{
	for (const struct cli_cmd *const *s = obj->sub; s && *s; s++)
		if (!strcmp((*s)->name, word))
			return *s;
	return NULL;
}

static bool wants_help(int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			return false;
		if (cli_is_help(argv[i]))
			return true;
	}
	return false;
}

int cli_dispatch(const struct cli_cmd *obj, int argc, char **argv)
{
	const struct cli_cmd *c;
	struct cli_args a;
	char why[512];

	if (argc < 2) {
		cli_help(stderr, obj);
		return EXIT_USAGE;
	}
	if (cli_is_help(argv[1]) || (!strcmp(argv[1], "help") && !cli_find(obj, "help"))) {
		if (argc > 2)
			return usage_err("unexpected argument '%s': see 'sluice %s%shelp'", argv[2],
					 obj->path, *obj->path ? " " : "");
		cli_help(stdout, obj);
		return 0;
	}
	c = cli_find(obj, argv[1]);
	if (!c) {
		if (argv[1][0] == '-')
			return usage_err("unknown option '%s': see 'sluice %s%shelp'", argv[1],
					 obj->path, *obj->path ? " " : "");
		if (!*obj->path)
			return usage_err("unknown command '%s': see 'sluice help'", argv[1]);
		return usage_err("unknown %s command '%s': see 'sluice %s --help'", obj->path,
				 argv[1], obj->path);
	}
	if (c->sub)
		return cli_dispatch(c, argc - 1, argv + 1);
	if (wants_help(argc - 2, argv + 2)) {
		cli_help(stdout, c);
		return 0;
	}
	if (opts.json && !c->json && !c->json_quiet)
		return usage_err("%s has no JSON output: drop -j%s%s%s", c->path,
				 c->no_json ? " (" : "", c->no_json ? c->no_json : "",
				 c->no_json ? ")" : "");
	if (cli_parse(c, argc - 2, argv + 2, &a, why, sizeof(why)) ||
	    cli_fill(c, &a, why, sizeof(why)))
		return usage_err("%s", why);
	return c->run(c, &a);
}
