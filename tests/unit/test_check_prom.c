// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Golden-text tests of the check server's /metrics page
 * (user/daemon/check/metrics.c): each case builds a sample by hand, and
 * check_prom_write's output must equal tests/unit/golden/NAME.prom byte
 * for byte; when promtool is installed the golden file must also pass
 * `promtool check metrics`. Prints "ok NAME" or "FAIL NAME: detail" per
 * case and exits 1 if any case failed.
 *
 * usage: test_check_prom [CASE]   only the cases whose name contains CASE
 * SLUICE_GOLDEN_DIR               where the golden files are (default
 *                                 tests/unit/golden, from the repository root)
 * SLUICE_GOLDEN_UPDATE=1          write the golden files instead of comparing:
 *                                 then review the diff before committing it */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "metrics.h"
#include "harness.h"

#define fail(...)	fail_at(0, __VA_ARGS__)

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r"), *m;
	char *buf = NULL, chunk[4096];
	size_t n;

	*len = 0;
	if (!f)
		return NULL;
	m = open_memstream(&buf, len);
	if (m) {
		while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
			fwrite(chunk, 1, n, m);
		if (fclose(m)) {
			free(buf);
			buf = NULL;
		}
	}
	fclose(f);
	return buf;
}

/* The line of the first difference, for the failure message. */
static void first_diff(const char *got, size_t glen, const char *want, size_t wlen)
{
	size_t i = 0, line = 1, bol = 0, eol;

	for (; i < glen && i < wlen && got[i] == want[i]; i++)
		if (got[i] == '\n') {
			line++;
			bol = i + 1;
		}
	for (eol = bol; eol < glen && got[eol] != '\n'; eol++)
		;
	fail("differs from the golden file at line %zu, column %zu; got '%.*s'%s", line,
	     i - bol + 1, (int)(eol - bol), got + bol,
	     i == wlen ? " (the golden file ends before it)" :
	     i == glen ? " (the output ends early)" : "");
}

/* `promtool check metrics` on the golden file, when promtool is there. */
static void promtool_check(const char *path)
{
	char cmd[600], out[512];
	size_t n;
	FILE *p;
	int st;

	if (system("command -v promtool >/dev/null 2>&1") != 0)
		return;
	snprintf(cmd, sizeof(cmd), "promtool check metrics < '%s' 2>&1", path);
	p = popen(cmd, "r");
	if (!p) {
		fail("cannot run promtool");
		return;
	}
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	st = pclose(p);
	if (st != 0 || n)
		fail("promtool check metrics %s (exit %d): %s", path,
		     WIFEXITED(st) ? WEXITSTATUS(st) : -1, out);
}

static void check_golden(const char *name, const struct check_prom *p)
{
	const char *dir = getenv("SLUICE_GOLDEN_DIR");
	char path[512], *got = NULL, *want;
	size_t glen = 0, wlen = 0;
	FILE *f = open_memstream(&got, &glen);

	if (!f) {
		fail("open_memstream failed");
		return;
	}
	if (check_prom_write(f, p))
		fail("check_prom_write reported an error on a memory stream");
	if (fclose(f)) {
		fail("writing to a memory stream failed");
		free(got);
		return;
	}
	snprintf(path, sizeof(path), "%s/%s.prom", dir && *dir ? dir : "tests/unit/golden", name);
	if (getenv("SLUICE_GOLDEN_UPDATE")) {
		FILE *out = fopen(path, "w");

		if (!out || fwrite(got, 1, glen, out) != glen || fclose(out))
			fail("cannot write %s", path);
		free(got);
		return;
	}
	want = read_all(path, &wlen);
	if (!want)
		fail("cannot read %s: run from the repository root, or set SLUICE_GOLDEN_DIR", path);
	else if (glen != wlen || memcmp(got, want, glen))
		first_diff(got, glen, want, wlen);
	else
		promtool_check(path);
	free(want);
	free(got);
}

/* A server with no request rules, fresh. */
static void case_check_empty(void)
{
	struct check_prom p = { .version = "0.1.0", .iface = "eth0", .capacity = 65536 };

	check_golden("check_empty", &p);
}

/* Every outcome counted, three rules (longest prefix first), a full-ish
 * table and a failed ban. */
static void case_check(void)
{
	static const struct check_prom_rule rules[] = {
		{ "198.18.0.0/24", 120, 30, 2 },
		{ "2001:2::/48", 7, 0, 0 },
		{ "198.18.0.0/15", 1000, 12345678901ULL, 0 },
	};
	struct check_prom p = {
		.version = "1.2.3", .iface = "veth-rx", .rules = rules,
		.nrules = ARRAY_LEN(rules), .ban_failures = 1, .tracked = 4097,
		.capacity = 65536,
	};

	for (int o = 0; o < OUT_MAX; o++)
		p.answers[o] = 10ULL * (__u64)o + 1;
	check_golden("check", &p);
}

/* A version and an interface name with characters labels escape. */
static void case_check_label_escaping(void)
{
	static const struct check_prom_rule rules[] = { { "198.18.0.0/15", 1, 2, 3 } };
	struct check_prom p = { .version = "0.1.0-\"dev\"\\x\n", .iface = "e\"th\\0",
				.rules = rules, .nrules = 1, .capacity = 1 };

	check_golden("check_label_escaping", &p);
}

static const struct test_case cases[] = {
	{ "check_empty", case_check_empty },
	{ "check_label_escaping", case_check_label_escaping },
	{ "check", case_check },
};

/* Optional argument: run only the cases whose name contains it. */
int main(int argc, char **argv)
{
	return run_cases("test_check_prom", cases, ARRAY_LEN(cases), argc, argv);
}
