// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The insert race test's program without the stripe lock: two CPUs that
 * meet one new source at once may both claim it a slot. test_srctab must
 * see the duplicates. */
#define SRC_TRYLOCK(lk) ((void)(lk), 1)
#include "sluice_churn.bpf.c"
