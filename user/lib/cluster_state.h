/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The cluster agent's state in the cluster_state map, and the share of
 * each --cluster rule's limit that this host enforces (cluster_state.c). */
#ifndef SLUICE_CLUSTER_STATE_H
#define SLUICE_CLUSTER_STATE_H

#include <stdbool.h>
#include "sluice/sluice.h"
#include "maps.h"

int cluster_state_read(const struct sluice_maps *m, struct sluice_cluster_state *s);
int cluster_state_write(const struct sluice_maps *m, const struct sluice_cluster_state *s);
/* Whether an agent runs: mode up or fallback, its pid alive, its last loop
 * within 3 s and three sync intervals. */
bool cluster_agent_alive(const struct sluice_cluster_state *s, __u64 now_ns);
/* This host's share of its --cluster rules: the limit divided by div,
 * their rejected packets spending leases when leased. */
struct cluster_share {
	__u64 div;
	bool leased;
};
/* The share as the cluster state says now. Prints the error and returns
 * its exit code. */
int cluster_share_of(const struct sluice_maps *m, struct cluster_share *cs);

#endif /* SLUICE_CLUSTER_STATE_H */
