// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The named steps of attach and detach do nothing in sluice (a test build
 * links tests/fault/steps.c instead). */
#include "steps.h"

void test_hook(const char *step)
{
	(void)step;
}
