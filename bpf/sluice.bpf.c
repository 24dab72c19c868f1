// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sluice's XDP program: per-source GCRA buckets, resolved once per policy
 * generation from an LPM trie, admitted with a compare-and-swap. */
#include "parse.h"
#include "sluice/algo.h"

#define READ_ONCE(x) (*(volatile typeof(x) *)&(x))
#define WRITE_ONCE(x, v) (*(volatile typeof(x) *)&(x) = (v))

/* The atomic step of admission; tests/bpf swaps in a racy one to prove the
 * race test catches lost updates. */
#ifndef SLUICE_CAS
#define SLUICE_CAS(ptr, old, new) __sync_val_compare_and_swap(ptr, old, new)
#endif
/* Taking a new bucket; tests/bpf swaps in one that always fails, to show
 * that a source without a bucket is never passed unjudged. */
#ifndef SLUICE_NEW_BUCKET
#define SLUICE_NEW_BUCKET(map, key, val) bpf_map_update_elem(map, key, val, BPF_NOEXIST)
#endif
/* After parsing; the benchmark swaps in one that gives each packet a
 * random source, to measure floods of never-seen sources. */
#ifndef SLUICE_SOURCE_HOOK
#define SLUICE_SOURCE_HOOK(src) ((void)(src))
#endif

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SLUICE_MAX_SOURCES_DEFAULT);	/* set by attach */
	__type(key, struct sluice_src_key);
	__type(value, struct sluice_bucket);
} src_buckets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, SLUICE_POLICY_SLOTS * SLUICE_MAX_POLICIES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sluice_lpm_key);
	__type(value, struct sluice_lpm_val);
} policy_lpm SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLUICE_POLICY_SLOTS * SLUICE_MAX_POLICIES);
	__type(key, __u32);
	__type(value, struct sluice_policy);
} policy_table SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);	/* words stored whole, see maps.c */
	__type(key, __u32);
	__type(value, struct sluice_config);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SLUICE_R_MAX);
	__type(key, __u32);
	__type(value, struct sluice_counter);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SLUICE_MAX_POLICIES);
	__type(key, __u32);
	__type(value, struct sluice_policy_counter);
} policy_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_meta);
} meta SEC(".maps");

/* Sources banned by the check server's escalation (sluice.h). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SLUICE_MAX_BANS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sluice_src_key);
	__type(value, struct sluice_ban);
} bans SEC(".maps");

/* Cluster-wide limits (sluice.h): leases the agent writes (through
 * bpf/cluster.bpf.c) and leased rules spend, notices of the buckets that
 * want one, and the agent's state. */
#include "leases_map.h"

struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, SLUICE_CLUSTER_HOT_MAX);
	__type(value, struct sluice_hot);
} cluster_hot SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_cluster_state);
} cluster_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SLUICE_EV_MAX);
	__type(key, __u32);
	__type(value, __u64);
} events SEC(".maps");

static __always_inline int count(__u32 reason, __u64 bytes)
{
	struct sluice_counter *c = bpf_map_lookup_elem(&counters, &reason);

	if (c) {
		c->packets++;
		c->bytes += bytes;
	}
	return sluice_reason_is_drop(reason) ? XDP_DROP : XDP_PASS;
}

/* A monitored packet passed, and is counted apart as well: the dry run's
 * would-drops, per rule. */
static __always_inline void count_policy(__u32 policy, __u32 reason, __u64 bytes)
{
	struct sluice_policy_counter *pc;

	pc = bpf_map_lookup_elem(&policy_counters, &policy);
	if (!pc)
		return;
	if (sluice_reason_is_drop(reason)) {
		pc->drop_packets++;
		pc->drop_bytes += bytes;
		return;
	}
	pc->pass_packets++;
	pc->pass_bytes += bytes;
	if (reason == SLUICE_R_MONITORED) {
		pc->monitor_packets++;
		pc->monitor_bytes += bytes;
	}
}

#define barrier() asm volatile("" ::: "memory")

/* What a policy says, copied out of the table. */
struct verdict {
	struct sluice_limit lim;
	__u64 since;
	__u32 action;
	__u8 unit;
	__u8 key_len;
	__u8 flags;
};

/* A packet as rules see it: its source's home key and its L4 facts; kidx
 * says which bucket it is judged in (SLUICE_KEY_HOME or a keyed one's
 * policy index). */
struct pkt {
	struct sluice_src_key src;
	struct l4 l4;
	__u32 kidx;
	__u64 bytes;
};

/* A packet rebind could not judge in the bucket it was given: the policy
 * changed under it so that another bucket is now the source's, or a commit
 * landed while it lost CAS after CAS (judge_step). Counted as no_bucket
 * (fail closed); only at the instant of a commit. */
#define JUDGE_REROUTE	SLUICE_R_MAX

static __always_inline int match_holds(const struct sluice_match *m, const struct l4 *l4)
{
	__u8 f = m->flags;

	if ((f & SLUICE_MATCH_PROTO) && m->proto != l4->proto)
		return 0;
	if ((f & SLUICE_MATCH_PORT) &&
	    (!(l4->flags & L4_PORTS) || l4->dport < m->dport_lo || l4->dport > m->dport_hi))
		return 0;
	if ((f & SLUICE_MATCH_SYN) && !(l4->flags & L4_SYN))
		return 0;
	return 1;
}

/*
 * The index of the rule that decides p in slot, or the default. *direct is
 * set when that does not depend on the packet's L4 facts (the source's
 * candidates start with a rule without a match), so every packet of the
 * source goes to the same rule; otherwise *lead is the first candidate,
 * the most specific rule that matches on L4 (an l4_unreadable drop is
 * counted on it), and it decides a later IPv6 fragment, which has no L4
 * facts the stack believes: so a protocol rule that is the most specific
 * for its sources holds for whole datagrams.
 */
static __always_inline __u32 resolve(const struct pkt *p, __u32 slot, int *direct, __u32 *lead)
{
	struct sluice_lpm_key key = {
		.prefixlen = SLUICE_LPM_FULL_PREFIX,
		.slot = (__u8)slot,
		.family = p->src.family,
	};
	struct sluice_lpm_val *hit;
	__u32 i, n;

	*direct = 1;
	__builtin_memcpy(key.addr, p->src.a, sizeof(key.addr));
	hit = bpf_map_lookup_elem(&policy_lpm, &key);
	if (!hit)
		return SLUICE_POLICY_DEFAULT;
	n = hit->n;
	if (n && hit->m[0].flags) {
		*direct = 0;
		*lead = hit->m[0].policy < SLUICE_MAX_POLICIES ? hit->m[0].policy
							       : SLUICE_POLICY_DEFAULT;
		if (p->l4.flags & L4_LATER_FRAG)
			return *lead;
	}
	for (i = 0; i < SLUICE_MATCH_MAX && i < n; i++) {
		if (!match_holds(&hit->m[i], &p->l4))
			continue;
		return hit->m[i].policy < SLUICE_MAX_POLICIES ? hit->m[i].policy
							      : SLUICE_POLICY_DEFAULT;
	}
	return SLUICE_POLICY_DEFAULT;
}

/*
 * Copy policy idx of the slot that gen_slot names, then check that the slot
 * was not rewritten meanwhile: a commit writes only the inactive slot, so it
 * is enough that no second flip has begun. With want_idle, the config must
 * also show no commit writing (for reads of the inactive slot). Returns 0 on
 * a consistent copy.
 */
static __always_inline int read_policy(struct sluice_config *cfg, __u64 gen_slot, __u32 slot,
				       __u32 idx, struct verdict *v, int want_idle)
{
	struct sluice_policy *p;
	__u32 key;

	if (idx >= SLUICE_MAX_POLICIES || (want_idle && (gen_slot & SLUICE_GEN_WRITING)))
		return -1;
	key = slot * SLUICE_MAX_POLICIES + idx;
	p = bpf_map_lookup_elem(&policy_table, &key);
	if (!p)
		return -1;
	v->lim.interval = READ_ONCE(p->interval);
	v->lim.tolerance = READ_ONCE(p->tolerance);
	v->lim.ban = READ_ONCE(p->ban);
	v->lim.ban_windows = READ_ONCE(p->ban_windows);
	v->lim.algo = READ_ONCE(p->algo);
	v->lim.bits = READ_ONCE(p->bits);
	v->since = READ_ONCE(p->since);
	v->action = READ_ONCE(p->action);
	v->unit = READ_ONCE(p->unit);
	v->key_len = READ_ONCE(p->key_len);
	v->flags = READ_ONCE(p->flags);
	barrier();
	if (want_idle)
		return READ_ONCE(cfg->gen_slot) == gen_slot ? 0 : -1;
	return SLUICE_GEN(READ_ONCE(cfg->gen_slot)) == SLUICE_GEN(gen_slot) ? 0 : -1;
}

/*
 * The history of policy idx in the slot that gen_slot names (struct
 * sluice_policy): when its limit last changed (*at, CLOCK_MONOTONIC ns:
 * the moment generation `since` became active) and the first generation
 * its previous limit judged (*prev_since). Checked as read_policy does;
 * returns 0 on a consistent copy.
 */
static __always_inline int read_change(struct sluice_config *cfg, __u64 gen_slot, __u32 slot,
				       __u32 idx, __u64 *at, __u64 *prev_since)
{
	struct sluice_policy *p;
	__u32 key;

	if (idx >= SLUICE_MAX_POLICIES)
		return -1;
	key = slot * SLUICE_MAX_POLICIES + idx;
	p = bpf_map_lookup_elem(&policy_table, &key);
	if (!p)
		return -1;
	*at = READ_ONCE(p->since) == SLUICE_GEN(gen_slot) ? READ_ONCE(cfg->active_since_ns[slot & 1])
							  : READ_ONCE(p->since_ns);
	*prev_since = READ_ONCE(p->prev_since);
	barrier();
	return SLUICE_GEN(READ_ONCE(cfg->gen_slot)) == SLUICE_GEN(gen_slot) ? 0 : -1;
}

/* The limit policy idx had before its last change, into v's limit and
 * action; checked as read_policy does. */
static __always_inline int read_prev(struct sluice_config *cfg, __u64 gen_slot, __u32 slot,
				     __u32 idx, struct verdict *v)
{
	struct sluice_policy *p;
	__u32 key;

	if (idx >= SLUICE_MAX_POLICIES)
		return -1;
	key = slot * SLUICE_MAX_POLICIES + idx;
	p = bpf_map_lookup_elem(&policy_table, &key);
	if (!p)
		return -1;
	v->lim.interval = READ_ONCE(p->prev_interval);
	v->lim.tolerance = READ_ONCE(p->prev_tolerance);
	v->lim.ban = READ_ONCE(p->prev_ban);
	v->lim.ban_windows = READ_ONCE(p->prev_ban_windows);
	v->lim.algo = READ_ONCE(p->prev_algo);
	v->lim.bits = READ_ONCE(p->prev_bits);
	v->action = READ_ONCE(p->prev_action);
	barrier();
	return SLUICE_GEN(READ_ONCE(cfg->gen_slot)) == SLUICE_GEN(gen_slot) ? 0 : -1;
}

/* The clock policy v is judged by (SLUICE_POLICY_COARSE_CLOCK). */
static __always_inline __u64 policy_clock(const struct verdict *v)
{
	return (v->flags & SLUICE_POLICY_COARSE_CLOCK) ? bpf_ktime_get_coarse_ns()
						       : bpf_ktime_get_ns();
}

/* Whether a source decided by a rule with verdict v and candidates that
 * do not depend on L4 (direct) is served by its home bucket. */
static __always_inline int served_at_home(int direct, const struct verdict *v)
{
	return direct && v->key_len >= SLUICE_KEY_LEN_SOURCE;
}

/* State of the TAT conversion loop (bpf_loop, so it is verified once). */
struct convert {
	struct sluice_bucket *b;
	struct verdict ov, nv;
	__u64 at;		/* when the new policy took effect, ns */
	int old_known;
};

static long convert_step(__u64 i, struct convert *cv)
{
	struct sluice_bucket *b = cv->b;
	__u64 tat, next;

	if (!b)
		return 1;
	tat = READ_ONCE(b->tat);
	next = limit_rebind(tat, cv->at, cv->old_known, cv->ov.action, &cv->ov.lim,
			    cv->nv.action, &cv->nv.lim);
	/* Every conversion moves the state, so a CAS based on the old one
	 * fails; one unit more debt (1/64 ns of a token bucket, one packet or
	 * byte of a window) is the safe side. */
	if (next == tat)
		next = tat == SLUICE_U64_MAX ? tat - 1 : tat + 1;
	return SLUICE_CAS(&b->tat, tat, next) == tat;
}

/*
 * Bind bucket b, last bound by word `bound`, to the generation of gen_slot:
 * one CAS of the bound word decides which CPU does it. The packet's rule is
 * resolved again; when it no longer belongs in this bucket (a home bucket
 * whose source now needs keyed buckets, or a keyed bucket of another rule),
 * the home bucket is marked so and the packet is rerouted. When the rule's
 * limit changed, the winner marks the word pending, converts TAT with CAS
 * (the source keeps its tokens, clamped to the new burst) and then publishes
 * the new word; packets that see the pending bit wait for it. The state is
 * converted as of the moment the rule's limit last changed, from the limit
 * before: commits that changed other rules meanwhile do not matter. A
 * bucket idle across two or more changes of its rule, whose old limit is
 * gone, starts spent at the last one (limit_rebind). A packet that
 * read the old word re-checks it after reading TAT, and every conversion
 * changes TAT, so no packet is judged by one policy against the other's
 * TAT. Only packets that passed that re-check before the pending bit was
 * set can make the conversion's CAS fail, once each, so
 * SLUICE_CONVERT_TRIES is enough. Global, so the verifier checks it once.
 * Returns 0 when the bucket is bound (by this CPU or another), 1 to
 * reroute, -1 if not.
 */
__noinline int rebind(struct sluice_config *cfg, struct sluice_bucket *b,
		      const struct pkt *p, __u64 gen_slot, __u64 bound)
{
	__u64 gen = SLUICE_GEN(gen_slot), old_gen = SLUICE_BOUND_GEN(bound);
	__u32 slot = SLUICE_GEN_SLOT(gen_slot), idx, old_idx = SLUICE_BOUND_IDX(bound);
	struct convert cv = { .b = b };
	__u64 word, changed, prev_since, t;
	__u32 lead;
	int direct;

	if (!cfg || !b || !p)
		return -1;
	idx = resolve(p, slot, &direct, &lead);
	if (read_policy(cfg, gen_slot, slot, idx, &cv.nv, 0))
		return -1;
	word = SLUICE_BOUND(gen, idx);
	if (p->kidx == SLUICE_KEY_HOME) {
		if (!served_at_home(direct, &cv.nv)) {
			__sync_val_compare_and_swap(&b->bound, bound, word);
			return 1;
		}
		word |= SLUICE_BOUND_DIRECT;
	} else if (served_at_home(direct, &cv.nv) || idx != p->kidx) {
		return 1;
	}

	/* The same rule with the same limit: TAT means the same; just rebind. */
	if ((idx == old_idx && cv.nv.since <= old_gen) || cv.nv.action != SLUICE_ACT_LIMIT) {
		__sync_val_compare_and_swap(&b->bound, bound, word);
		return 0;
	}
	if (read_change(cfg, gen_slot, slot, idx, &changed, &prev_since))
		return -1;
	if (idx == old_idx) {
		/* Its rule changed since the bucket's generation: the limit
		 * before that change judged it, if it is the one before. */
		cv.old_known = prev_since <= old_gen &&
			       !read_prev(cfg, gen_slot, slot, idx, &cv.ov);
	} else {
		/* Another rule: the previous generation's policy is still in
		 * the inactive slot; and a policy unchanged since the bucket's
		 * generation is the one it was judged by. Either judged it
		 * until this generation. */
		cv.old_known = old_gen + 1 == gen &&
			       !read_policy(cfg, gen_slot, !slot, old_idx, &cv.ov, 1);
		if (!cv.old_known && !read_policy(cfg, gen_slot, slot, old_idx, &cv.ov, 0)) {
			cv.old_known = cv.ov.since <= old_gen;
			/* not known: the later of both rules' last changes */
			if (!read_change(cfg, gen_slot, slot, old_idx, &t, &prev_since) &&
			    t > changed)
				changed = t;
		}
		if (cv.old_known)
			changed = READ_ONCE(cfg->active_since_ns[slot & 1]);
	}

	if (__sync_val_compare_and_swap(&b->bound, bound, word | SLUICE_BOUND_PENDING) != bound)
		return 0;	/* another CPU rebinds it */
	/* As of that moment (written before its flip, stable while the slot
	 * is active), not of this packet; on the new policy's clock, so its
	 * first readings are not behind `at`. */
	cv.at = policy_clock(&cv.nv);
	if (cv.at > changed)
		cv.at = changed;
	bpf_loop(SLUICE_CONVERT_TRIES, convert_step, &cv, 0);
	WRITE_ONCE(b->bound, word);
	return 0;
}

/* Keep the first len bits of a (the 128-bit form); zero the rest. */
static __always_inline void mask_addr(__u8 *a, __u32 len)
{
	int i;

#pragma unroll
	for (i = 0; i < SLUICE_ADDR_LEN; i++) {
		if (len >= (__u32)(i + 1) * 8)
			continue;
		if (len <= (__u32)i * 8)
			a[i] = 0;
		else
			a[i] &= (__u8)(0xff << (8 - (len - i * 8)));
	}
}

/* One admission in progress: what judge_step needs between attempts. */
struct judge {
	struct sluice_config *cfg;
	struct sluice_bucket *b;
	const struct pkt *p;
	__u64 now;		/* ns, read at each step */
	__u32 idx;		/* the deciding policy */
	__u32 reason;
};

/*
 * A packet its rule idx rejected as rate limited (p's bucket, whose
 * dropped count is dropped): when the rule is leased (--cluster, agent
 * up), admitted on the bucket's lease while one is live (not expired) for
 * this rule and has credit left (taken by CAS, boundedly: each lost CAS is
 * another CPU's admission). A bucket with no live lease tells the agent at
 * every SLUICE_CLUSTER_NOTICE_EVERY-th drop, its first included; a full queue
 * only delays the notice to the next one. Global, so the verifier walks it
 * once; returns the packet's reason.
 */
__noinline int lease_take(struct sluice_config *cfg, const struct pkt *p, __u32 idx,
		       __u32 dropped)
{
	struct sluice_hot hot = { .policy = idx };
	struct sluice_policy *pol;
	struct sluice_lease *l;
	__u64 credit;
	__u32 key;
	int i;

	if (!cfg || !p || idx >= SLUICE_MAX_POLICIES)
		return SLUICE_R_RATE_LIMITED;
	key = SLUICE_GEN_SLOT(READ_ONCE(cfg->gen_slot)) * SLUICE_MAX_POLICIES + idx;
	pol = bpf_map_lookup_elem(&policy_table, &key);
	if (!pol || !(READ_ONCE(pol->flags) & SLUICE_POLICY_LEASED))
		return SLUICE_R_RATE_LIMITED;
	hot.key = p->src;
	if (p->kidx != SLUICE_KEY_HOME) {
		hot.key.key_len = READ_ONCE(pol->key_len);
		hot.key.policy = (__u16)idx;
		mask_addr(hot.key.a, hot.key.key_len);
	}
	l = bpf_map_lookup_elem(&leases, &hot.key);
	/* Expiry decides first: an expired lease is no lease, whatever its
	 * credit, so its drops tell the agent again (an agent that lost the
	 * bucket, e.g. after a failed sync, finds it anew). The coarse clock
	 * lags by up to a tick: a lease lives at most one tick past its
	 * expiry. */
	if (l && READ_ONCE(l->policy) == idx &&
	    bpf_ktime_get_coarse_ns() < READ_ONCE(l->expires_ns)) {
		for (i = 0; i < SLUICE_LEASE_TRIES; i++) {
			credit = READ_ONCE(l->credit);
			if (!credit)
				break;
			if (SLUICE_CAS(&l->credit, credit, credit - 1) == credit)
				return SLUICE_R_WITHIN_LIMIT;
		}
		/* Live and spent: the agent holds the bucket and sees its
		 * drops at the next sync; no notice. */
		return SLUICE_R_RATE_LIMITED;
	}
	/* A bucket whose drop count saturated tells at random, as often. */
	if (dropped % SLUICE_CLUSTER_NOTICE_EVERY == 0 ||
	    (dropped >= SLUICE_SRC_COUNT_MAX &&
	     bpf_get_prandom_u32() % SLUICE_CLUSTER_NOTICE_EVERY == 0))
		bpf_map_push_elem(&cluster_hot, &hot, 0);
	return SLUICE_R_RATE_LIMITED;
}

/* A packet the bucket's rule rejects: banned while the bucket's state says
 * so (algo.h); else rate limited, which starts a ban when the rule has one.
 * Returns 0 when the ban's CAS lost a race (judge again). */
static __always_inline int reject(struct judge *j, struct sluice_bucket *b, __u64 tat,
				  const struct verdict *v, int banned)
{
	if (banned) {
		j->reason = SLUICE_R_BANNED;
	} else {
		if (v->lim.ban &&
		    SLUICE_CAS(&b->tat, tat, limit_ban_state(&v->lim, j->now)) != tat)
			return 0;
		j->reason = SLUICE_R_RATE_LIMITED;
	}
	if (v->flags & SLUICE_POLICY_MONITOR)
		j->reason = SLUICE_R_MONITORED;
	return 1;
}

/* One attempt at an admission step with CAS, against the policy the bucket is
 * bound to in the active generation. Returns 1 with j->reason set when the
 * packet is decided, 0 when a lost race, a rebind or a policy flip means the
 * step must start again. Without can_rebind (the retry loop, whose frame
 * would otherwise stack rebind's and its conversion loop's on top), a bucket
 * of an older generation is rerouted: that is a commit landing while this
 * packet lost CAS after CAS. */
static __always_inline int judge_step(struct judge *j, int can_rebind)
{
	struct sluice_bucket *b = j->b;
	__u64 gen_slot, bound, tat, next;
	struct verdict v;
	int spins, r;

	if (!b || !j->cfg || !j->p)
		return 1;
	gen_slot = READ_ONCE(j->cfg->gen_slot);
	bound = READ_ONCE(b->bound);
	if (bound & SLUICE_BOUND_PENDING) {
		/* Another CPU converts TAT: wait for it, boundedly. */
		for (spins = 0; spins < SLUICE_PENDING_SPINS; spins++)
			if (!(READ_ONCE(b->bound) & SLUICE_BOUND_PENDING))
				return 0;
		return 1;	/* still pending: fail closed */
	}
	if (SLUICE_BOUND_GEN(bound) != SLUICE_GEN(gen_slot)) {
		if (!can_rebind) {
			j->reason = JUDGE_REROUTE;
			return 1;
		}
		/* A rebind that could not read the new policy (another commit
		 * began meanwhile) is tried again, against the newer one. */
		r = rebind(j->cfg, b, j->p, gen_slot, bound);
		if (r > 0)
			j->reason = JUDGE_REROUTE;
		return r > 0;
	}
	j->idx = SLUICE_BOUND_IDX(bound);
	if (read_policy(j->cfg, gen_slot, SLUICE_GEN_SLOT(gen_slot), j->idx, &v, 0))
		return 0;
	if (v.action == SLUICE_ACT_ALLOW) {
		j->reason = SLUICE_R_ALLOWED;
		return 1;
	}
	if (v.action != SLUICE_ACT_LIMIT) {
		j->reason = SLUICE_R_DENIED;
		return 1;
	}
	tat = READ_ONCE(b->tat);
	barrier();
	if (READ_ONCE(b->bound) != bound)
		return 0;	/* rebound since: judge again */
	/* The clock after the state: any CPU that moved the state read the
	 * clock before it did, so the state never lies ahead of now by a
	 * stale clock (a token bucket's TAT past its tolerance, a window's
	 * tag past now's window: both would look like a ban). Read again at
	 * each attempt. */
	j->now = policy_clock(&v);
	r = limit_judge(&v.lim, tat, j->now, v.unit == SLUICE_UNIT_BYTES ? j->p->bytes : 1,
			&next);
	if (r != SLUICE_JUDGE_ADMITTED)
		return reject(j, b, tat, &v, r == SLUICE_JUDGE_BANNED);
	if (SLUICE_CAS(&b->tat, tat, next) != tat)
		return 0;	/* another CPU moved TAT first */
	j->reason = SLUICE_R_WITHIN_LIMIT;
	return 1;
}

static long judge_retry(__u64 i, struct judge *j)
{
	return judge_step(j, 0);
}

/*
 * Admit or reject packet p in bucket b. A failed CAS means another CPU
 * admitted a packet meanwhile, so retrying makes progress; the first
 * attempts run inline (the common, uncontended case), the rest in a
 * bpf_loop, verified once, up to SLUICE_CAS_TRIES. Only past that bound is
 * a packet rejected unjudged: it never over-admits. Sets *idx to the
 * deciding policy; returns the reason.
 */
static __always_inline __u32 judge_bucket(struct sluice_config *cfg, struct sluice_bucket *b,
					  const struct pkt *p, __u32 *idx)
{
	struct judge j = {
		.cfg = cfg, .b = b, .p = p,
		.idx = *idx, .reason = SLUICE_R_RATE_LIMITED,
	};
	int i;

	for (i = 0; i < SLUICE_CAS_INLINE_TRIES; i++)
		if (judge_step(&j, 1))
			goto out;
	bpf_loop(SLUICE_CAS_TRIES, judge_retry, &j, 0);
out:
	*idx = j.idx;
	return j.reason == JUDGE_REROUTE ? SLUICE_R_NO_BUCKET : j.reason;
}

/* One more packet on a bucket's passed or dropped, which saturate. */
static __always_inline void count_source(__u32 *n)
{
	if (READ_ONCE(*n) < SLUICE_SRC_COUNT_MAX)
		__sync_fetch_and_add(n, 1);
}

static __always_inline void count_event(__u32 event)
{
	__u64 *n = bpf_map_lookup_elem(&events, &event);

	if (n)
		(*n)++;
}

/*
 * Whether the new-source budget lets one more entry into the source table.
 * The budget's TAT is shared by every CPU, so it is read first and changed
 * only when it admits: a flood over the budget only reads its cache line.
 * A CAS lost to another CPU's admission is tried again, boundedly.
 */
static __always_inline int new_source_admitted(struct sluice_config *cfg)
{
	struct sluice_budget *bg = &cfg->new_src[SLUICE_GEN_SLOT(READ_ONCE(cfg->gen_slot))];
	__u64 interval = READ_ONCE(bg->interval), tolerance, tat, next, now;
	int i;

	if (!interval)
		return 1;	/* no budget */
	tolerance = READ_ONCE(bg->tolerance);
	now = gcra_now(bpf_ktime_get_ns());
	for (i = 0; i < SLUICE_BUDGET_TRIES; i++) {
		tat = READ_ONCE(cfg->new_tat);
		if (!gcra_admit(tat, now, interval, tolerance, &next))
			return 0;
		if (SLUICE_CAS(&cfg->new_tat, tat, next) == tat)
			return 1;
	}
	return 0;
}

/*
 * A per-source keyed bucket of rule idx for a source whose home bucket
 * home last judged it by the same rule (an L4 rule now covers the source,
 * so its packets need keyed buckets): it starts as the home bucket's state
 * and generation, so its first packet re-binds it by the usual rules and
 * the source keeps what it had spent. Left as it is when home says
 * otherwise or changes under the read.
 */
static __always_inline void carry_home(const struct sluice_bucket *home, __u32 idx,
				       struct sluice_bucket *fresh)
{
	__u64 bound = READ_ONCE(home->bound), tat;

	tat = READ_ONCE(home->tat);
	barrier();
	if (!(bound & SLUICE_BOUND_DIRECT) || (bound & SLUICE_BOUND_PENDING) ||
	    SLUICE_BOUND_IDX(bound) != idx || READ_ONCE(home->bound) != bound)
		return;
	fresh->tat = tat;
	fresh->bound = bound & ~SLUICE_BOUND_DIRECT;
}

/* The bucket at key, taken with a full burst bound to (gen, idx) if there
 * is none and the new-source budget allows; NULL otherwise, with *reason
 * saying why. missing: the caller just looked key up and found nothing.
 * home: the source's home bucket when it has one (and key is keyed): the
 * source is known, so the budget does not apply, and a per-source key of
 * the rule home was judged by starts from home's state (carry_home). */
static __always_inline struct sluice_bucket *take_bucket(struct sluice_config *cfg,
							 const struct sluice_src_key *key,
							 __u64 bound, int missing,
							 const struct sluice_bucket *home,
							 __u32 *reason)
{
	struct sluice_bucket *b, fresh = { .bound = bound };

	b = missing ? NULL : bpf_map_lookup_elem(&src_buckets, key);
	if (b)
		return b;
	if (home) {
		if (key->key_len >= SLUICE_KEY_LEN_SOURCE)
			carry_home(home, SLUICE_BOUND_IDX(bound), &fresh);
	} else if (!new_source_admitted(cfg)) {
		*reason = SLUICE_R_NEW_SOURCE_LIMITED;
		return NULL;
	}
	if (!SLUICE_NEW_BUCKET(&src_buckets, key, &fresh))
		count_event(SLUICE_EV_NEW_SOURCE_ADMITTED);
	b = bpf_map_lookup_elem(&src_buckets, key);
	if (!b)	/* no memory, or evicted at once by another CPU */
		*reason = SLUICE_R_NO_BUCKET;
	return b;
}

/*
 * The IPv6 part of the parser, from l3 bytes into the frame (after the
 * Ethernet header and its tags): global, so the verifier checks the
 * extension-header walk once, not once for every way the rest of the
 * program goes on. IPv4 is parsed inline (parse_frame), which is cheaper.
 */
__noinline int parse_ipv6_at(struct xdp_md *ctx, __u32 l3, struct sluice_src_key *src,
			     struct l4 *l4)
{
	struct cursor c;

	if (!ctx || !src || !l4 || l3 > PARSE_L3_OFFSET_MAX)
		return PARSE_MALFORMED;
	c.pos = (void *)(long)ctx->data + l3;
	c.end = (void *)(long)ctx->data_end;
	return parse_ipv6(&c, src, l4);
}

/*
 * Parse the frame: its source and L4 facts into src and l4, and a
 * PARSE_* result (PARSE_MALFORMED when even the Ethernet header or its
 * tags are cut short, PARSE_VLAN_TOO_DEEP when tags go on past the last
 * one walked).
 */
static __always_inline int parse_frame(struct xdp_md *ctx, struct sluice_src_key *src,
				       struct l4 *l4)
{
	struct cursor c = {
		.pos = (void *)(long)ctx->data,
		.end = (void *)(long)ctx->data_end,
	};
	__be16 proto;
	int r;

	r = parse_eth(&c, &proto);
	if (r)
		return r < 0 ? PARSE_MALFORMED : r;
	if (proto == bpf_htons(ETH_P_IP))
		return parse_ipv4(&c, src, l4);
	if (proto == bpf_htons(ETH_P_IPV6))
		return parse_ipv6_at(ctx, (__u32)(c.pos - (void *)(long)ctx->data), src, l4);
	return PARSE_NON_IP;
}

/* xdp.frags: multi-buffer aware, so it attaches natively to interfaces
 * with jumbo MTUs; headers are read from the first buffer only, and bytes
 * count the whole frame. */
SEC("xdp.frags")
int sluice_xdp(struct xdp_md *ctx)
{
	struct pkt p = { .bytes = bpf_xdp_get_buff_len(ctx) };
	__u32 zero = 0, reason, idx = SLUICE_POLICY_DEFAULT, lead = SLUICE_POLICY_DEFAULT;
	struct sluice_bucket *b, *home;
	struct sluice_src_key key;
	struct sluice_config *cfg;
	struct verdict v;
	__u64 gen_slot, bound;
	int r, pass, direct, tries;

	r = parse_frame(ctx, &p.src, &p.l4);
	if (r == PARSE_NON_IP)
		return count(SLUICE_R_NON_IP, p.bytes);
	if (r == PARSE_MALFORMED)
		return count(SLUICE_R_MALFORMED, p.bytes);
	if (r == PARSE_VLAN_TOO_DEEP)
		return count(SLUICE_R_VLAN_TOO_DEEP, p.bytes);
	SLUICE_SOURCE_HOOK(&p.src);

	cfg = bpf_map_lookup_elem(&config, &zero);
	if (!cfg)	/* an array's only entry: cannot happen */
		return count(SLUICE_R_NO_BUCKET, p.bytes);

	/* A source the check server banned (a request rule's escalation):
	 * dropped before anything else; looked up only while bans exist. */
	if (READ_ONCE(cfg->bans) & SLUICE_BANS_LIVE) {
		struct sluice_ban *ban = bpf_map_lookup_elem(&bans, &p.src);

		if (ban && bpf_ktime_get_ns() < READ_ONCE(ban->until_ns)) {
			idx = READ_ONCE(ban->policy);
			if (idx >= SLUICE_MAX_POLICIES)
				idx = SLUICE_POLICY_DEFAULT;
			reason = SLUICE_R_BANNED;
			goto counted;
		}
	}

	/* The common case: the source's home bucket serves it in this
	 * generation, and knows its rule. */
	p.kidx = SLUICE_KEY_HOME;
	home = bpf_map_lookup_elem(&src_buckets, &p.src);
	if (home) {
		bound = READ_ONCE(home->bound);
		if ((bound & SLUICE_BOUND_DIRECT) && !(bound & SLUICE_BOUND_PENDING) &&
		    SLUICE_BOUND_GEN(bound) == SLUICE_GEN(READ_ONCE(cfg->gen_slot))) {
			b = home;
			goto judge;
		}
	}

	/* Resolve the packet's rule; a commit meanwhile means once more. Allow
	 * and deny need no bucket. */
	for (tries = 0; tries < SLUICE_RESOLVE_TRIES; tries++) {
		gen_slot = READ_ONCE(cfg->gen_slot);
		idx = resolve(&p, SLUICE_GEN_SLOT(gen_slot), &direct, &lead);
		if (!read_policy(cfg, gen_slot, SLUICE_GEN_SLOT(gen_slot), idx, &v, 0))
			break;
	}
	if (tries == SLUICE_RESOLVE_TRIES) {
		/* Commits in quick succession, each within one packet. */
		idx = SLUICE_POLICY_DEFAULT;
		reason = SLUICE_R_NO_BUCKET;
		goto counted;
	}
	/* Malformed where a rule covering its source matches on L4: the
	 * protocol, port or SYN it was judged by may not be what the stack
	 * sees (a SYN behind too many extension headers, a first fragment too
	 * short for its port), so no such rule can be matched safely. */
	if (r == PARSE_MALFORMED_SRC && !direct) {
		idx = lead;
		reason = SLUICE_R_L4_UNREADABLE;
		goto counted;
	}
	if (v.action == SLUICE_ACT_ALLOW) {
		reason = SLUICE_R_ALLOWED;
		goto counted;
	}
	if (v.action != SLUICE_ACT_LIMIT) {
		reason = SLUICE_R_DENIED;
		goto counted;
	}
	reason = SLUICE_R_NO_BUCKET;
	if (served_at_home(direct, &v)) {
		/* A stale home bucket is rebound by judge_step. */
		b = home ? home : take_bucket(cfg, &p.src, SLUICE_BOUND(SLUICE_GEN(gen_slot), idx) |
							       SLUICE_BOUND_DIRECT, 1, NULL, &reason);
	} else {
		key = p.src;
		key.key_len = v.key_len;
		key.policy = (__u16)idx;
		mask_addr(key.a, v.key_len);
		p.kidx = idx;
		b = take_bucket(cfg, &key, SLUICE_BOUND(SLUICE_GEN(gen_slot), idx), 0, home,
				&reason);
	}
	if (!b) {
		/* Over the new-source budget, or no entry to be had: fail
		 * closed, and visibly; a --monitor rule passes it. */
		if (v.flags & SLUICE_POLICY_MONITOR)
			reason = SLUICE_R_MONITORED;
		goto counted;
	}
judge:
	reason = judge_bucket(cfg, b, &p, &idx);
	if (reason == SLUICE_R_RATE_LIMITED && READ_ONCE(cfg->leasing))
		reason = lease_take(cfg, &p, idx, READ_ONCE(b->dropped));
	/* A --monitor rule's would-drop counts as the source's dropped: the
	 * dry run shows whom enforcing would hit (the rule says which). */
	count_source(sluice_reason_is_drop(reason) || reason == SLUICE_R_MONITORED ?
		     &b->dropped : &b->passed);

counted:
	pass = !sluice_reason_is_drop(reason);
	/* Passed but malformed: the stack decides; the source paid for it. */
	if (pass && r == PARSE_MALFORMED_SRC)
		reason = SLUICE_R_MALFORMED;
	count_policy(idx, reason, p.bytes);
	return count(reason, p.bytes);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
