/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Bounds shared by the XDP program and userspace: what the CLI accepts,
 * how far the datapath walks and retries, and the cluster agent's limits. */
#ifndef SLUICE_BOUNDS_H
#define SLUICE_BOUNDS_H

#include <linux/types.h>

#define SLUICE_NS_PER_SEC		1000000000ULL

/* Limits of the policy the CLI accepts. */
#define SLUICE_RATE_MIN			1ULL
#define SLUICE_RATE_MAX			1000000000ULL	/* 1e9 per second */
#define SLUICE_BURST_MIN		1ULL
#define SLUICE_BURST_MAX		1000000000ULL
/* A burst may be worth at most this many seconds of its rate, so B*T stays
 * far below the clock's range in GCRA units (see gcra.h). */
#define SLUICE_BURST_SECONDS_MAX	1000000ULL

/* The longest rule in words (`policy show`'s line), with its NUL. */
#define SLUICE_RULE_TEXT_MAX		256U

/* Default and bounds of the source table (--max-sources: sources live at
 * once, one slot per address; see srctab.h). */
#define SLUICE_MAX_SOURCES_DEFAULT	262144U
#define SLUICE_MAX_SOURCES_MIN		1024U
#define SLUICE_MAX_SOURCES_MAX		16777216U
/* Fragmented datagrams in flight whose first fragment's L4 facts the
 * fragment table (struct sluice_frag_key) keeps, least recently used
 * forgotten first; Cilium's default size. */
#define SLUICE_FRAG_ENTRIES		8192U
/* Stripe locks that serialise inserts of one key (srctab.h), and how many
 * times a new source tries to take its stripe, or waits for a reclaim of
 * its own slot to end, before its packet is dropped (no_bucket) and
 * counted (SLUICE_EV_LOCK_GAVE_UP): a claim holds it for well under a
 * microsecond, so a holder still there after this many tries has stalled
 * (preempted), and spinning on would only stall this CPU too. */
#define SLUICE_SRC_LOCKS		4096U
#define SLUICE_SRC_LOCK_TRIES		64U
/* attach --established-idle: how long an established source's slot must
 * have been idle before a new source may take it; default and bounds. */
#define SLUICE_EST_IDLE_NS_DEFAULT	(10ULL * 60 * SLUICE_NS_PER_SEC)	/* 10 min */
#define SLUICE_EST_IDLE_NS_MIN		SLUICE_NS_PER_SEC
#define SLUICE_EST_IDLE_NS_MAX		(7ULL * 86400 * SLUICE_NS_PER_SEC)	/* 7 days */
/* Admissions of a slot an establishment test counts at most (srctab.h's
 * limit_returned): far more than it needs, and k x T stays in 64 bits. */
#define SLUICE_EST_ADMITS_MAX		1024U

/* The prefix ban table (ban add, ban load; --max-bans): prefixes banned
 * at once, and the named lists they come in. A table takes memory only for
 * the prefixes it holds. */
#define SLUICE_MAX_BANS_DEFAULT		1048576U
#define SLUICE_MAX_BANS_MIN		1024U
#define SLUICE_MAX_BANS_MAX		16777216U
#define SLUICE_BAN_LISTS		64U
/* Lists that may hold one prefix at once, each with its own end (the
 * entry keeps them all: struct sluice_pfx_ban's ends[]). */
#define SLUICE_BAN_ENDS			8U
/* Entries one packet's ban lookup may meet: one per prefix length that
 * covers a source (/128 down to /0), each expired but the last. */
#define SLUICE_BAN_DEPTH		129U
/* ban add --for and a list entry's duration: 1 s to 10 years. */
#define SLUICE_BAN_FOR_NS_MIN		SLUICE_NS_PER_SEC
#define SLUICE_BAN_FOR_NS_MAX		(3650ULL * 86400 * SLUICE_NS_PER_SEC)

/* Datapath bounds. */
/* VLAN tags (802.1Q, 802.1ad) looked through to the IP header: Linux strips
 * nested priority tags (VLAN ID 0) one after another, so a frame is judged
 * by the packet inside however many it carries up to this; one tagged
 * deeper is dropped (SLUICE_R_VLAN_TOO_DEEP), since its source is unread. */
#define SLUICE_MAX_VLAN_TAGS		8
#define SLUICE_MAX_IPV6_EXT_HDRS	8
/* Attempts at one admission's CAS: a failed CAS means another CPU admitted a
 * packet meanwhile. The first few run inline, the rest in a bpf_loop; a
 * packet is rejected unjudged only past them all. */
#define SLUICE_CAS_INLINE_TRIES		2
#define SLUICE_CAS_TRIES		1024
/* Attempts at the new-source budget's CAS (each lost one is another CPU's
 * admission). */
#define SLUICE_BUDGET_TRIES		8
/* Attempts at resolving a packet's rule while commits flip the policy. */
#define SLUICE_RESOLVE_TRIES		2
/* Attempts at converting a bucket's TAT to a new policy (see rebind). */
#define SLUICE_CONVERT_TRIES		16
/* How often a packet re-reads a bucket that another CPU is re-binding to a
 * new policy generation before it gives up (fail closed). */
#define SLUICE_PENDING_SPINS		64

/* --ban DURATION bounds. */
#define SLUICE_BAN_NS_MIN		1000000ULL		/* 1 ms */
#define SLUICE_BAN_NS_MAX		(7ULL * 86400 * SLUICE_NS_PER_SEC)	/* 7 days */
/* --ban-after N of a request rule: requests rejected in a row before the
 * source is banned in XDP; default and bounds. */
#define SLUICE_BAN_AFTER_DEFAULT	10U
#define SLUICE_BAN_AFTER_MIN		1ULL
#define SLUICE_BAN_AFTER_MAX		1000000ULL

/*
 * Cluster-wide limits. Connected, each host's share of a --cluster rule is
 * rate / (N * SLUICE_CLUSTER_LOCAL_DIV) with burst max(1, burst / (N * DIV)),
 * N the hosts seen; what a source needs beyond it the agent leases from a
 * Redis-side bucket each sync interval. In fallback (Redis unreachable) or
 * without an agent the share is rate / N, burst max(1, burst / N).
 */
#define SLUICE_CLUSTER_LOCAL_DIV	8U
/* A bucket the share rejects and no lease serves tells the agent at its
 * 1st, 65th, ... drop (cluster_hot), so quiet and spoofed sources, never
 * rejected by the share, never reach the agent or Redis. */
#define SLUICE_CLUSTER_NOTICE_EVERY	64U
/* Syncs a leasing bucket may go without a drop or a spent lease before
 * the agent stops leasing for it. */
#define SLUICE_CLUSTER_IDLE_SYNCS	10U
#define SLUICE_MAX_LEASES		65536U
/* Attempts at taking one unit of a lease by CAS. */
#define SLUICE_LEASE_TRIES		8
#define SLUICE_CLUSTER_HOT_MAX		4096U
#define SLUICE_CLUSTER_GRANT_BATCH	64U
/* N, the hosts a --cluster rule's share divides by, is at most this: the
 * peers an agent counts (those it has seen beat in Redis, itself included;
 * see doc/cluster.md). A cluster of more hosts gets shares of 1/256. */
#define SLUICE_CLUSTER_HOSTS_MAX	256U
/* Peer names kept for `cluster status` (the first of the N counted). */
#define SLUICE_CLUSTER_PEERS_MAX	64U
#define SLUICE_CLUSTER_NAME_MAX		64U
#define SLUICE_CLUSTER_URL_MAX		128U
#define SLUICE_CLUSTER_SYNC_MS_DEFAULT	100U
#define SLUICE_CLUSTER_SYNC_MS_MIN	10U
#define SLUICE_CLUSTER_SYNC_MS_MAX	10000U
/* Per second: Redis keeps a TAT in microseconds as a double. */
#define SLUICE_CLUSTER_RATE_MAX		1000000ULL

#endif /* SLUICE_BOUNDS_H */
