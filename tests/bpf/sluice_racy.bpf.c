// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sluice's XDP program with the naive check-then-store in place of the
 * compare-and-swap: the lost update of the seed. Only the race test loads
 * it, to show that it tells the two apart. */
#include <linux/types.h>

static __attribute__((always_inline)) inline __u64
racy_cas(__u64 *ptr, __u64 old, __u64 new)
{
	__u64 cur = *(volatile __u64 *)ptr;

	if (cur == old)
		*(volatile __u64 *)ptr = new;
	return cur;
}

#define SLUICE_CAS(ptr, old, new) racy_cas(ptr, old, new)
#include "../../bpf/sluice.bpf.c"
