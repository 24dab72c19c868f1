/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The cluster agent under --redis-cluster (rcluster.c): the seeds, the
 * slot of the agent's one hash tag and its owner, MOVED and ASK followed;
 * and the agent's Redis keys in both modes, built there only. */
#ifndef SLUICE_CLUSTER_RCLUSTER_H
#define SLUICE_CLUSTER_RCLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <hiredis/hiredis.h>
#include "redis.h"

#define RC_SEEDS_MAX	16U	/* HOST:PORT of --redis-cluster, at most */

/* --redis-cluster SEEDS for the URL already in r->url: the URL is the
 * first seed and says how to speak to every node (redis:// or rediss://,
 * the ACL user). 0, or a usage error printed. */
int rcluster_setup(struct redis *r, const char *seeds);
/* Frees what rcluster_setup took; nothing without --redis-cluster. */
void rcluster_free(struct redis *r);

/* The hooks of redis.c, each called only when r->rc is set. */
/* Connection closed: the replies awaited are lost, the side one closed. */
void rcluster_close(struct redis *r);
/* Before a connect: the owner of the tag's slot into r->url (a MOVED's
 * node, or read from CLUSTER SLOTS of a seed or a node seen): 0, or -1
 * with why. */
int rcluster_locate(struct redis *r, __u64 deadline);
/* A command queued: kept until its reply, which may send it elsewhere. */
int rcluster_sent(struct redis *r, int argc, const char **argv);
/* Its reply: a MOVED or an ASK is followed once, on the named node, and
 * *out becomes that node's reply. 0, or -1 with the connection closed. */
int rcluster_reply(struct redis *r, __u64 deadline, redisReply **out);

/* Whether a MOVED named a new owner: the agent reconnects there. */
bool redis_stale(const struct redis *r);
/* Where the agent speaks, as status shows it: the URL, and under
 * --redis-cluster the slot and the node that owns it. */
const char *redis_where(const struct redis *r);

/* The agent's keys. */
/* The bucket of (rule label, source) into buf. */
void redis_bucket_key(const struct redis *r, char *buf, size_t len, const char *label,
		      const char *src);
/* The heartbeat's sorted set. */
const char *redis_nodes_key(const struct redis *r);

#endif /* SLUICE_CLUSTER_RCLUSTER_H */
