// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer target: the other file sluice reads, a trace of arrival times
 * for `sluice simulate --trace FILE` (user/cmd/simulate.c, through the CLI's own
 * dispatch). The first byte picks the limit simulated, the rest is the
 * file. A model of the trace format (--help: one time a line, seconds with
 * up to 9 fraction digits, below 2^58 ns, not decreasing, '#' comments, at
 * least one) must agree with it on valid or not and on the count of
 * arrivals; a valid trace prints a table whose every algorithm saw every
 * arrival and admitted plus rejected them all; a refused one is exit 2 and
 * one line on stderr naming the file. */
#include "fuzz.h"
#include <ctype.h>
#include <sys/mman.h>
#include <unistd.h>
#include "cli.h"
#include "simulate.h"

#define TIME_NS_END	(1ULL << 58)
#define FRAC_DIGITS	9

static const struct cli_cmd *const root_cmds[] = { &simulate_cmd, NULL };
static const struct cli_cmd root = { .name = "sluice", .path = "", .sub = root_cmds };

static const char *const limits[][4] = {
	{ "--rate", "1000", "--window", "1ms" },
	{ "--rate", "10", "--burst", "3" },
	{ "--rate", "600/m", "--window", "500ms" },
	{ "--rate", "5", "--window", "1h" },
};

static int file_fd = -1;
static char file_path[64];

/* One time in ns, or -1. */
static int model_time(const char *s, __u64 *out)
{
	__u64 sec = 0, frac = 0;
	int digits = 0;

	if (!isdigit((unsigned char)*s))
		return -1;
	for (; isdigit((unsigned char)*s); s++) {
		if (sec > TIME_NS_END)
			return -1;
		sec = sec * 10 + (__u64)(*s - '0');
	}
	if (*s == '.') {
		if (!isdigit((unsigned char)*++s))
			return -1;
		for (; isdigit((unsigned char)*s); s++, digits++) {
			if (digits == FRAC_DIGITS)
				return -1;
			frac = frac * 10 + (__u64)(*s - '0');
		}
	}
	if (*s)
		return -1;
	for (; digits < FRAC_DIGITS; digits++)
		frac *= 10;
	if (sec >= TIME_NS_END / SLUICE_NS_PER_SEC + 1 ||
	    sec * SLUICE_NS_PER_SEC + frac >= TIME_NS_END)
		return -1;
	*out = sec * SLUICE_NS_PER_SEC + frac;
	return 0;
}

/* The arrivals of a valid trace, or 0 with *bad the first bad line (or 0:
 * no arrivals at all). */
static size_t model(const uint8_t *data, size_t size, unsigned int *bad)
{
	unsigned int lineno = 0;
	__u64 t, last = 0;
	size_t n = 0;

	*bad = 0;
	for (size_t at = 0, len; at < size; at += len + 1) {
		const uint8_t *nl = memchr(data + at, '\n', size - at);
		char *line, *p, *end;

		len = nl ? (size_t)(nl - (data + at)) : size - at;
		lineno++;
		if (memchr(data + at, '\0', len)) {	/* not a text file */
			*bad = lineno;
			return 0;
		}
		line = fuzz_str(data + at, len);
		p = line + strcspn(line, "#");
		*p = '\0';
		for (p = line; isspace((unsigned char)*p); p++)
			;
		for (end = p + strlen(p); end > p && isspace((unsigned char)end[-1]); end--)
			;
		*end = '\0';
		if (!*p) {
			free(line);
			continue;
		}
		if (strpbrk(p, " \t\v\f\r") || model_time(p, &t) || (n && t < last)) {
			free(line);
			*bad = lineno;
			return 0;
		}
		last = t;
		n++;
		free(line);
	}
	return n;
}

/* Every algorithm's row: ARRIVALS ADMITTED REJECTED with n arrivals. */
static void check_table(const char *out, size_t n)
{
	const char *row = strstr(out, "\nalgorithm ");
	int rows = 0;

	FUZZ_CHECK(row, "no table in '%.300s'", out);
	for (row = strchr(row + 1, '\n'); row && row[1]; row = strchr(row + 1, '\n')) {
		char name[32];
		size_t arrivals, admitted, rejected;

		if (sscanf(row + 1, "%31s %zu %zu %zu", name, &arrivals, &admitted, &rejected) != 4)
			continue;
		FUZZ_CHECK(arrivals == n && admitted + rejected == n,
			   "%s: %zu arrivals, %zu admitted, %zu rejected; the trace holds %zu", name,
			   arrivals, admitted, rejected, n);
		rows++;
	}
	FUZZ_CHECK(rows >= 5, "%d algorithms in '%.300s'", rows, out);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	file_fd = memfd_create("trace", 0);
	if (file_fd < 0)
		abort();
	snprintf(file_path, sizeof(file_path), "/proc/self/fd/%d", file_fd);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *const *lim;
	struct fuzz_capture cap;
	char want[96];
	unsigned int bad;
	size_t n;
	int rc;

	if (size < 1)
		return 0;
	lim = limits[data[0] % (sizeof(limits) / sizeof(limits[0]))];
	data++;
	size--;
	if (ftruncate(file_fd, 0) || (size && pwrite(file_fd, data, size, 0) != (ssize_t)size))
		abort();
	{
		char *argv[] = { "sluice", "simulate", (char *)lim[0], (char *)lim[1],
				 (char *)lim[2], (char *)lim[3], "--trace", file_path, NULL };

		capture_begin(&cap);
		rc = cli_dispatch(&root, 8, argv);
		capture_end(&cap);
	}
	n = model(data, size, &bad);
	if (n) {
		FUZZ_CHECK(rc == 0, "refused a trace of %zu arrivals: '%s'", n, cap.err_buf);
		FUZZ_CHECK(cap.err_len == 0, "stderr '%s'", cap.err_buf);
		check_table(cap.out_buf, n);
	} else {
		FUZZ_CHECK(rc == EXIT_USAGE, "exit %d for a trace with %s %u", rc,
			   bad ? "a bad line" : "no arrivals", bad);
		FUZZ_CHECK(cap.out_len == 0 && count_lines(cap.err_buf, cap.err_len) == 1,
			   "refused with '%s' '%s'", cap.out_buf, cap.err_buf);
		if (bad)
			snprintf(want, sizeof(want), "sluice: %s:%u: ", file_path, bad);
		else
			snprintf(want, sizeof(want), "sluice: %s: no arrivals", file_path);
		FUZZ_CHECK(!strncmp(cap.err_buf, want, strlen(want)), "'%s', want '%s...'",
			   cap.err_buf, want);
	}
	capture_free(&cap);
	return 0;
}
