/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The cluster agent's ABI: leases, hot notices, grants and the agent's
 * state. */
#ifndef SLUICE_ABI_CLUSTER_H
#define SLUICE_ABI_CLUSTER_H

#include <linux/types.h>
#include "sluice/bounds.h"
#include "sluice/sources.h"

/* What a bucket may admit beyond its share: units granted by the agent,
 * spent by CAS; void after expires_ns. Keyed by the bucket's key. */
struct sluice_lease {
	__u64 credit;		/* units left */
	__u64 expires_ns;	/* CLOCK_MONOTONIC */
	__u32 policy;		/* the rule's index: a lease serves it only */
	__u32 pad;
};

/* A hot notice: a bucket of a leased rule rejected by its share. */
struct sluice_hot {
	struct sluice_src_key key;	/* the bucket's */
	__u32 policy;
};

/* One lease write of the agent (bpf/cluster.bpf.c's sluice_grant). */
struct sluice_grant {
	struct sluice_src_key key;
	__u32 policy;
	__u64 credit;		/* in: the new credit (0 with expires_ns 0: release
				 * the lease); out: the credit it had left */
	__u64 expires_ns;
};
/* A grant's credit on return when no lease could be added (map full). */
#define SLUICE_GRANT_FAILED		(~0ULL)
struct sluice_grant_batch {
	__u32 n;
	__u32 pad;
	struct sluice_grant g[SLUICE_CLUSTER_GRANT_BATCH];
};

enum sluice_cluster_mode {
	SLUICE_CLUSTER_NONE = 0,	/* no agent has run on this interface */
	SLUICE_CLUSTER_UP = 1,		/* agent up, Redis answering */
	SLUICE_CLUSTER_FALLBACK = 2,	/* agent up, Redis not answering */
	SLUICE_CLUSTER_STOPPED = 3,	/* the agent exited */
};

/* The agent's state, written by it alone; the commit reads mode and peers
 * for the shares, status and the exporter the rest. */
struct sluice_cluster_state {
	__u32 mode;		/* enum sluice_cluster_mode */
	__u32 peers;		/* N the shares use, >= 1 */
	__u32 pid;		/* the agent's */
	__u32 sync_ms;
	__u64 started_ns;	/* CLOCK_MONOTONIC: agent start */
	__u64 heartbeat_ns;	/* CLOCK_MONOTONIC: the agent's last loop */
	__u64 last_sync_ns;	/* CLOCK_MONOTONIC: last successful sync, 0 none */
	__u64 syncs;		/* successful */
	__u64 sync_failures;
	__u64 grants;		/* lease grants written */
	__u64 granted;		/* units granted */
	__u64 redis_ops;	/* commands sent */
	__u64 fallbacks;	/* times it entered fallback */
	__u64 fallback_ns;	/* time in fallback, finished periods */
	__u64 fallback_since_ns; /* CLOCK_MONOTONIC, 0 when not in fallback */
	__u32 leases;		/* buckets holding a lease now */
	__u32 npeers;		/* names in peer[] */
	char node[SLUICE_CLUSTER_NAME_MAX];
	char url[SLUICE_CLUSTER_URL_MAX];
	char peer[SLUICE_CLUSTER_PEERS_MAX][SLUICE_CLUSTER_NAME_MAX];
};

#endif /* SLUICE_ABI_CLUSTER_H */
