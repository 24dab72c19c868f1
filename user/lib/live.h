/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the live maps hold, read for the commands: the buckets, and the
 * rules that judge them. */
#ifndef SLUICE_LIVE_H
#define SLUICE_LIVE_H

#include <stddef.h>
#include "sluice/sluice.h"
#include "maps.h"
#include "policy.h"

struct bucket_row {
	struct sluice_src_key key;
	struct sluice_bucket b;
};
/* Every bucket; *n rows in *out (caller frees). Prints the error. */
int read_buckets(const struct sluice_maps *m, struct bucket_row **out, size_t *n);
/* The rule at table index idx of p (the default for 0), or NULL. */
const struct rule *rule_by_index(const struct policy *p, __u32 idx);
/* "default", "CIDR" or "CIDR MATCH-WORDS". */
void policy_rule_label(const struct policy *p, const struct rule *r, char *buf, size_t len);
/* The table entry idx of slot; 0, or -1. */
int policy_entry(const struct sluice_maps *m, __u32 slot, __u32 idx, struct sluice_policy *out);
/* The config word as it is now (zeroed if unreadable). */
void live_config(const struct sluice_maps *m, struct sluice_config *cfg);

#endif
