/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The cluster agent's hot set: buckets whose local share rejected packets,
 * each with what the agent knows of its spend and its lease (hotset.c). */
#ifndef SLUICE_CLUSTER_HOTSET_H
#define SLUICE_CLUSTER_HOTSET_H

#include <stdbool.h>
#include "core.h"
#include "rule.h"

/* sluice:{sluice}:RULE|SOURCE (rcluster.c) is the longest form. */
#define REDIS_KEY_MAX		(RULE_TEXT_MAX + SLUICE_CIDR_STR_MAX + 24)

struct hot {
	struct sluice_src_key key;
	__u32 policy;			/* the rule's index in the policy table */
	char rkey[REDIS_KEY_MAX];	/* redis_bucket_key(): sluice:{RULE|SOURCE} */
	double t_us, tau_us;		/* the rule's emission interval and tolerance */
	__u64 cap;			/* the most one sync asks for: B + R x S */
	__u32 last_passed, last_dropped;	/* the bucket's counters at the last read */
	__u64 last_ns;			/* when they were read */
	__u64 passed;			/* passed since it became hot */
	__u64 lease_done;		/* units spent of leases since replaced */
	__u64 lease_seen;		/* units spent as of the last read */
	__u64 charged;			/* local spend reported to Redis */
	__u64 credit;			/* the credit last granted */
	__u64 charge, want, grant;	/* this sync's */
	__u32 idle;			/* syncs in a row without a drop or a lease spend */
	bool fresh;			/* found by this sync */
	bool ask;			/* asks Redis this sync */
	bool release;			/* leaves the hot set after this sync */
};

struct hot_set {
	struct hot *e;			/* SLUICE_CLUSTER_HOT_MAX */
	unsigned int n;
	__s32 *index;			/* hash of e by key: HOT_SLOTS, -1 empty */
	bool full_said;
};
#define HOT_SLOTS	(2 * SLUICE_CLUSTER_HOT_MAX)	/* a power of two */

/* Indexes e[0..n) anew (after entries left or moved). */
void hot_reindex(struct hot_set *hs);
/* The entry of (key, policy), or NULL and the free slot of the index for it. */
struct hot *hot_find(struct hot_set *hs, const struct sluice_src_key *k, __u32 policy,
		     __u32 *slot);

#endif /* SLUICE_CLUSTER_HOTSET_H */
