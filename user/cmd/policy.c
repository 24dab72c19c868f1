// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* policy show, apply, check, save and diff: the whole policy of an
 * interface as a file. apply commits the file's policy in one atomic step;
 * save writes the live one where the attach unit reads it at boot; diff says
 * what apply would change. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core.h"
#include "rule.h"
#include "hash.h"

/* The default rule in a few words: a file without one resets it to these. */
static void default_words(const struct rule *def, char *buf, size_t len)
{
	char rate[32];

	if (def->action != SLUICE_ACT_LIMIT) {
		snprintf(buf, len, "%s", def->action == SLUICE_ACT_ALLOW ? "not limited" :
			 action_name(def->action));
		return;
	}
	rule_rate_words(def, rate, sizeof(rate));
	snprintf(buf, len, "limit --rate %s --burst %llu", rate, (unsigned long long)def->burst);
}

/* The live policy as the text policy show prints, malloc'd into *text. */
static int live_text(struct sluice_maps *m, char **text)
{
	struct policy *p;
	size_t need;
	int err = open_policy(m, &p, false);

	if (err)
		return err;
	need = policy_format(p, m->iface, NULL, 0) + 1;
	*text = need ? malloc(need) : NULL;	/* 0: it ran out of memory */
	if (*text)
		policy_format(p, m->iface, *text, need);
	free(p);
	if (!*text) {
		maps_close(m);
		runtime_err("out of memory");
		return EXIT_RUNTIME;	/* a literal: clang-tidy cannot see what runtime_err returns */
	}
	return 0;
}

static int policy_show(const struct cli_cmd *c, struct cli_args *a)
{
	struct sluice_maps m;
	char *text;
	int err = live_text(&m, &text);

	(void)c;
	(void)a;
	if (err)
		return err;
	fputs(text, stdout);
	free(text);
	maps_close(&m);
	return 0;
}

/* What policy check says of a valid file. */
static void check_ok(const char *path, unsigned int rules)
{
	struct json j;

	if (!opts.json) {
		printf("%s: %u rules, valid\n", path, rules);
		return;
	}
	json_begin(&j, stdout);
	json_obj_open(&j, NULL);
	json_str(&j, "file", path);
	json_u64(&j, "rules", rules);
	json_bool(&j, "valid", true);
	json_obj_close(&j);
	json_end(&j);
}

/* policy apply FILE, policy check FILE (id 1: check only). */
static int policy_file(const struct cli_cmd *c, struct cli_args *a)
{
	const char *path = a->pos[0];
	struct sluice_maps m;
	struct policy *next, *cur;
	char def[64];
	int err;

	next = malloc(sizeof(*next));
	if (!next)
		return runtime_err("out of memory");
	err = policy_parse_file(path, next);
	if (err || c->id) {
		if (!err)
			check_ok(path, next->n);
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
	if (!err && !opts.json) {
		default_words(&next->def, def, sizeof(def));
		printf("%s: applied to %s: the default (%s) and %u rule%s\n", path, m.iface, def,
		       next->n, next->n == 1 ? "" : "s");
	}
	free(next);
	maps_close(&m);
	return err;
}

/* Writes text to path by a temporary file renamed over it, so that a crash
 * leaves the old file or the new one, never half of one. */
static int write_whole(const char *path, const char *text)
{
	char tmp[PATH_MAX];
	size_t len = strlen(text);
	int fd, err = 0;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= sizeof(tmp))
		return usage_err("%s: path too long", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return runtime_err("cannot write %s: %s", path, strerror(errno));
	if (write(fd, text, len) != (ssize_t)len || fsync(fd))
		err = errno ? errno : EIO;
	if (close(fd) && !err)
		err = errno;
	if (!err && rename(tmp, path))
		err = errno;
	if (err) {
		unlink(tmp);
		return runtime_err("cannot write %s: %s", path, strerror(err));
	}
	return 0;
}

/* What sluice last wrote to a file it saved, as a digest in a sidecar
 * beside it (".NAME.saved"), so that save can tell its own file from one
 * written or edited by hand. */
static int saved_digest_path(const char *path, char *out, size_t len)
{
	const char *base = strrchr(path, '/');
	int dir = base ? (int)(base - path + 1) : 0;

	if ((size_t)snprintf(out, len, "%.*s.%s.saved", dir, path, base ? base + 1 : path) >= len)
		return usage_err("%s: path too long", path);
	return 0;
}

static __u64 text_digest(const char *text, size_t len)
{
	return hash_bytes(0, text, len);
}

/* Whether the file at path (which exists) is what sluice last saved there,
 * or already holds text: then save may replace it. */
static bool save_may_replace(const char *path, const char *digest_path, const char *text)
{
	unsigned long long want = 0;
	char *old = NULL;
	size_t cap = 0, n = 0;
	bool ok = false;
	FILE *f;

	f = fopen(path, "r");
	if (!f)
		return false;
	n = (size_t)getdelim(&old, &cap, '\0', f);
	if (ferror(f) || !old || strlen(old) != n) {
		fclose(f);
		free(old);
		return false;	/* unreadable, or not text: not sluice's */
	}
	fclose(f);
	if (!strcmp(old, text)) {
		ok = true;
	} else {
		f = fopen(digest_path, "r");
		if (f) {
			ok = fscanf(f, "%16llx", &want) == 1 && want == text_digest(old, n);
			fclose(f);
		}
	}
	free(old);
	return ok;
}

struct save_options {
	bool force;
};
static const struct save_options save_defaults = { .force = false };
static const struct cli_opt save_opts[] = {
	CLI_FLAG("force", 0, "replace FILE even if it is not what policy save last wrote there",
		 struct save_options, force),
	CLI_OPT_END,
};

static int policy_save(const struct cli_cmd *c, struct cli_args *a)
{
	const struct save_options *o = CLI_OPTIONS(a, struct save_options);
	char def_path[PATH_MAX], digest_path[PATH_MAX + 16], digest[24];
	const char *path = a->npos ? a->pos[0] : NULL;
	struct sluice_maps m;
	struct stat st;
	char *text;
	int err;

	(void)c;
	err = live_text(&m, &text);
	if (err)
		return err;
	if (!path) {
		snprintf(def_path, sizeof(def_path), "%s/%s.policy", SLUICE_CONF_DIR, m.iface);
		if (mkdir(SLUICE_CONF_DIR, 0755) && errno != EEXIST) {
			err = runtime_err("cannot create %s: %s", SLUICE_CONF_DIR, strerror(errno));
			goto out;
		}
		path = def_path;
	}
	err = saved_digest_path(path, digest_path, sizeof(digest_path));
	if (err)
		goto out;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		err = usage_err("%s is a directory: give a file to save the policy in", path);
		goto out;
	}
	if (!o->force && access(path, F_OK) == 0 && !save_may_replace(path, digest_path, text)) {
		err = usage_err("%s is not what policy save last wrote there (written or edited by "
				"hand?): keep it and save elsewhere ('policy save FILE'), see "
				"'policy diff %s', or replace it with --force", path, path);
		goto out;
	}
	err = write_whole(path, text);
	snprintf(digest, sizeof(digest), "%016llx\n",
		 (unsigned long long)text_digest(text, strlen(text)));
	if (!err)
		err = write_whole(digest_path, digest);
	if (!err && !opts.json)
		printf("%s: the live policy of %s saved\n", path, m.iface);
out:
	free(text);
	maps_close(&m);
	return err;
}

/* The changes apply would make, as lines "-OLD" and "+NEW", in rule order. */
struct diff {
	struct json j;
	unsigned int added, removed, changed;
};

static void diff_line(struct diff *d, const char *what, char sign, const char *words)
{
	if (opts.json) {
		json_obj_open(&d->j, NULL);
		json_str(&d->j, "change", what);
		json_str(&d->j, "rule", words);
		json_obj_close(&d->j);
	} else {
		printf("%c%s\n", sign, words);
	}
}

/* One pair: the live rule and the file's (either may be NULL). */
static void diff_pair(struct diff *d, const struct rule *live, const struct rule *file,
		      int kind)
{
	char a[RULE_TEXT_MAX] = "", b[RULE_TEXT_MAX] = "";

	if (live && kind == 2)
		budget_format(live, a, sizeof(a));
	else if (live)
		rule_format(live, kind == 1, a, sizeof(a));
	if (file && kind == 2)
		budget_format(file, b, sizeof(b));
	else if (file)
		rule_format(file, kind == 1, b, sizeof(b));
	if (live && file && strcmp(a, b) == 0)
		return;
	if (live && file)
		d->changed++;
	else if (live)
		d->removed++;
	else
		d->added++;
	if (live)
		diff_line(d, file ? "from" : "removed", '-', a);
	if (file)
		diff_line(d, live ? "to" : "added", '+', b);
}

/* The default as a rule, or NULL when it limits nothing (no line prints it). */
static const struct rule *def_rule(const struct policy *p)
{
	return p->def.action == SLUICE_ACT_LIMIT ? &p->def : NULL;
}

static void diff_policies(struct diff *d, struct policy *live, struct policy *file)
{
	qsort(live->rules, live->n, sizeof(live->rules[0]), rule_cmp);
	qsort(file->rules, file->n, sizeof(file->rules[0]), rule_cmp);
	diff_pair(d, def_rule(live), def_rule(file), 1);
	for (unsigned int i = 0, k = 0; i < live->n || k < file->n;) {
		int c = i == live->n ? 1 : k == file->n ? -1 : 0;

		if (!c && !rule_same_identity(&live->rules[i], &file->rules[k]))
			c = rule_cmp(&live->rules[i], &file->rules[k]) < 0 ? -1 : 1;
		diff_pair(d, c <= 0 ? &live->rules[i] : NULL, c >= 0 ? &file->rules[k] : NULL, 0);
		i += c <= 0;
		k += c >= 0;
	}
	diff_pair(d, &live->new_sources, &file->new_sources, 2);
}

static int policy_diff(const struct cli_cmd *c, struct cli_args *a)
{
	const char *path = a->pos[0];
	struct diff d = { 0 };
	struct sluice_maps m;
	struct policy *file, *live;
	int err;

	(void)c;
	file = malloc(sizeof(*file));
	if (!file)
		return runtime_err("out of memory");
	err = policy_parse_file(path, file);
	if (!err)
		err = open_policy(&m, &live, false);
	if (err) {
		free(file);
		return err;
	}
	if (opts.json) {
		json_begin(&d.j, stdout);
		json_obj_open(&d.j, NULL);
		json_str(&d.j, "interface", m.iface);
		json_str(&d.j, "file", path);
		json_arr_open(&d.j, "changes");
	}
	diff_policies(&d, live, file);
	if (opts.json) {
		json_arr_close(&d.j);
		json_u64(&d.j, "added", d.added);
		json_u64(&d.j, "removed", d.removed);
		json_u64(&d.j, "changed", d.changed);
		json_obj_close(&d.j);
		json_end(&d.j);
	} else if (d.added + d.removed + d.changed == 0) {
		printf("# %s: policy apply would change nothing on %s\n", path, m.iface);
	} else {
		printf("# %s: policy apply would add %u, remove %u and change %u on %s\n", path,
		       d.added, d.removed, d.changed, m.iface);
	}
	free(live);
	free(file);
	maps_close(&m);
	return 0;
}

static const struct cli_cmd policy_apply_cmd = {
	.name = "apply", .path = "policy apply", .args = "FILE", .min_pos = 1, .max_pos = 1,
	.json_quiet = true, .run = policy_file, .id = 0,
	.help = "Replaces the whole policy with FILE's, atomically; a FILE with one bad line is\n"
		"refused whole. One rule a line, the words of limit default/set, allow and deny\n"
		"without 'sluice'; '#' starts a comment.",
};
static const struct cli_cmd policy_check_cmd = {
	.name = "check", .path = "policy check", .args = "FILE", .min_pos = 1, .max_pos = 1,
	.json = true, .run = policy_file, .id = 1,
	.help = "Validates FILE as policy apply would, and changes nothing.",
};
static const struct cli_cmd policy_show_cmd = {
	.name = "show", .path = "policy show", .run = policy_show,
	.no_json = "it prints a policy file; see 'limit list -j'",
	.help = "Prints the live policy as a file: policy apply of it gives the same policy.",
};
static const struct cli_cmd policy_save_cmd = {
	.name = "save", .path = "policy save", .args = "[FILE]", .max_pos = 1,
	.opts = save_opts, .json_quiet = true, .run = policy_save, CLI_DEFAULTS(save_defaults),
	.help = "Writes the live policy, as policy show prints it, to FILE (default\n"
		SLUICE_CONF_DIR "/IFACE.policy, which the attach unit applies at boot), so\n"
		"that CLI edits survive a reboot. The file is replaced whole; its comments go.\n"
		"A FILE that is not what policy save last wrote there (a digest of it is kept\n"
		"in .FILE.saved beside it) is refused without --force.",
};
static const struct cli_cmd policy_diff_cmd = {
	.name = "diff", .path = "policy diff", .args = "FILE", .min_pos = 1, .max_pos = 1,
	.json = true, .run = policy_diff,
	.help = "Prints what policy apply FILE would change: -LIVE and +FILE lines for each\n"
		"rule removed, added or changed (the default and the new-source budget too),\n"
		"then a count. Changes nothing.",
};

static const struct cli_cmd *const policy_cmds[] = {
	&policy_apply_cmd, &policy_check_cmd, &policy_show_cmd, &policy_save_cmd,
	&policy_diff_cmd, NULL,
};

const struct cli_cmd policy_obj = {
	.name = "policy", .path = "policy", .sub = policy_cmds,
	.help = "A policy file holds the words of the rule commands, one rule a line.",
};
