/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A few lines of test harness: named cases, "ok NAME" / "FAIL NAME: why". */
#ifndef SLUICE_TEST_CHECK_H
#define SLUICE_TEST_CHECK_H

#include <stdio.h>

static int check_failures;
static const char *check_case = "?";

#define CASE(name) (check_case = (name))
/* On failure: say so and `return ret` (empty in a void function). */
#define CHECK_OR(ret, cond, ...)                                             \
	do {                                                                 \
		if (!(cond)) {                                               \
			printf("FAIL %s: %s:%d: ", check_case, __FILE__, __LINE__); \
			printf(__VA_ARGS__);                                 \
			printf("\n");                                        \
			check_failures++;                                    \
			return ret;                                          \
		}                                                            \
	} while (0)
#define CHECK(cond, ...) CHECK_OR(, cond, __VA_ARGS__)
#define RUN(fn)                                                              \
	do {                                                                 \
		int before = check_failures;                                 \
		CASE(#fn);                                                   \
		fn();                                                        \
		if (check_failures == before)                                \
			printf("ok %s\n", #fn);                              \
	} while (0)

/* The closing line of a run; returns its exit status. */
static inline int check_summary(void)
{
	printf("%s: %d failed\n", check_failures ? "FAIL" : "PASS", check_failures);
	return check_failures ? 1 : 0;
}

#endif /* SLUICE_TEST_CHECK_H */
