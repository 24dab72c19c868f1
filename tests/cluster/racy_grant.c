// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* racy_grant: the agent's grant step as a plain read-modify-write, linked
 * into build/tests/sluice-racy-cluster in place of grant.c so that
 * tests/cluster/race.sh can show it sees a lost update: one pipelined GET
 * of every hot bucket's TAT, the GCRA computed here with this host's
 * CLOCK_REALTIME, then a second round trip of SETs. Two hosts that GET
 * between each other's GET and SET both spend the same tokens. Its syncs
 * are aligned across hosts so that they contend. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <hiredis/hiredis.h>
#include "core.h"
#include "agent.h"

static __u64 realtime_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (__u64)ts.tv_sec * 1000000 + (__u64)ts.tv_nsec / 1000;
}

int redis_exchange(struct agent *ag, __u64 deadline, __u32 *npeers)
{
	struct hot_set *hs = &ag->hot;
	const char *beat[] = { "EVALSHA", ag->r.beat_sha, "1", redis_nodes_key(&ag->r), ag->member,
			       ag->ttl_arg, ag->limit_arg };
	redisReply *rep;
	double now, tat, avail;
	char val[NUM_MAX], px[NUM_MAX];
	int ret;

	if (redis_append(&ag->r, 7, beat))
		return -1;
	for (unsigned int i = 0; i < hs->n; i++) {
		const char *get[] = { "GET", hs->e[i].rkey };

		if (hs->e[i].ask && redis_append(&ag->r, 2, get))
			return -1;
	}
	ret = beat_reply(ag, deadline, npeers);
	if (ret) {
		if (ret > 0)
			snprintf(ag->r.why, sizeof(ag->r.why), "NOSCRIPT (the heartbeat)");
		redis_close(&ag->r);
		return -1;
	}
	now = (double)realtime_us();
	for (unsigned int i = 0; i < hs->n; i++) {
		struct hot *e = &hs->e[i];

		if (!e->ask)
			continue;
		if (redis_reply(&ag->r, deadline, &rep))
			return -1;
		if (rep->type != REDIS_REPLY_STRING && rep->type != REDIS_REPLY_NIL)
			return reply_refused(&ag->r, "GET", rep);
		tat = rep->type == REDIS_REPLY_STRING ? strtod(rep->str, NULL) : 0;
		freeReplyObject(rep);
		if (tat < now)
			tat = now;
		tat += (double)e->charge * e->t_us;
		avail = (now + e->tau_us - tat) / e->t_us;
		e->grant = avail <= 0 ? 0 : (__u64)avail < e->want ? (__u64)avail : e->want;
		tat += (double)e->grant * e->t_us;
		e->charged += e->charge;
		num_arg(val, tat);
		snprintf(px, sizeof(px), "%llu",
			 (unsigned long long)(tat - now > 1000 ? ceil_pos((tat - now) / 1000) : 1));
		{
			const char *set[] = { "SET", e->rkey, val, "PX", px };

			if (redis_append(&ag->r, 5, set))
				return -1;
		}
	}
	for (unsigned int i = 0; i < hs->n; i++) {
		if (!hs->e[i].ask)
			continue;
		if (redis_reply(&ag->r, deadline, &rep))
			return -1;
		if (rep->type != REDIS_REPLY_STATUS)
			return reply_refused(&ag->r, "SET", rep);
		freeReplyObject(rep);
	}
	return 0;
}

/* The tick after prev, aligned to CLOCK_REALTIME multiples of S, so that
 * hosts sync at the same moments and contend. */
__u64 next_tick(__u64 prev, __u64 sync_ns)
{
	__u64 now = mono_now_ns();
	struct timespec rt;
	__u64 r;

	(void)prev;
	clock_gettime(CLOCK_REALTIME, &rt);
	r = (__u64)rt.tv_sec * SLUICE_NS_PER_SEC + (__u64)rt.tv_nsec;
	return now + (sync_ns - r % sync_ns);
}
