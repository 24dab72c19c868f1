// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sluice's XDP program with the naive read-modify-write in place of the
 * compare-and-swap: TAT is read, the decision made, and the new TAT stored
 * whatever happened meanwhile: the lost update ("both read 99, both
 * admit"). Only the race test loads it, to show that it tells the two
 * apart. */
#include <linux/types.h>

static __attribute__((always_inline)) inline __u64
racy_cas(__u64 *ptr, __u64 old, __u64 new)
{
	*(volatile __u64 *)ptr = new;
	return old;	/* "it worked": no one checks */
}

#define SLUICE_CAS(ptr, old, new) racy_cas(ptr, old, new)
#include "../../bpf/sluice.bpf.c"
