/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The unit tests' harness: cases that record their first failed check, a
 * seeded generator, and a main that runs the cases (optionally only those
 * whose name contains argv[1]) and prints "ok NAME" or "FAIL NAME: detail"
 * per case, exiting 1 if any failed and 2 if none matched. */
#ifndef SLUICE_TEST_HARNESS_H
#define SLUICE_TEST_HARNESS_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <linux/types.h>

#define ARRAY_LEN(a)	(sizeof(a) / sizeof((a)[0]))

typedef unsigned long long ull;

/* ---- the first failed check of a case is its detail ---- */

static int case_failed;
static char case_detail[1024];

/* Record a failure (the first of the case wins); line 0 for none. */
__attribute__((format(printf, 2, 3)))
static inline void fail_at(int line, const char *fmt, ...)
{
	va_list ap;
	int n = 0;

	if (case_failed++)
		return;
	if (line)
		n = snprintf(case_detail, sizeof(case_detail), "line %d: ", line);
	va_start(ap, fmt);
	vsnprintf(case_detail + n, sizeof(case_detail) - (size_t)n, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 5, 6)))
static inline void fail_eq(int line, const char *expr, ull got, ull want, const char *fmt, ...)
{
	char ctx[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ctx, sizeof(ctx), fmt, ap);
	va_end(ap);
	fail_at(line, "%s: %s = %llu, want %llu", ctx, expr, got, want);
}

/* Both return from the calling (void) function on failure. */
#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fail_at(__LINE__, __VA_ARGS__);			\
			return;						\
		}							\
	} while (0)

#define CHECK_EQ(got, want, ...)					\
	do {								\
		ull got_ = (got), want_ = (want);			\
		if (got_ != want_) {					\
			fail_eq(__LINE__, #got, got_, want_, __VA_ARGS__); \
			return;						\
		}							\
	} while (0)

/* For helpers that go on after a failure: record it, return 0. */
#define NOTE(cond, ...)							\
	((cond) ? 1 : (fail_at(__LINE__, __VA_ARGS__), 0))

#define RETURN_IF_FAILED()						\
	do {								\
		if (case_failed)					\
			return;						\
	} while (0)

/* ---- splitmix64: fixed seeds make every run check the same cases ---- */

static __u64 rng_state;

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

struct test_case {
	const char *name;
	void (*run)(void);
};

static inline int run_cases(const char *prog, const struct test_case *cases, size_t n,
			    int argc, char **argv)
{
	int failed = 0, ran = 0;

	for (size_t i = 0; i < n; i++) {
		if (argc > 1 && !strstr(cases[i].name, argv[1]))
			continue;
		case_failed = 0;
		case_detail[0] = '\0';
		cases[i].run();
		ran++;
		if (case_failed) {
			printf("FAIL %s: %s\n", cases[i].name, case_detail);
			failed++;
		} else {
			printf("ok %s\n", cases[i].name);
		}
		fflush(stdout);
	}
	if (!ran) {
		fprintf(stderr, "%s: no case matches '%s'\n", prog, argv[1]);
		return 2;
	}
	return failed ? 1 : 0;
}

#endif /* SLUICE_TEST_HARNESS_H */
