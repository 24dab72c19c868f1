// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The clocks the datapath judges by, read from userspace. */
#include <time.h>
#include "clock.h"

__u64 mono_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * SLUICE_NS_PER_SEC + (__u64)ts.tv_nsec;
}

__u64 coarse_tick_ns(void)
{
	struct timespec ts;

	if (clock_getres(CLOCK_MONOTONIC_COARSE, &ts))
		return 0;
	return (__u64)ts.tv_sec * SLUICE_NS_PER_SEC + (__u64)ts.tv_nsec;
}

__u64 coarse_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (__u64)ts.tv_sec * SLUICE_NS_PER_SEC + (__u64)ts.tv_nsec;
}

__u64 policy_now_ns(const struct sluice_policy *p)
{
	return (p->flags & SLUICE_POLICY_COARSE_CLOCK) ? coarse_now_ns() : mono_now_ns();
}
