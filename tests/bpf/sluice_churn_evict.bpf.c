// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The insert race test's program with an eviction that takes established
 * sources as probation ones: a hot source in debt, established, is
 * evicted by the churn and comes back with a fresh burst. test_srctab must
 * see it admitted over its rate. */
#define SLUICE_EVICT_IGNORES_ESTABLISHED 1
#include "sluice_churn.bpf.c"
