/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The cluster agent: its state, and the steps its files share (agent.c
 * the loop, sync.c one sync, grant.c the Redis exchange, state.c the
 * transitions). */
#ifndef SLUICE_CLUSTER_AGENT_H
#define SLUICE_CLUSTER_AGENT_H

#include <stdbool.h>
#include <hiredis/hiredis.h>
#include "core.h"
#include "rule.h"
#include "redis.h"
#include "rcluster.h"
#include "hotset.h"
#include "lease.h"
#include "notify.h"

/* A peer in the heartbeat's set (redis_nodes_key(), sluice:{nodes}) is NAME#ID, ID random at each agent start: two
 * hosts given one name (cloned images, one --node) still count as two. */
#define PEER_ID_SEP		'#'
#define PEER_MEMBER_MAX		(SLUICE_CLUSTER_NAME_MAX + 1 + 16)

/* A member of sluice:{nodes} this agent has seen (peers.c). */
struct peer_seen {
	char member[PEER_MEMBER_MAX];
	char score[32];		/* its heartbeat's time as Redis wrote it */
	__u64 seen_ns;		/* CLOCK_MONOTONIC: when its heartbeat last moved on */
	__u8 beats;		/* heartbeats seen, up to 2: it counts at 2 */
	bool listed;		/* in the last answer */
};
/* Members the heartbeat answers with, at most: room for the cap's peers and
 * as many members that are no agent's. */
#define PEERS_ANSWER_MAX	(2 * SLUICE_CLUSTER_HOSTS_MAX)

struct agent {
	struct sluice_maps m;
	struct lease_writer *lw;
	struct redis r;
	struct sluice_cluster_state st;
	struct policy *pol;		/* the active generation's */
	__u64 pol_gen;
	struct hot_set hot;
	struct sluice_grant *grants;	/* SLUICE_CLUSTER_HOT_MAX */
	__u64 sync_ns;
	__u64 ttl_ms;			/* the heartbeat's */
	char ttl_arg[NUM_MAX];
	char member[PEER_MEMBER_MAX];	/* NAME#ID, this agent in sluice:{nodes} */
	char limit_arg[NUM_MAX];	/* members the heartbeat answers with, at most */
	char sync_us_arg[NUM_MAX];	/* S in µs, for the grant's fair split */
	struct peer_seen *seen;		/* SLUICE_CLUSTER_HOSTS_MAX */
	__u32 nseen;
	__u64 peers_ns;			/* CLOCK_MONOTONIC: the last heartbeat answered */
	bool odd_said;			/* members that are no agent's: said */
	struct notify nt;		/* the service manager's watchdog */
};

static inline __u64 ceil_pos(double x)
{
	__u64 i = (__u64)x;

	return x > (double)i ? i + 1 : i;
}

/* agent.c: runs the agent of iface until SIGINT or SIGTERM: the exit code.
 * conf: the URL and what redis_setup read, taken over (and torn down). */
int agent_run(const char *iface, struct redis *conf, const char *node, __u64 sync_ms);

/* sync.c */
/* The live cluster rule at index idx, or NULL when there is none. */
const struct rule *cluster_rule(const struct agent *ag, __u32 idx);
/* Fills e's rule-derived fields from r: its Redis key and its GCRA terms. */
void hot_bind(const struct agent *ag, struct hot *e, const struct rule *r);
/* Releases every lease of the hot set and empties it: 0, or -errno. */
int hot_release_all(struct agent *ag);
/* One sync: 0; -1 when Redis failed (why in ag->r.why); or an exit code
 * when the kernel side failed (printed). */
int sync_once(struct agent *ag, __u64 deadline, __u32 *npeers);

/* peers.c */
/* Reads the heartbeat's reply of the sync's pipeline and takes its peers.
 * 1: NOSCRIPT (send again), 0, -1 (why said). */
int beat_reply(struct agent *ag, __u64 deadline, __u32 *npeers);
/* The heartbeat's answer (live members and their times): N into *npeers,
 * the names into the state; false if it is not such a list. */
bool take_peers(struct agent *ag, const redisReply *rep, __u32 *npeers);
/* in (in_len bytes, or up to a NUL) as printed: bytes other than printable
 * ASCII, and backslash, as \xHH; cut to fit len. */
void cluster_name_show(const char *in, size_t in_len, char *out, size_t len);
/* grant.c (tests/cluster/racy_grant.c in the racy build) */
/* Step 3: the heartbeat and a grant per hot bucket asking, by deadline:
 * 0, or -1 (why in ag->r.why). */
int redis_exchange(struct agent *ag, __u64 deadline, __u32 *npeers);
/* The tick of the sync after prev. */
__u64 next_tick(__u64 prev, __u64 sync_ns);

/* state.c */
/* The outcome of one attempt: the mode and the shares follow. 0, or an
 * exit code. */
int after_sync(struct agent *ag, int ret, __u32 npeers, bool first);
/* The mode and the shares as a STATUS= line; with READY=1 when ready. */
void agent_notify_status(const struct agent *ag, bool ready);
/* Leaves the cluster cleanly: 0, or an exit code. */
int agent_leave(struct agent *ag);

#endif /* SLUICE_CLUSTER_AGENT_H */
