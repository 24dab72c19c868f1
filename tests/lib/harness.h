/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The C tests' one harness (unit and BPF): named cases, checks that print
 * "FAIL CASE: FILE:LINE: detail" at the first failure of a case and return,
 * "ok CASE" for a case without one, and the closing "PASS: 0 failed" or
 * "FAIL: N failed" line; also a seeded generator. Two ways to run cases:
 *   run_cases()  a table of cases, optionally only those whose name holds
 *                argv[1]; prints the summary, exits 1 on a failure and 2
 *                if no case matched (the unit tests);
 *   RUN(fn)      one case, then check_summary() at the end (the BPF tests).
 * CASE(name) names what runs from there on; each name reports its own first
 * failure. The state is defined weak, so that a test made of several C
 * files shares one copy of it. */
#ifndef SLUICE_TEST_HARNESS_H
#define SLUICE_TEST_HARNESS_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <linux/types.h>

#define ARRAY_LEN(a)	(sizeof(a) / sizeof((a)[0]))

typedef unsigned long long ull;

/* ---- the state of a run ---- */

#define HARNESS_SHARED	__attribute__((weak))

/* Failed cases reported so far (one per named case), the case running, and
 * how many checks failed in it since its name was given. */
HARNESS_SHARED int check_failures;
HARNESS_SHARED const char *check_case = "?";
HARNESS_SHARED int case_failed;

/* ---- failing a check ---- */

/* Count a failed check; the first of a case prints its FAIL line (no
 * location when line is 0). */
__attribute__((format(printf, 3, 4)))
static inline void harness_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	if (case_failed++)
		return;
	check_failures++;
	printf("FAIL %s: ", check_case);
	if (line)
		printf("%s:%d: ", file, line);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* Record a failure at LINE of the calling file (0: no location). */
#define fail_at(line, ...)	harness_fail(__FILE__, (line), __VA_ARGS__)

__attribute__((format(printf, 6, 7)))
static inline void fail_eq(const char *file, int line, const char *expr, ull got, ull want,
			   const char *fmt, ...)
{
	char ctx[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ctx, sizeof(ctx), fmt, ap);
	va_end(ap);
	harness_fail(file, line, "%s: %s = %llu, want %llu", ctx, expr, got, want);
}

/* On failure: report it and `return ret` (empty in a void function). */
#define CHECK_OR(ret, cond, ...)					\
	do {								\
		if (!(cond)) {						\
			harness_fail(__FILE__, __LINE__, __VA_ARGS__);	\
			return ret;					\
		}							\
	} while (0)

#define CHECK(cond, ...)	CHECK_OR(, cond, __VA_ARGS__)

/* Equality of two integers, both printed on failure; returns (void). */
#define CHECK_EQ(got, want, ...)					\
	do {								\
		ull got_ = (got), want_ = (want);			\
		if (got_ != want_) {					\
			fail_eq(__FILE__, __LINE__, #got, got_, want_, __VA_ARGS__); \
			return;						\
		}							\
	} while (0)

/* For helpers that go on after a failure: report it, give 0. */
#define NOTE(cond, ...)							\
	((cond) ? 1 : (harness_fail(__FILE__, __LINE__, __VA_ARGS__), 0))

#define RETURN_IF_FAILED()						\
	do {								\
		if (case_failed)					\
			return;						\
	} while (0)

/* ---- splitmix64: fixed seeds make every run check the same cases ---- */

HARNESS_SHARED __u64 rng_state;

static inline __u64 rng(void)
{
	__u64 z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline __u64 rng_below(__u64 n)
{
	return n ? rng() % n : 0;
}

/* ---- running the cases ---- */

/* Name what runs from here on; its first failure is reported. */
static inline const char *harness_case(const char *name)
{
	case_failed = 0;
	return check_case = name;
}

#define CASE(name)	harness_case(name)

/* The closing line of a run; returns its exit status. */
static inline int check_summary(void)
{
	printf("%s: %d failed\n", check_failures ? "FAIL" : "PASS", check_failures);
	fflush(stdout);
	return check_failures ? 1 : 0;
}

/* One case: "ok NAME" when nothing in it failed. */
static inline void harness_run(const char *name, void (*run)(void))
{
	int before = check_failures;

	CASE(name);
	run();
	if (check_failures == before) {
		printf("ok %s\n", name);
		fflush(stdout);
	}
}

#define RUN(fn)	harness_run(#fn, fn)

/* The cases named on the command line (harness_select(argc, argv) first),
 * for a quick run by hand; with no names, every case. */
HARNESS_SHARED int harness_argc;
HARNESS_SHARED char **harness_argv;

static inline void harness_select(int argc, char **argv)
{
	harness_argc = argc;
	harness_argv = argv;
}

static inline int harness_selected(const char *name)
{
	if (harness_argc < 2)
		return 1;
	for (int i = 1; i < harness_argc; i++)
		if (!strcmp(harness_argv[i], name))
			return 1;
	return 0;
}

#define RUN_SELECTED(fn)						\
	do {								\
		if (harness_selected(#fn))				\
			RUN(fn);					\
	} while (0)

struct test_case {
	const char *name;
	void (*run)(void);
};

static inline int run_cases(const char *prog, const struct test_case *cases, size_t n,
			    int argc, char **argv)
{
	int ran = 0;

	for (size_t i = 0; i < n; i++) {
		if (argc > 1 && !strstr(cases[i].name, argv[1]))
			continue;
		harness_run(cases[i].name, cases[i].run);
		ran++;
	}
	if (!ran) {
		fprintf(stderr, "%s: no case matches '%s'\n", prog, argv[1]);
		return 2;
	}
	return check_summary();
}

#endif /* SLUICE_TEST_HARNESS_H */
