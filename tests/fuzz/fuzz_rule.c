// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer target: the rule parser (user/lib/rule.c). Input without a NUL is
 * one policy-file line for rule_parse_line; input with NULs is a command
 * line split at them, for rule_parse_words. A rule that parses must format
 * back to words that parse to the same rule, and format to the same words
 * again; a refused one must say why in one line. The parser prints nothing. */
#include "fuzz.h"
#include "rule.h"

#define WHY_MAX	512

/* Around the parse itself, which must print nothing. */
static struct fuzz_capture quiet;

static void end_quiet(void)
{
	capture_end(&quiet);
	FUZZ_CHECK(quiet.out_len == 0 && quiet.err_len == 0, "the rule parser printed '%s%s'",
		   quiet.out_buf, quiet.err_buf);
	capture_free(&quiet);
}

static bool same_rule(const struct rule *a, const struct rule *b)
{
	return !memcmp(&a->cidr.addr, &b->cidr.addr, sizeof(a->cidr.addr)) &&
	       a->cidr.prefixlen == b->cidr.prefixlen &&
	       a->match.flags == b->match.flags && a->match.proto == b->match.proto &&
	       a->match.dport_lo == b->match.dport_lo && a->match.dport_hi == b->match.dport_hi &&
	       a->action == b->action && a->unit == b->unit && a->rate == b->rate &&
	       a->period == b->period && a->burst == b->burst && a->algo == b->algo &&
	       a->window_ns == b->window_ns && a->per == b->per && a->per_len == b->per_len &&
	       a->ban_ns == b->ban_ns && a->ban_after == b->ban_after && a->monitor == b->monitor &&
	       a->index == b->index;
}

/* The words that say r again, as `policy show` and `limit list` write them. */
static void format_verb(const struct rule *r, enum rule_verb verb, char *buf, size_t len)
{
	char label[128];

	switch (verb) {
	case RULE_DEFAULT:
		rule_format(r, true, buf, len);
		break;
	case RULE_NEW_SOURCES:
		budget_format(r, buf, len);
		break;
	case RULE_DEL:
		rule_label(r, false, label, sizeof(label));
		snprintf(buf, len, "limit del %s", label);
		break;
	default:
		rule_format(r, false, buf, len);
		break;
	}
}

/* A refusal has a reason, and the CLI prints it as one line (err_msg
 * quotes control characters, newlines from a command-line word included). */
static void check_why(int rc, const char *why)
{
	struct fuzz_capture cap;

	if (rc >= 0)
		return;
	FUZZ_CHECK(why[0] != '\0', "refused without a reason");
	capture_begin(&cap);
	err_msg("%s", why);
	capture_end(&cap);
	FUZZ_CHECK(cap.out_len == 0 && count_lines(cap.err_buf, cap.err_len) == 1 &&
		   !strncmp(cap.err_buf, "sluice: ", 8), "reason not one line: '%s'", cap.err_buf);
	capture_free(&cap);
}

/* r parsed (as verb) from the input: its words parse back to r. */
static void check_roundtrip(const struct rule *r, enum rule_verb verb, const char *input)
{
	char text[RULE_TEXT_MAX], again[RULE_TEXT_MAX], line[RULE_TEXT_MAX], why[WHY_MAX];
	enum rule_verb verb2;
	struct rule r2;
	int n;

	format_verb(r, verb, text, sizeof(text));
	FUZZ_CHECK(strlen(text) + 1 < sizeof(text), "formatted rule filled the buffer: %s", text);
	FUZZ_CHECK(text[0] != '\0', "a parsed rule formats to nothing (input '%s')", input);
	snprintf(line, sizeof(line), "%s", text);
	why[0] = '\0';
	n = rule_parse_line(line, &r2, &verb2, why, sizeof(why));
	FUZZ_CHECK(n == 1, "'%s' (from '%s') does not parse back: %s", text, input, why);
	FUZZ_CHECK(verb2 == verb, "'%s' parses back as verb %d, not %d", text, verb2, verb);
	FUZZ_CHECK(same_rule(r, &r2), "'%s' (from '%s') parses back to another rule", text, input);
	format_verb(&r2, verb2, again, sizeof(again));
	FUZZ_CHECK(!strcmp(text, again), "'%s' formats again as '%s'", text, again);
}

static void fuzz_line(const uint8_t *data, size_t size)
{
	char *line = fuzz_str(data, size), *copy = fuzz_str(data, size), why[WHY_MAX] = "";
	enum rule_verb verb;
	struct rule r;
	int n;

	n = rule_parse_line(line, &r, &verb, why, sizeof(why));
	end_quiet();
	FUZZ_CHECK(n >= -1 && n <= 1, "rule_parse_line returned %d", n);
	check_why(n, why);
	if (n == 1)
		check_roundtrip(&r, verb, copy);
	free(line);
	free(copy);
}

static void fuzz_words(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), *argv[RULE_WORDS_MAX + 8], why[WHY_MAX] = "";
	enum rule_verb verb;
	struct rule r;
	int argc = 0, rc;

	if (!buf)
		abort();
	memcpy(buf, data, size);
	buf[size] = '\0';
	for (size_t i = 0; i <= size && argc < (int)(sizeof(argv) / sizeof(argv[0])); ) {
		argv[argc++] = buf + i;
		i += strlen(buf + i) + 1;
	}
	rc = rule_parse_words(argc, argv, &r, &verb, why, sizeof(why));
	end_quiet();
	FUZZ_CHECK(rc == 0 || rc == -1, "rule_parse_words returned %d", rc);
	check_why(rc, why);
	if (rc == 0)
		check_roundtrip(&r, verb, argv[0]);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	capture_begin(&quiet);
	if (memchr(data, '\0', size))
		fuzz_words(data, size);
	else
		fuzz_line(data, size);
	return 0;
}
