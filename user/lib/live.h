/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the live maps hold, read for the commands: the buckets, and the
 * rules that judge them. */
#ifndef SLUICE_LIVE_H
#define SLUICE_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include "sluice/sluice.h"
#include "sluice/algo.h"
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

/* ---- live_bans.c: the live bans of rules ---- */
/* A banned bucket, or an entry of the ban table (escalated): its rule and
 * how long the ban has left. */
struct rule_ban {
	struct bucket_row row; /* an escalated ban's key, and no bucket */
	const struct rule *rule;
	struct sluice_limit lim; /* of its rule in the live slot */
	__u64 left_ns;
	bool escalated;
};
/* Every banned bucket and escalated ban now, in no order, malloc'd into
 * *out (*n of them). Prints the error and returns its exit code. */
int rule_bans_read(const struct sluice_maps *m, const struct policy *p, struct rule_ban **out,
		   size_t *n);
/* qsort's order of rule bans: the longest left first. */
int rule_ban_cmp(const void *a, const void *b);
/* Whether bucket key k covers what ban del names: an address (any bucket
 * holding it), or ADDR/LEN (the keyed bucket of exactly that prefix). */
bool rule_ban_covers(const struct sluice_src_key *k, const struct sluice_src_key *want,
		     bool prefix);
/* A live ban of a --ban rule's bucket, or of a request rule (escalated),
 * that holds a source: query shows them, as ban list does. */
struct source_ban {
	struct sluice_src_key key; /* the bucket: the source's own, or its prefix's */
	const struct rule *rule;   /* of p, or NULL: a rule since deleted */
	__u64 left_ns;
	bool escalated;
};
/* Every live rule ban holding addr, longest first, malloc'd into *out (n
 * of them). Prints the error and returns its exit code. */
int source_bans(const struct sluice_maps *m, const struct policy *p,
		const struct sluice_src_key *addr, struct source_ban **out, size_t *n);

#endif
