/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The live policy in the maps: read, committed to the inactive slot and
 * flipped to (store.c). */
#ifndef SLUICE_STORE_H
#define SLUICE_STORE_H

#include <stdbool.h>
#include "sluice/sluice.h"
#include "maps.h"
#include "policy.h"

struct sluice_limit;
/* A limit rule's limit as the policy table holds it (algo.h). */
void rule_limit(const struct rule *r, struct sluice_limit *l);
/* Reads the active generation's policy. */
int policy_read(const struct sluice_maps *m, struct policy *p);
/* Writes p into the inactive slot and flips to it; rules keep their index
 * while their identity stays. Prints the error and returns its exit code;
 * a policy refused before writing (EXIT_USAGE) changes nothing. */
int policy_commit(struct sluice_maps *m, struct policy *p);
/* The live policy's text (what an attach of another version re-reads),
 * written anew from the tables. */
int policy_text_refresh(const struct sluice_maps *m);
/* The new-source budget (limit new-sources): rate units per period with
 * burst; rate 0 is off. Print the error and return its exit code. */
int new_sources_write(const struct sluice_maps *m, __u64 rate, __u32 period, __u64 burst);
int new_sources_read(const struct sluice_maps *m, __u64 *rate, __u32 *period, __u64 *burst);
/* Whether the budget is spent now: a new source would be dropped. */
int budget_state(const struct sluice_maps *m, bool *spent);
/* The trie entry of CIDR at in policy p: its candidate rules, in the order
 * the datapath tries them. Prints and returns EXIT_USAGE past
 * SLUICE_MATCH_MAX. */
int policy_candidates(const struct policy *p, const struct cidr *at, struct sluice_lpm_val *v);
/* The picked interface's maps and live policy; with edit, writable and
 * locked against other editors. On error nothing is left open. */
int open_policy(struct sluice_maps *m, struct policy **p, bool edit);
/* Writes s (its mode and peers decide the shares) and commits the stored
 * policy again under the pin-dir lock, so every --cluster rule takes its
 * new share. */
int cluster_recommit(struct sluice_maps *m, const struct sluice_cluster_state *s);

#endif /* SLUICE_STORE_H */
