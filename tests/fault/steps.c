// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The steps of user/lib/steps.c for build/tests/sluice-fault:
 * SLUICE_TEST_HOOK=STEP:kill (or STEP:stop) kills (stops) attach or detach
 * at STEP, so tests can check what a crash there leaves behind, or run
 * another command in the middle of one. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "steps.h"

void test_hook(const char *step)
{
	const char *hook = getenv("SLUICE_TEST_HOOK");
	size_t n = strlen(step);

	if (!hook || strncmp(hook, step, n) != 0 || hook[n] != ':')
		return;
	fflush(stdout);
	raise(strcmp(hook + n + 1, "stop") ? SIGKILL : SIGSTOP);
}
