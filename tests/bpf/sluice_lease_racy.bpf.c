// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sluice's XDP program whose lease credit is decremented by a plain store
 * (read, then write credit - 1 whatever happened meanwhile): every other
 * compare-and-swap (old value named tat) stays atomic. Only the cluster
 * test loads it, under two CPUs at once, and must see it over-admit. */
#include <linux/types.h>

#define SLUICE_CAS(p, o, n) SLUICE_CAS_##o(p, o, n)
#define SLUICE_CAS_tat(p, o, n) __sync_val_compare_and_swap(p, o, n)
#define SLUICE_CAS_credit(p, o, n) ({ *(volatile __u64 *)(p) = (n); (o); })
#include "../../bpf/sluice.bpf.c"
