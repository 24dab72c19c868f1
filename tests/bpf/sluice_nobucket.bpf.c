// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sluice's XDP program whose source table never gives a slot, home or
 * keyed, as when every candidate is held. Only the BPF tests load it: allow
 * and deny must hold without a bucket, and a limited source must be
 * dropped and counted as no_bucket. */
#include <linux/types.h>

#define SLUICE_TABLE_OFF 1
#include "../../bpf/sluice.bpf.c"
