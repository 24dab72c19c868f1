/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Golden-text comparison for the C tests of the Prometheus writers: a
 * case writes its text into a memory stream with its writer, and
 * golden_check() compares it with tests/unit/golden/NAME.prom byte for
 * byte (naming the first line that differs), then runs `promtool check
 * metrics` on the golden file when promtool is installed.
 *   SLUICE_GOLDEN_DIR       where the golden files are (default
 *                           tests/unit/golden, from the repository root)
 *   SLUICE_GOLDEN_UPDATE=1  write the golden files instead of comparing:
 *                           then review the diff before committing it
 * Include after harness.h; failures go through fail_at(). */
#ifndef SLUICE_TEST_GOLDEN_H
#define SLUICE_TEST_GOLDEN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* A writer of one case's text: 0, or non-zero if the stream reported an
 * error. */
typedef int (*golden_writer)(FILE *f, const void *sample);

static char *golden_read(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0;
	FILE *m;

	*len = 0;
	if (!f)
		return NULL;
	m = open_memstream(&buf, &cap);
	if (m) {
		char chunk[4096];
		size_t n;

		while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
			fwrite(chunk, 1, n, m);
		if (fclose(m)) {
			free(buf);
			buf = NULL;
		}
	}
	fclose(f);
	*len = cap;
	return buf;
}

/* The line of the first difference, for the failure message. */
static void golden_first_diff(const char *got, size_t glen, const char *want, size_t wlen)
{
	size_t i = 0, line = 1, bol = 0, eol;

	for (; i < glen && i < wlen && got[i] == want[i]; i++)
		if (got[i] == '\n') {
			line++;
			bol = i + 1;
		}
	for (eol = bol; eol < glen && got[eol] != '\n'; eol++)
		;
	fail_at(0, "differs from the golden file at line %zu, column %zu; got '%.*s'%s", line,
		i - bol + 1, (int)(eol - bol), got + bol,
		i == wlen ? " (the golden file ends before it)" :
		i == glen ? " (the output ends early)" : "");
}

/* `promtool check metrics` on the golden file: no output, exit 0. */
static void golden_promtool(const char *path)
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
		fail_at(0, "cannot run promtool");
		return;
	}
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	st = pclose(p);
	if (st != 0 || n)
		fail_at(0, "promtool check metrics %s (exit %d): %s", path,
			WIFEXITED(st) ? WEXITSTATUS(st) : -1, out);
}

/* Writes sample with write into memory and compares it with NAME.prom. */
static void golden_check(const char *name, golden_writer write, const void *sample)
{
	const char *dir = getenv("SLUICE_GOLDEN_DIR");
	char path[512], *got = NULL, *want;
	size_t glen = 0, wlen = 0;
	FILE *f = open_memstream(&got, &glen);

	if (!f) {
		fail_at(0, "open_memstream failed");
		return;
	}
	if (write(f, sample))
		fail_at(0, "the writer reported an error on a memory stream");
	if (fclose(f)) {
		fail_at(0, "writing to a memory stream failed");
		free(got);
		return;
	}
	snprintf(path, sizeof(path), "%s/%s.prom", dir && *dir ? dir : "tests/unit/golden", name);
	if (getenv("SLUICE_GOLDEN_UPDATE")) {
		FILE *out = fopen(path, "w");

		if (!out || fwrite(got, 1, glen, out) != glen || fclose(out))
			fail_at(0, "cannot write %s", path);
		free(got);
		return;
	}
	want = golden_read(path, &wlen);
	if (!want)
		fail_at(0, "cannot read %s: run from the repository root, or set SLUICE_GOLDEN_DIR",
			path);
	else if (glen != wlen || memcmp(got, want, glen))
		golden_first_diff(got, glen, want, wlen);
	else
		golden_promtool(path);
	free(want);
	free(got);
}

#endif /* SLUICE_TEST_GOLDEN_H */
