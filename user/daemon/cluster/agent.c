// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* agent: `sluice cluster join`'s agent, which makes --cluster rules hold
 * across every host joined to one Redis.
 *
 * Every sync interval S the agent takes the hot notices the datapath queued
 * (buckets its local share rejected), and for each hot bucket reports what
 * the host admitted on its own and asks Redis for a lease of tokens: one
 * pipelined round trip of EVALSHAs (the heartbeat, then one grant per hot
 * bucket), whose grants go into the kernel's lease map in one go. Redis
 * unreachable: the host falls back to limit / N until it answers again. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include "core.h"
#include "rule.h"
#include "agent.h"

#define REDIS_TIMEOUT_MIN_NS	(5ULL * 1000 * 1000)	/* connect and command timeout, at least */
#define NODE_TTL_MIN_MS		500ULL
#define ATTACHED_CHECK_NS	SLUICE_NS_PER_SEC	/* a detached interface is seen this soon */

/* The bounds hold while S <= B/R (doc/cluster.md): with a longer sync, Redis's
 * bucket fills up between two grants and the cluster admits less than the
 * rate. Said on stderr for each such rule, at each policy read. */
static void warn_short_bursts(const struct agent *ag)
{
	char label[RULE_TEXT_MAX];
	const struct rule *r;
	double per_s, need;

	for (__u32 idx = 0; idx < SLUICE_MAX_POLICIES; idx++) {
		r = cluster_rule(ag, idx);
		if (!r)
			continue;
		per_s = (double)r->rate / (r->period ? r->period : 1);
		need = per_s * (double)ag->sync_ns / SLUICE_NS_PER_SEC;
		if ((double)r->burst >= need)
			continue;
		policy_rule_label(ag->pol, r, label, sizeof(label));
		log_event(LOG_WARNING, "cluster: %s: rule %s: its burst %llu is under rate x sync "
			  "(%.0f): Redis's bucket fills between syncs and the cluster admits less "
			  "than the rate; give --burst %llu or more, or --sync %.0f or less",
			  ag->m.iface, label,
			(unsigned long long)r->burst, need, ceil_pos(need),
			(double)r->burst / per_s * 1000);
	}
}

/* Whether the policy changed since it was read; reads it anew if so, and
 * binds the hot set to it. 0, or the exit code. */
static int policy_refresh(struct agent *ag)
{
	struct sluice_config cfg;
	const struct rule *r;
	__u64 gen;
	int err;

	live_config(&ag->m, &cfg);
	gen = SLUICE_GEN(cfg.gen_slot);
	if (gen == ag->pol_gen)
		return 0;
	err = policy_read(&ag->m, ag->pol);
	if (err)
		return err;
	ag->pol_gen = gen;
	warn_short_bursts(ag);
	for (unsigned int i = 0; i < ag->hot.n; i++) {
		r = cluster_rule(ag, ag->hot.e[i].policy);
		if (r)
			hot_bind(ag, &ag->hot.e[i], r);
	}
	return 0;
}

/* One attempt at the tick: connect when not connected, then sync; Redis
 * gets S/2 for both together. */
static int attempt(struct agent *ag, bool first)
{
	__u64 deadline = mono_now_ns() + ag->r.timeout_ns;
	__u32 npeers = 0;
	int ret = 0;

	/* Not connected, or a MOVED named the slot's new owner: (re)connect. */
	if ((!ag->r.c || redis_stale(&ag->r)) && redis_connect(&ag->r, deadline)) {
		if (first && ag->r.not_redis)
			return runtime_err("%s is not a Redis server the agent can use: %s",
					   ag->st.url, ag->r.why);
		ret = -1;
	}
	if (!ret)
		ret = sync_once(ag, deadline, &npeers);
	snprintf(ag->st.url, sizeof(ag->st.url), "%s", redis_where(&ag->r));
	return after_sync(ag, ret, npeers, first);
}

/* Sleeps until tick: true when SIGINT or SIGTERM came. The signals are
 * blocked and taken here, so one that comes while the agent talks to
 * Redis is seen right after, never lost. Under a watchdog, WATCHDOG=1 goes
 * from here: the loop came back from its last sync, and a sync longer
 * than the watchdog's interval is waited for in parts. */
static bool wait_tick(__u64 tick, const sigset_t *stop, struct notify *nt)
{
	for (;;) {
		__u64 now = mono_now_ns(), left = now < tick ? tick - now : 0;
		struct timespec ts;

		if (notify_due(nt, now))
			notify_alive(nt);
		left = notify_sleep_ns(nt, now, left);
		ts.tv_sec = (time_t)(left / SLUICE_NS_PER_SEC);
		ts.tv_nsec = (long)(left % SLUICE_NS_PER_SEC);
		if (sigtimedwait(stop, NULL, &ts) >= 0)
			return true;
		if (errno == EAGAIN && mono_now_ns() >= tick)
			return false;
	}
}

static void agent_free(struct agent *ag)
{
	redis_close(&ag->r);
	redis_teardown(&ag->r);
	if (ag->lw)
		lease_writer_close(ag->lw);
	maps_close(&ag->m);
	free(ag->pol);
	free(ag->hot.e);
	free(ag->hot.index);
	free(ag->grants);
	free(ag->seen);
}

/* Until SIGINT or SIGTERM (0), or the interface is detached (1). */
static int agent_loop(struct agent *ag, const sigset_t *stop)
{
	__u64 tick = mono_now_ns(), checked = tick;
	int err = attempt(ag, true);

	if (!err)
		agent_notify_status(ag, true);
	while (!err) {
		ag->st.heartbeat_ns = mono_now_ns();
		if (cluster_state_write(&ag->m, &ag->st))
			return runtime_err("cannot write the cluster state of %s: %s", ag->m.iface,
					   strerror(errno));
		tick = next_tick(tick, ag->sync_ns);
		if (wait_tick(tick, stop, &ag->nt)) {
			notify_stopping("%s: leaving the cluster", ag->m.iface);
			return agent_leave(ag);
		}
		if (mono_now_ns() - checked >= ATTACHED_CHECK_NS) {
			checked = mono_now_ns();
			if (!maps_still_current(&ag->m))
				return runtime_err("%s was detached, or attached anew with other "
						   "maps (an upgrade): the agent stops (join again "
						   "once it is attached)", ag->m.iface);
		}
		err = policy_refresh(ag);
		if (!err)
			err = attempt(ag, false);
	}
	return err;
}

/* Opens the interface's maps and the agent's tables, and clears the leases
 * a killed agent left; refuses when an agent already runs there (its state
 * into old). 0 with *out set, or the exit code with *out left NULL. */
static int agent_open(const char *iface, __u64 sync_ms, struct sluice_cluster_state *old,
		      struct agent **out)
{
	struct agent *ag;
	int err;

	ag = calloc(1, sizeof(*ag));
	if (!ag)
		return runtime_err("out of memory");
	ag->lw = NULL;
	ag->r.c = NULL;
	err = maps_open(iface, &ag->m);
	if (err) {
		free(ag);
		return err;
	}
	if (cluster_state_read(&ag->m, old))
		memset(old, 0, sizeof(*old));
	if (cluster_agent_alive(old, mono_now_ns())) {
		err = runtime_err("an agent already runs on %s (pid %u, node %s, %s): one per "
				  "interface; stop it first", iface, old->pid, old->node, old->url);
		goto out;
	}
	ag->pol = malloc(sizeof(*ag->pol));
	ag->hot.e = calloc(SLUICE_CLUSTER_HOT_MAX, sizeof(*ag->hot.e));
	ag->hot.index = calloc(HOT_SLOTS, sizeof(*ag->hot.index));
	ag->grants = calloc(SLUICE_CLUSTER_HOT_MAX, sizeof(*ag->grants));
	ag->seen = calloc(SLUICE_CLUSTER_HOSTS_MAX, sizeof(*ag->seen));
	if (!ag->pol || !ag->hot.e || !ag->hot.index || !ag->grants || !ag->seen) {
		err = runtime_err("out of memory");
		goto out;
	}
	ag->pol_gen = ~0ULL;	/* none read yet */
	ag->sync_ns = sync_ms * 1000000ULL;
	err = policy_refresh(ag);
	if (!err)
		err = lease_writer_open(&ag->m, &ag->lw);
	/* Leases a killed agent left: their buckets are in no hot set, and a
	 * spent one would keep its bucket from telling this agent. */
	if (!err)
		err = leases_clear(&ag->m);
	if (err)
		goto out;
	*out = ag;
	return 0;
out:
	agent_free(ag);
	free(ag);
	return err;
}

/* The agent's Redis terms and the state it starts from: NAME#ID among the
 * peers, ID random at each start; N = 1 (this agent) until it has seen
 * others beat, whatever an agent before it saw. */
static void agent_setup(struct agent *ag, struct redis *conf, const char *node, __u64 sync_ms)
{
	const struct redis_url *url = &conf->url;
	__u64 instance;

	ag->ttl_ms = 5 * sync_ms > NODE_TTL_MIN_MS ? 5 * sync_ms : NODE_TTL_MIN_MS;
	snprintf(ag->ttl_arg, sizeof(ag->ttl_arg), "%llu", (unsigned long long)ag->ttl_ms);
	ag->r = *conf;
	/* Taken over: the TLS context is ag->r's now, the password wiped here. */
	conf->tls = NULL;
	explicit_bzero(conf->password, sizeof(conf->password));
	ag->r.timeout_ns = ag->sync_ns / 2 > REDIS_TIMEOUT_MIN_NS ? ag->sync_ns / 2 :
								     REDIS_TIMEOUT_MIN_NS;
	ag->r.ops = &ag->st.redis_ops;
	ag->st.mode = SLUICE_CLUSTER_NONE;	/* until the first attempt says */
	snprintf(ag->limit_arg, sizeof(ag->limit_arg), "%u", PEERS_ANSWER_MAX);
	snprintf(ag->sync_us_arg, sizeof(ag->sync_us_arg), "%llu", (unsigned long long)sync_ms * 1000);
	ag->st.peers = 1;
	ag->st.pid = (__u32)getpid();
	ag->st.sync_ms = (__u32)sync_ms;
	ag->st.started_ns = mono_now_ns();
	snprintf(ag->st.node, sizeof(ag->st.node), "%s", node);
	if (getrandom(&instance, sizeof(instance), 0) != sizeof(instance))
		instance = ((__u64)getpid() << 32) ^ mono_now_ns();
	snprintf(ag->member, sizeof(ag->member), "%s%c%016llx", node, PEER_ID_SEP,
		 (unsigned long long)instance);
	snprintf(ag->st.url, sizeof(ag->st.url), "%s", url->text);
}

int agent_run(const char *iface, struct redis *conf, const char *node, __u64 sync_ms)
{
	struct sigaction ign = { .sa_handler = SIG_IGN };
	struct sluice_cluster_state old;
	struct agent *ag = NULL;
	sigset_t stop, saved;
	int err;

	err = agent_open(iface, sync_ms, &old, &ag);
	if (!ag) {
		redis_teardown(conf);
		return err;
	}
	agent_setup(ag, conf, node, sync_ms);
	/* A write to a Redis that went away must fail, not kill the agent. */
	sigaction(SIGPIPE, &ign, NULL);
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop, &saved);
	notify_init(&ag->nt);
	err = agent_loop(ag, &stop);
	if (err)
		notify_stopping("%s: the agent stopped on an error (see its log)", iface);
	sigprocmask(SIG_SETMASK, &saved, NULL);
	agent_free(ag);
	free(ag);
	return err;
}
