// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sluice's XDP program for the benchmark: the source of an IPv4 packet from
 * 198.19.255.0/24, .254.0/24 or .253.0/24 is replaced by a random one, so
 * one BPF_PROG_TEST_RUN of a repeated frame spreads over many sources:
 *   198.19.255.x  any address of 198.18.0.0/15 (never seen, in effect)
 *   198.19.254.x  one of 1000 (198.18.0.0 to 198.18.3.231)
 *   198.19.253.x  one of 65536 (198.18.0.0/16)
 * Every other source is judged as it is, so all cases run on one program.
 * (No global variable: the skeleton must keep sluice's layout.) */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define BENCH_SOURCES_FEW	1000

static __attribute__((always_inline)) inline void
bench_source(__u8 *a)
{
	__u32 r;

	if (a[12] != 198 || a[13] != 19 || a[14] < 253)
		return;
	r = bpf_get_prandom_u32();
	if (a[14] == 254)
		r %= BENCH_SOURCES_FEW;
	else if (a[14] == 253)
		r &= 0xffff;
	else
		r &= 0x1ffff;
	a[13] = (__u8)(18 + (r >> 16 & 1));
	a[14] = (__u8)(r >> 8);
	a[15] = (__u8)r;
}

#define SLUICE_SOURCE_HOOK(src)						\
	do {								\
		if ((src)->family == 4)					\
			bench_source((src)->a);				\
	} while (0)
#include "../../bpf/sluice.bpf.c"
