// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The insert race test's program whose reclaim stores the fresh state
 * instead of CASing it from the idle one: an admission of the old source
 * that lands meanwhile is lost with the slot, so the source starts fresh
 * while in debt. test_srctab must see it over-admit. */
#define SLUICE_RECLAIM_CAS(ptr, old, new) ({ *(volatile __u64 *)(ptr) = (new); (old); })
#include "sluice_churn.bpf.c"
