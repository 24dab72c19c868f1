// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sync: one sync of the cluster agent, steps 1 to 4 of the design: the hot
 * notices taken, each hot bucket's spend and want accounted, the Redis
 * exchange (grant.c) run, and the grants written into the kernel. */
#include <string.h>
#include <bpf/bpf.h>
#include <hiredis/hiredis.h>
#include "core.h"
#include "rule.h"
#include "agent.h"

/* The live cluster rule at index idx, or NULL when there is none (deleted,
 * or no longer --cluster). */
const struct rule *cluster_rule(const struct agent *ag, __u32 idx)
{
	const struct rule *r = rule_by_index(ag->pol, idx);

	if (!r || !r->cluster || r->action != SLUICE_ACT_LIMIT || !r->rate ||
	    r->unit != SLUICE_UNIT_PACKETS)
		return NULL;
	return r;
}

/* Fills e's rule-derived fields from r: its Redis key and its GCRA terms. */
void hot_bind(const struct agent *ag, struct hot *e, const struct rule *r)
{
	char label[RULE_TEXT_MAX], src[SLUICE_CIDR_STR_MAX];
	double per_s = (double)r->rate / (r->period ? r->period : 1);

	policy_rule_label(ag->pol, r, label, sizeof(label));
	format_source_prefix(&e->key, src, sizeof(src));
	redis_bucket_key(&ag->r, e->rkey, sizeof(e->rkey), label, src);
	e->t_us = 1e6 / per_s;
	e->tau_us = (double)r->burst * e->t_us;
	e->cap = r->burst + ceil_pos(per_s * (double)ag->sync_ns / SLUICE_NS_PER_SEC);
}

/* Step 1: the hot notices queued since the last sync join the hot set. */
static void take_notices(struct agent *ag)
{
	struct hot_set *hs = &ag->hot;
	struct sluice_hot h;
	const struct rule *r;
	struct hot *e;
	__u32 slot;

	hot_reindex(hs);
	for (unsigned int i = 0; i < SLUICE_CLUSTER_HOT_MAX && !hot_pop(&ag->m, &h); i++) {
		if (hot_find(hs, &h.key, h.policy, &slot))
			continue;
		r = cluster_rule(ag, h.policy);
		if (!r)
			continue;
		if (hs->n == SLUICE_CLUSTER_HOT_MAX) {
			if (!hs->full_said)
				log_event(LOG_WARNING, "cluster: %s: %u hot buckets already: more are "
					  "limited by their local share alone until some cool down",
					  ag->m.iface, SLUICE_CLUSTER_HOT_MAX);
			hs->full_said = true;
			continue;
		}
		e = &hs->e[hs->n];
		memset(e, 0, sizeof(*e));
		e->key = h.key;
		e->policy = h.policy;
		e->fresh = true;
		hot_bind(ag, e, r);
		hs->index[slot] = (__s32)hs->n++;
	}
}

/* Step 2 for one bucket: what it admitted on its own since it last
 * reported (the charge) and what it asks for the next interval (want). */
static void hot_account(struct agent *ag, struct hot *e, __u64 now)
{
	const struct rule *r = cluster_rule(ag, e->policy);
	struct sluice_bucket b;
	struct sluice_lease l;
	__u64 dpass, ddrop, left, used, spent, local, d;
	double n_local;

	e->ask = false;
	e->charge = e->want = e->grant = 0;
	if (!r || bucket_lookup(&ag->m, &e->key, &b)) {
		e->release = true;	/* its rule or its bucket is gone */
		return;
	}
	left = e->credit;
	if (!bpf_map_lookup_elem(ag->m.leases, &e->key, &l) && l.credit < left)
		left = l.credit;
	used = e->lease_done + (e->credit - left);
	spent = used - e->lease_seen;
	e->lease_seen = used;
	if (e->fresh) {
		/* Not seen before: what it passed before its first rejection was
		 * its local share, at most the share's burst and one interval
		 * of its rate; it asked for what it sent, up to the cap. */
		n_local = (double)(ag->st.peers ? ag->st.peers : 1) * SLUICE_CLUSTER_LOCAL_DIV;
		local = (__u64)((double)r->burst / n_local);
		local = (local ? local : 1) +
			ceil_pos((double)r->rate / (r->period ? r->period : 1) / n_local *
				 (double)ag->sync_ns / SLUICE_NS_PER_SEC);
		e->passed = b.passed < local ? b.passed : local;
		d = (__u64)b.passed + b.dropped;
		e->want = d < e->cap ? d : e->cap;
		if (!e->want)
			e->want = 1;
		e->idle = 0;
	} else {
		/* A bucket reclaimed and made anew counts from 0. */
		dpass = b.passed >= e->last_passed ? b.passed - e->last_passed : b.passed;
		ddrop = b.dropped >= e->last_dropped ? b.dropped - e->last_dropped : b.dropped;
		e->passed += dpass;
		d = dpass + ddrop;
		if (now > e->last_ns && d)
			d = ceil_pos((double)d * (double)ag->sync_ns / (double)(now - e->last_ns));
		e->want = d < e->cap ? d : e->cap;
		e->idle = ddrop || spent ? 0 : e->idle + 1;
		/* One that never spent a unit of lease leaves at its first
		 * sync without a drop: a spoofed source's packet or two made
		 * it hot, and it would hold a place in the set (and a grant a
		 * sync in Redis) for the idle syncs. */
		if (e->idle >= SLUICE_CLUSTER_IDLE_SYNCS || (e->idle && !used)) {
			e->want = 0;
			e->release = true;
		}
	}
	local = e->passed > used ? e->passed - used : 0;
	e->charge = local > e->charged ? local - e->charged : 0;
	e->last_passed = b.passed;
	e->last_dropped = b.dropped;
	e->last_ns = now;
	e->fresh = false;
	e->ask = true;
}

/* Releases every lease of the hot set, spent ones included, and empties
 * it (Redis gone: the leases would only be spent unreported; a new hot
 * set starts at the next sync that reaches Redis, from the notices of
 * buckets that hold no lease). 0, or -errno. */
int hot_release_all(struct agent *ag)
{
	struct hot_set *hs = &ag->hot;
	unsigned int n = 0;
	int err;

	for (unsigned int i = 0; i < hs->n; i++) {
		memset(&ag->grants[n], 0, sizeof(ag->grants[n]));
		ag->grants[n].key = hs->e[i].key;
		ag->grants[n].policy = hs->e[i].policy;
		n++;
	}
	err = n ? lease_grant(ag->lw, ag->grants, n) : 0;
	hs->n = 0;
	ag->st.leases = 0;
	return err;
}

/* Step 4: the grants into the kernel, in one batch; the old credits say
 * what was spent of the leases they replace. Released buckets leave the
 * set. 0, or -errno. */
static int write_grants(struct agent *ag)
{
	struct hot_set *hs = &ag->hot;
	__u64 expires = mono_now_ns() + 2 * ag->sync_ns;
	unsigned int n = 0, kept = 0, leases = 0;
	int err;

	for (unsigned int i = 0; i < hs->n; i++) {
		struct hot *e = &hs->e[i];
		struct sluice_grant *g = &ag->grants[n++];

		memset(g, 0, sizeof(*g));
		g->key = e->key;
		g->policy = e->policy;
		/* A grant of 0 is a release: no lease, so the bucket's drops
		 * keep telling (a spent lease would silence them). */
		if (!e->release && e->grant) {
			g->credit = e->grant;
			g->expires_ns = expires;
		}
		ag->st.grants += !e->release && e->grant;
		ag->st.granted += e->grant;
	}
	err = n ? lease_grant(ag->lw, ag->grants, n) : 0;
	if (err)
		return err;
	for (unsigned int i = 0; i < hs->n; i++) {
		struct hot *e = &hs->e[i];
		__u64 old = ag->grants[i].credit;
		bool failed = old == SLUICE_GRANT_FAILED;

		if (failed) {
			/* No room in the leases map: this bucket gets no lease (its
			 * grant is lost), and had none. */
			old = 0;
			if (!hs->full_said)
				log_event(LOG_WARNING, "cluster: %s: the leases map is full (%u): some "
					  "hot buckets get no lease this sync", ag->m.iface,
					  SLUICE_MAX_LEASES);
			hs->full_said = true;
		}
		if (old > e->credit)
			old = e->credit;
		if (e->release)
			continue;
		e->lease_done += e->credit - old;
		e->credit = failed ? 0 : e->grant;
		leases += e->credit > 0;
		if (kept != i)
			hs->e[kept] = *e;
		kept++;
	}
	hs->n = kept;
	ag->st.leases = leases;
	return 0;
}

/* One sync, steps 1 to 4 of the design, its Redis part done by deadline.
 * 0; -1 when Redis failed (why in ag->r.why); or an exit code when the
 * kernel side failed (printed). */
int sync_once(struct agent *ag, __u64 deadline, __u32 *npeers)
{
	__u64 now = mono_now_ns();
	int err;

	take_notices(ag);
	for (unsigned int i = 0; i < ag->hot.n; i++)
		hot_account(ag, &ag->hot.e[i], now);
	/* Every reply complete by the deadline, or none of the grants is
	 * written (the bounds take a grant to reach the kernel within S/2
	 * of the attempt's start). */
	if (redis_exchange(ag, deadline, npeers))
		return -1;
	err = write_grants(ag);
	if (err)
		return runtime_err("cannot write the leases of %s: %s", ag->m.iface, strerror(-err));
	return 0;
}
