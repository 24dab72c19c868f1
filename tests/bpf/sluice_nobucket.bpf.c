// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sluice's XDP program whose source table never gives a new bucket, as when
 * memory runs out or another CPU evicts the entry between insert and
 * lookup. Only the BPF tests load it: allow and deny must hold without a
 * bucket, and a limited source must be dropped and counted as no_bucket. */
#include <linux/types.h>

#define SLUICE_NEW_BUCKET(map, key, val) ((void)(map), (void)(key), (void)(val), -12)
/* ... nor a slot of the source table. */
#define SLUICE_TABLE_OFF 1
#include "../../bpf/sluice.bpf.c"
