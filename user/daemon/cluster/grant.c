// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* grant: how the agent asks Redis for its leases, one pipelined round trip
 * of EVALSHAs (the heartbeat, then the Lua grant of each hot bucket, which
 * Redis runs atomically), and when its syncs fall (multiples of S from its
 * own start). */
#include <string.h>
#include <stdio.h>
#include <hiredis/hiredis.h>
#include "core.h"
#include "agent.h"
#include "cluster_lua.h"

static int send_beat(struct agent *ag)
{
	const char *argv[] = { "EVALSHA", ag->r.beat_sha, "1", redis_nodes_key(&ag->r), ag->member,
			       ag->ttl_arg, ag->limit_arg };

	return redis_append(&ag->r, 7, argv);
}

/* The most fields a bucket's hash of asking hosts may hold: room for the
 * cap's peers and as many that are no agent's. tests/tests.mk builds an
 * agent with 0 (build/tests/sluice-fcfs-cluster): the hash is dropped at
 * every grant, each host asks alone, first come, first served, and
 * tests/cluster/fair.sh must fail with it. */
#ifndef GRANT_ASKERS_MAX
#define GRANT_ASKERS_MAX	PEERS_ANSWER_MAX
#endif

/* e's grant: its bucket's key and, beside it, the hosts asking for it
 * (the bucket's name and a suffix, so any hash tag carries over), its GCRA
 * terms, this sync's charge and want, and what the fair split needs: this
 * agent's NAME#ID, its S in µs, and the most asking hosts Redis keeps. */
static int send_grant(struct agent *ag, const struct hot *e)
{
	char t[NUM_MAX], tau[NUM_MAX], charge[NUM_MAX], want[NUM_MAX];
	char askers[REDIS_KEY_MAX + sizeof(ASKERS_SUFFIX)], askers_max[NUM_MAX];
	const char *argv[] = { "EVALSHA", ag->r.grant_sha, "2", e->rkey, askers, t, tau,
			       charge, want, ag->member, ag->sync_us_arg, askers_max };

	snprintf(askers, sizeof(askers), "%s%s", e->rkey, ASKERS_SUFFIX);
	snprintf(askers_max, sizeof(askers_max), "%u", GRANT_ASKERS_MAX);
	num_arg(t, e->t_us);
	num_arg(tau, e->tau_us);
	snprintf(charge, sizeof(charge), "%llu", (unsigned long long)e->charge);
	snprintf(want, sizeof(want), "%llu", (unsigned long long)e->want);
	return redis_append(&ag->r, (int)(sizeof(argv) / sizeof(argv[0])), argv);
}

/* Reads e's grant: at most what it wants; its charge now counts as
 * reported. 1: NOSCRIPT (send again), 0, -1 (why said). */
static int grant_reply(struct agent *ag, __u64 deadline, struct hot *e)
{
	redisReply *rep;
	int ret = redis_script_reply(&ag->r, deadline, &rep);

	if (ret)
		return ret;
	if (rep->type == REDIS_REPLY_ERROR && !strncmp(rep->str, "TRYAGAIN", 8)) {
		/* Redis Cluster moving the bucket's slot, its key there and its
		 * hosts' key not yet (or the other way): no grant this sync,
		 * and the charge stays unreported until the next. */
		e->grant = 0;
		freeReplyObject(rep);
		return 0;
	}
	if (rep->type != REDIS_REPLY_INTEGER || rep->integer < 0)
		return reply_refused(&ag->r, "the grant", rep);
	e->grant = (__u64)rep->integer;
	if (e->grant > e->want)
		e->grant = e->want;
	e->charged += e->charge;
	freeReplyObject(rep);
	return 0;
}

/* Step 3: one pipelined round trip, the heartbeat and a grant per hot
 * bucket; a script Redis forgot (SCRIPT FLUSH, a restart behind a proxy)
 * is loaded again and its commands sent once more. 0, or -1. */
int redis_exchange(struct agent *ag, __u64 deadline, __u32 *npeers)
{
	struct hot_set *hs = &ag->hot;
	bool again_beat = false;
	unsigned int again = 0;
	int ret;

	if (send_beat(ag))
		return -1;
	for (unsigned int i = 0; i < hs->n; i++)
		if (hs->e[i].ask && send_grant(ag, &hs->e[i]))
			return -1;
	ret = beat_reply(ag, deadline, npeers);
	if (ret < 0)
		return -1;
	again_beat = ret;
	for (unsigned int i = 0; i < hs->n; i++) {
		if (!hs->e[i].ask)
			continue;
		ret = grant_reply(ag, deadline, &hs->e[i]);
		if (ret < 0)
			return -1;
		hs->e[i].ask = ret;	/* still to ask */
		again += ret;
	}
	if (!again_beat && !again)
		return 0;
	if (load_scripts(&ag->r, deadline) || (again_beat && send_beat(ag)))
		return -1;
	for (unsigned int i = 0; i < hs->n; i++)
		if (hs->e[i].ask && send_grant(ag, &hs->e[i]))
			return -1;
	if (again_beat && beat_reply(ag, deadline, npeers))
		goto noscript;
	for (unsigned int i = 0; i < hs->n; i++)
		if (hs->e[i].ask && grant_reply(ag, deadline, &hs->e[i]))
			goto noscript;
	return 0;
noscript:
	if (ag->r.c) {
		snprintf(ag->r.why, sizeof(ag->r.why), "NOSCRIPT right after SCRIPT LOAD");
		redis_close(&ag->r);
	}
	return -1;
}

/* The tick after prev: the next multiple of S on CLOCK_MONOTONIC from the
 * start (ticks missed are skipped). */
__u64 next_tick(__u64 prev, __u64 sync_ns)
{
	__u64 now = mono_now_ns();

	if (now < prev + sync_ns)
		return prev + sync_ns;
	return prev + ((now - prev) / sync_ns + 1) * sync_ns;
}
