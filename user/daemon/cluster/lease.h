/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The cluster agent's side of the leases map (lease.c): the lease writer,
 * and the hot notices the datapath queues. */
#ifndef SLUICE_CLUSTER_LEASE_H
#define SLUICE_CLUSTER_LEASE_H

#include "core.h"

struct lease_writer;
/* Loads bpf/cluster.bpf.c's lease writer on m's leases map. */
int lease_writer_open(const struct sluice_maps *m, struct lease_writer **out);
/* Writes n leases (any n, in batches): each g[i].credit replaces its
 * lease's credit (expires_ns 0 releases it) and comes back as the credit
 * it had left, SLUICE_GRANT_FAILED when the map had no room. 0 or -errno. */
int lease_grant(struct lease_writer *w, struct sluice_grant *g, unsigned int n);
void lease_writer_close(struct lease_writer *w);
/* Deletes every lease (an agent starting: none is its own). */
int leases_clear(const struct sluice_maps *m);
/* The next hot notice: 0, or -ENOENT when there is none. */
int hot_pop(const struct sluice_maps *m, struct sluice_hot *h);

#endif /* SLUICE_CLUSTER_LEASE_H */
