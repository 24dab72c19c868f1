// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer target: the policy-file parser, driven as `sluice policy check
 * FILE` (user/cmd/limit.c, through the CLI's own dispatch) on a file holding the
 * input. It must answer as the CLI contract says: exit 0 with one line on
 * stdout, or exit 2 with one line on stderr naming the file and line. A
 * model here, doc/policy.rst's rules for policy files applied line by line
 * with rule_parse_line, must agree on valid or not, on the first bad line
 * and on the number of rules; and a valid file written out again as
 * `policy show` writes a policy must be valid with as many rules. */
#include "fuzz.h"
#include <sys/mman.h>
#include <unistd.h>
#include "cli.h"
#include "rule.h"
#include "commands.h"

#define LINE_MAX_CHARS	1022	/* a policy line, without its newline (doc/policy.rst) */

static int file_fd = -1, show_fd = -1;
static char file_path[64], show_path[64];

static void put_file(int fd, const void *data, size_t size)
{
	if (ftruncate(fd, 0) || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		abort();
}

/* `sluice policy check PATH`: its exit code and what it printed. */
static int policy_check(const char *path, struct fuzz_capture *cap)
{
	char *argv[] = { "policy", "check", (char *)path, NULL };
	int rc;

	capture_begin(cap);
	rc = cli_dispatch(&policy_obj, 3, argv);
	capture_end(cap);
	return rc;
}

/* The CLI's contract for one run: 0 with "PATH: N rules, valid", or 2 with
 * one "sluice: PATH:..." line. *n is N. */
static void check_answer(int rc, const struct fuzz_capture *cap, const char *path,
			 unsigned int *n)
{
	char want[128];

	FUZZ_CHECK(rc == 0 || rc == EXIT_USAGE, "policy check exited %d: '%s'", rc,
		   cap->err_buf);
	if (rc == 0) {
		FUZZ_CHECK(cap->err_len == 0, "valid, yet stderr says '%s'", cap->err_buf);
		FUZZ_CHECK(sscanf(cap->out_buf + strlen(path), ": %u rules, valid\n", n) == 1,
			   "stdout '%s'", cap->out_buf);
		snprintf(want, sizeof(want), "%s: %u rules, valid\n", path, *n);
		FUZZ_CHECK(!strcmp(cap->out_buf, want), "stdout '%s', want '%s'", cap->out_buf,
			   want);
		return;
	}
	snprintf(want, sizeof(want), "sluice: %s:", path);
	FUZZ_CHECK(cap->out_len == 0, "refused, yet stdout says '%s'", cap->out_buf);
	FUZZ_CHECK(count_lines(cap->err_buf, cap->err_len) == 1 &&
		   cap->err_buf[cap->err_len - 1] == '\n', "not one line on stderr: '%s'",
		   cap->err_buf);
	FUZZ_CHECK(!strncmp(cap->err_buf, want, strlen(want)), "'%s' does not name the file",
		   cap->err_buf);
	for (size_t i = 0; i + 1 < cap->err_len; i++)
		FUZZ_CHECK((unsigned char)cap->err_buf[i] >= 0x20 && cap->err_buf[i] != 0x7f,
			   "a control character on stderr: '%s'", cap->err_buf);
}

/* The file as doc/policy.rst describes it, read here line by
 * line: into p, and 0 when valid, else the number of its first bad line. */
static unsigned int model(const uint8_t *data, size_t size, struct policy *p)
{
	char line[LINE_MAX_CHARS + 1], why[512];
	bool have_default = false, have_budget = false;
	unsigned int lineno = 0;
	enum rule_verb verb;
	struct rule r;

	policy_init(p);
	/* doc/policy.rst: a UTF-8 byte order mark opening the file is skipped */
	for (size_t at = size >= 3 && !memcmp(data, "\xef\xbb\xbf", 3) ? 3 : 0, len; at < size;
	     at += len + 1) {
		const uint8_t *nl = memchr(data + at, '\n', size - at);
		int k;

		len = nl ? (size_t)(nl - (data + at)) : size - at;
		lineno++;
		if (len > LINE_MAX_CHARS || memchr(data + at, '\0', len))
			return lineno;
		memcpy(line, data + at, len);
		line[len] = '\0';
		k = rule_parse_line(line, &r, &verb, why, sizeof(why));
		if (k < 0 || (k && verb == RULE_DEL))
			return lineno;
		if (k == 0)
			continue;
		if (verb == RULE_DEFAULT) {
			if (have_default)
				return lineno;
			have_default = true;
			r.index = SLUICE_POLICY_DEFAULT;
			p->def = r;
		} else if (verb == RULE_NEW_SOURCES) {
			if (have_budget)
				return lineno;
			have_budget = true;
			p->new_sources = r;
		} else if (policy_find_rule(p, &r) || policy_put(p, &r, why, sizeof(why))) {
			return lineno;
		}
	}
	return 0;
}

/* p's rules, one line each, as `policy show` writes them: default,
 * rules, new-source budget. */
static void write_show(const struct policy *p)
{
	char words[RULE_TEXT_MAX];
	FILE *f = fopen(show_path, "w");

	if (!f)
		abort();
	fprintf(f, "# as policy show writes it\n");
	rule_format(&p->def, true, words, sizeof(words));
	fprintf(f, "%s\n", words);
	for (unsigned int i = 0; i < p->n; i++) {
		rule_format(&p->rules[i], false, words, sizeof(words));
		fprintf(f, "%s\n", words);
	}
	budget_format(&p->new_sources, words, sizeof(words));
	fprintf(f, "%s\n", words);
	fclose(f);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	file_fd = memfd_create("policy", 0);
	show_fd = memfd_create("policy-show", 0);
	if (file_fd < 0 || show_fd < 0)
		abort();
	snprintf(file_path, sizeof(file_path), "/proc/self/fd/%d", file_fd);
	snprintf(show_path, sizeof(show_path), "/proc/self/fd/%d", show_fd);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct policy p;		/* big: not on the stack */
	struct fuzz_capture cap;
	unsigned int n = 0, n2 = 0, bad;
	char where[96];
	int rc;

	put_file(file_fd, data, size);
	rc = policy_check(file_path, &cap);
	check_answer(rc, &cap, file_path, &n);
	bad = model(data, size, &p);
	if (bad) {
		snprintf(where, sizeof(where), "sluice: %s:%u: ", file_path, bad);
		FUZZ_CHECK(rc == EXIT_USAGE, "valid, but line %u breaks doc/policy.rst's rules", bad);
		FUZZ_CHECK(!strncmp(cap.err_buf, where, strlen(where)), "'%s' does not name line %u",
			   cap.err_buf, bad);
	} else {
		FUZZ_CHECK(rc == 0, "refused, but valid by doc/policy.rst's rules: '%s'", cap.err_buf);
		FUZZ_CHECK(n == p.n, "policy check counted %u rules, the file holds %u", n, p.n);
	}
	capture_free(&cap);
	if (rc != 0)
		return 0;
	write_show(&p);
	rc = policy_check(show_path, &cap);
	check_answer(rc, &cap, show_path, &n2);
	FUZZ_CHECK(rc == 0 && n2 == n, "written as policy show, %u rules come back as %u (%s)",
		   n, n2, cap.err_buf);
	capture_free(&cap);
	return 0;
}
