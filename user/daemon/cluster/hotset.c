// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* hotset: the agent's hash table of hot buckets (a source under a --cluster
 * rule whose local share rejected packets), keyed by source and rule. */
#include <string.h>
#include "core.h"
#include "hash.h"
#include "hotset.h"

static __u32 hot_hash(const struct sluice_src_key *k, __u32 policy)
{
	return (__u32)hash_bytes(policy, k, sizeof(*k)) & (HOT_SLOTS - 1);
}

void hot_reindex(struct hot_set *hs)
{
	memset(hs->index, 0xff, HOT_SLOTS * sizeof(*hs->index));
	for (unsigned int i = 0; i < hs->n; i++) {
		__u32 s = hot_hash(&hs->e[i].key, hs->e[i].policy);

		while (hs->index[s] >= 0)
			s = (s + 1) & (HOT_SLOTS - 1);
		hs->index[s] = (__s32)i;
	}
}

/* The entry of (key, policy), or the free slot of the index for it. */
struct hot *hot_find(struct hot_set *hs, const struct sluice_src_key *k, __u32 policy,
			    __u32 *slot)
{
	__u32 s = hot_hash(k, policy);

	for (; hs->index[s] >= 0; s = (s + 1) & (HOT_SLOTS - 1)) {
		struct hot *e = &hs->e[hs->index[s]];

		if (e->policy == policy && !memcmp(&e->key, k, sizeof(*k)))
			return e;
	}
	*slot = s;
	return NULL;
}
