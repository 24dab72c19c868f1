// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The cluster agent's state (the cluster_state map: its mode, peers and
 * heartbeat), and the share of a --cluster rule's limit it gives this host. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <bpf/bpf.h>
#include "cluster_state.h"
#include "clock.h"
#include "map_write.h"
#include "output.h"

bool cluster_agent_alive(const struct sluice_cluster_state *s, __u64 now_ns)
{
	__u64 stale = 3 * SLUICE_NS_PER_SEC + 3ULL * s->sync_ms * 1000000ULL;

	if (s->mode != SLUICE_CLUSTER_UP && s->mode != SLUICE_CLUSTER_FALLBACK)
		return false;
	if (!s->pid || (kill((pid_t)s->pid, 0) && errno != EPERM))
		return false;
	return now_ns < s->heartbeat_ns + stale;
}

int cluster_state_read(const struct sluice_maps *m, struct sluice_cluster_state *s)
{
	__u32 zero = 0;

	if (bpf_map_lookup_elem(m->cluster_state, &zero, s))
		return runtime_err("cannot read the cluster state: %s", strerror(errno));
	return 0;
}

int cluster_state_write(const struct sluice_maps *m, const struct sluice_cluster_state *s)
{
	__u32 zero = 0;

	if (map_update(m->cluster_state, &zero, s, BPF_ANY))
		return runtime_err("cannot write the cluster state: %s", strerror(errno));
	return 0;
}

/* Connected (agent alive, Redis up): rate / (N * DIV) and leases; an agent
 * alive in fallback: rate / N; none, or a dead one: the whole rate (N is
 * what a running agent sees; it is forgotten once the agent stops). N is
 * at most SLUICE_CLUSTER_HOSTS_MAX, whatever the map says. */
int cluster_share_of(const struct sluice_maps *m, struct cluster_share *cs)
{
	struct sluice_cluster_state st;
	bool alive;
	__u64 n;

	if (cluster_state_read(m, &st))
		return EXIT_RUNTIME;
	alive = cluster_agent_alive(&st, mono_now_ns());
	n = alive && st.peers ? st.peers : 1;
	if (n > SLUICE_CLUSTER_HOSTS_MAX)
		n = SLUICE_CLUSTER_HOSTS_MAX;
	cs->leased = st.mode == SLUICE_CLUSTER_UP && alive;
	cs->div = cs->leased ? n * SLUICE_CLUSTER_LOCAL_DIV : n;
	return 0;
}
