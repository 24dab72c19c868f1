// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sluice's XDP program for the insert race test (test_srctab): the source
 * of an IPv4 packet from 198.19.252.N is replaced by one of the first 2^N
 * of CHURN_SOURCES (198.18.0.0 to 198.18.15.255) at random, or for N = 13
 * by one of the CHURN_HOT first half the time and one of the rest the
 * other half, so one
 * BPF_PROG_TEST_RUN of a repeated frame churns many sources through a
 * small table; every admission of those sources is counted per source in
 * churn_admits. Its map comes after sluice's, so the skeleton keeps
 * sluice's layout. */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define CHURN_SOURCES	4096
#define CHURN_HOT	8
#define CHURN_MIXED	13

static __attribute__((always_inline)) inline void churn_source(__u8 *a)
{
	__u32 r;

	if (a[12] != 198 || a[13] != 19 || a[14] != 252 || a[15] > CHURN_MIXED)
		return;
	r = bpf_get_prandom_u32();
	if (a[15] < CHURN_MIXED)
		r &= (1U << a[15]) - 1;
	else if (r & 1)
		r = (r >> 1) % CHURN_HOT;
	else
		r = CHURN_HOT + (r >> 1) % (CHURN_SOURCES - CHURN_HOT);
	a[13] = 18;
	a[14] = (__u8)(r >> 8);
	a[15] = (__u8)r;
}

static __attribute__((always_inline)) inline void churn_admit(const __u8 *a, __u32 reason);

#define SLUICE_SOURCE_HOOK(src)						\
	do {								\
		if ((src)->family == 4)					\
			churn_source((src)->a);				\
	} while (0)
#define SLUICE_VERDICT_HOOK(src, reason)				\
	do {								\
		if ((src)->family == 4)					\
			churn_admit((src)->a, reason);			\
	} while (0)
#include "../../bpf/sluice.bpf.c"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CHURN_SOURCES);
	__type(key, __u32);
	__type(value, __u64);
} churn_admits SEC(".maps");

static __attribute__((always_inline)) inline void churn_admit(const __u8 *a, __u32 reason)
{
	__u32 i = (__u32)(a[14] & 0xf) << 8 | a[15];
	__u64 *n;

	if (reason != SLUICE_R_WITHIN_LIMIT || a[12] != 198 || a[13] != 18 || a[14] > 0xf)
		return;
	n = bpf_map_lookup_elem(&churn_admits, &i);
	if (n)
		__sync_fetch_and_add(n, 1);
}
