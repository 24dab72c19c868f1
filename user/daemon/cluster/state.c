// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* state: the cluster state others read (`cluster status`, the exporter,
 * the commits that size the shares) and the agent's transitions: up when
 * Redis answers, fallback when it does not, up again, stopped when it
 * leaves. */
#include <string.h>
#include <hiredis/hiredis.h>
#include "core.h"
#include "agent.h"

static const char *plural(__u64 n)
{
	return n == 1 ? "" : "s";
}

static int state_commit(struct agent *ag)
{
	ag->st.heartbeat_ns = mono_now_ns();
	return cluster_recommit(&ag->m, &ag->st);
}


static void say_peers(const struct agent *ag)
{
	char list[256] = "";
	size_t off = 0;

	for (__u32 i = 0; i < ag->st.npeers && off < sizeof(list); i++)
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s", i ? " " : "",
					ag->st.peer[i]);
	log_event(LOG_NOTICE, "cluster: %s: %u peer%s (%s): --cluster rules apply limit / %u "
		  "here, leasing more from Redis", ag->m.iface, ag->st.peers, plural(ag->st.peers),
		  list, ag->st.peers * SLUICE_CLUSTER_LOCAL_DIV);
}

void agent_notify_status(const struct agent *ag, bool ready)
{
	const struct sluice_cluster_state *s = &ag->st;
	char status[512];

	if (s->mode == SLUICE_CLUSTER_UP)
		snprintf(status, sizeof(status), "%s: up, %u peer%s: --cluster rules apply limit / "
			 "%u here and lease from %s", ag->m.iface, s->peers, plural(s->peers),
			 s->peers * SLUICE_CLUSTER_LOCAL_DIV, s->url);
	else
		snprintf(status, sizeof(status), "%s: fallback, %s unreachable (%s): --cluster "
			 "rules apply limit / %u", ag->m.iface, s->url, ag->r.why, s->peers);
	if (ready)
		notify_ready("%s", status);
	else
		notify_status("%s", status);
}

/* The outcome of one attempt (connect if needed, sync): the mode and the
 * shares follow. 0, or an exit code. */
int after_sync(struct agent *ag, int ret, __u32 npeers, bool first)
{
	struct sluice_cluster_state *s = &ag->st;
	__u64 now = mono_now_ns();
	bool was_up = s->mode == SLUICE_CLUSTER_UP;
	int err;

	if (ret > 0)
		return ret;
	if (ret < 0) {
		s->sync_failures++;
		err = hot_release_all(ag);
		if (err)
			return runtime_err("cannot release the leases of %s: %s", ag->m.iface,
					   strerror(-err));
		if (s->mode == SLUICE_CLUSTER_FALLBACK)
			return 0;
		s->mode = SLUICE_CLUSTER_FALLBACK;
		s->fallbacks++;
		s->fallback_since_ns = now;
		if (first)
			log_event(LOG_WARNING, "cluster: %s: cannot reach %s: %s; in fallback "
				  "(limit / %u) until it answers", ag->m.iface, s->url, ag->r.why,
				  s->peers);
		else
			log_event(LOG_WARNING, "cluster: %s: fallback: %s: %s; --cluster rules "
				  "apply limit / %u until it answers", ag->m.iface, s->url, ag->r.why,
				  s->peers);
		agent_notify_status(ag, false);
		return state_commit(ag);
	}
	s->syncs++;
	s->last_sync_ns = now;
	if (!npeers)
		npeers = 1;
	if (was_up && npeers == s->peers)
		return 0;
	if (!was_up) {
		if (s->fallback_since_ns)
			s->fallback_ns += now - s->fallback_since_ns;
		s->fallback_since_ns = 0;
		s->mode = SLUICE_CLUSTER_UP;
		log_event(LOG_NOTICE, "cluster: %s: up: %s answers%s", ag->m.iface, s->url,
			  first ? "" : "; the cluster's shares are back");
	}
	s->peers = npeers;
	say_peers(ag);
	agent_notify_status(ag, false);
	return state_commit(ag);
}

/* Leaves the cluster cleanly: N forgotten (nothing vouches for it once the
 * agent is gone), so the shares back to the whole limit, the leases
 * released, the node taken off the peer list at once (best effort: its
 * heartbeat would expire anyway). */
int agent_leave(struct agent *ag)
{
	const char *zrem[] = { "ZREM", redis_nodes_key(&ag->r), ag->member };
	struct sluice_cluster_state *s = &ag->st;
	__u64 now = mono_now_ns();
	redisReply *rep;
	int err, rc = 0;

	err = hot_release_all(ag);
	if (err)
		rc = runtime_err("cannot release the leases of %s: %s", ag->m.iface, strerror(-err));
	if (ag->r.c && !redis_call(&ag->r, now + ag->r.timeout_ns, 3, zrem, &rep))
		freeReplyObject(rep);
	if (s->fallback_since_ns)
		s->fallback_ns += now - s->fallback_since_ns;
	s->fallback_since_ns = 0;
	s->mode = SLUICE_CLUSTER_STOPPED;
	s->peers = 1;
	s->npeers = 0;
	err = state_commit(ag);
	log_event(LOG_NOTICE, "cluster: %s: stopped: --cluster rules apply their whole limit by "
		  "themselves", ag->m.iface);
	return rc ? rc : err;
}
