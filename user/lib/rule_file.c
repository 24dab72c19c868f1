// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* A whole policy from its file form (policy apply, check and diff, and an
 * attach that re-reads the rules another version saved). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "output.h"
#include "rule.h"

#define WHY_LEN 512
#define UTF8_BOM "\xef\xbb\xbf"
#define UTF8_BOM_LEN 3

/* One line's rule into p, or the error of NAME:LINE. */
static int put_line(struct policy *p, const struct rule *r, enum rule_verb verb,
		    const char *name, unsigned int lineno, unsigned int *def_line,
		    unsigned int *budget_line)
{
	char why[WHY_LEN], label[128];

	switch (verb) {
	case RULE_DEL:
		return usage_err("%s:%u: a policy file lists rules; leave a rule out to delete it",
				 name, lineno);
	case RULE_NEW_SOURCES:
		if (*budget_line)
			return usage_err("%s:%u: second new-sources budget (the first is on line %u)",
					 name, lineno, *budget_line);
		*budget_line = lineno;
		p->new_sources = *r;
		return 0;
	case RULE_DEFAULT:
		if (*def_line)
			return usage_err("%s:%u: second default (the first is on line %u)", name,
					 lineno, *def_line);
		*def_line = lineno;
		p->def = *r;
		p->def.index = SLUICE_POLICY_DEFAULT;
		return 0;
	default:
		break;
	}
	if (policy_find_rule(p, r)) {
		rule_label(r, false, label, sizeof(label));
		return usage_err("%s:%u: %s has a rule already earlier in the file", name, lineno,
				 label);
	}
	if (policy_put(p, r, why, sizeof(why)))
		return usage_err("%s:%u: %s", name, lineno, why);
	return 0;
}

int policy_parse_stream(FILE *f, const char *name, struct policy *p)
{
	unsigned int lineno = 0, def_line = 0, budget_line = 0;
	char why[WHY_LEN], *line = NULL;
	enum rule_verb verb;
	struct rule r;
	size_t cap = 0;
	ssize_t len;
	int n, err = 0;

	policy_init(p);
	while (!err && (len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		/* A UTF-8 byte order mark, as some Windows editors write one, is
		 * no part of the first rule. */
		if (lineno == 1 && len >= UTF8_BOM_LEN && !memcmp(line, UTF8_BOM, UTF8_BOM_LEN)) {
			len -= UTF8_BOM_LEN;
			memmove(line, line + UTF8_BOM_LEN, (size_t)len + 1);
		}
		if (len - (len > 0 && line[len - 1] == '\n') > POLICY_LINE_MAX) {
			err = usage_err("%s:%u: line longer than %d characters", name, lineno,
					POLICY_LINE_MAX);
			break;
		}
		if (strlen(line) != (size_t)len) {
			err = usage_err("%s:%u: a NUL byte: this is not a policy file", name, lineno);
			break;
		}
		n = rule_parse_line(line, &r, &verb, why, sizeof(why));
		if (n < 0)
			err = usage_err("%s:%u: %s", name, lineno, why);
		else if (n > 0)
			err = put_line(p, &r, verb, name, lineno, &def_line, &budget_line);
	}
	if (!err && ferror(f))
		err = runtime_err("cannot read %s: %s", name, strerror(errno));
	free(line);
	return err;
}

int policy_parse_file(const char *path, struct policy *p)
{
	struct stat st;
	FILE *f;
	int err;

	f = fopen(path, "r");
	if (!f)
		return usage_err("cannot read %s: %s", path, strerror(errno));
	if (fstat(fileno(f), &st) || S_ISDIR(st.st_mode)) {
		fclose(f);
		return usage_err("%s is a directory: give a policy file", path);
	}
	err = policy_parse_stream(f, path, p);
	fclose(f);
	return err;
}
