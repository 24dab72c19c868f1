// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The policy store: the live policy is read from, and a new one committed
 * to, the pinned policy maps. Two slots of the policy table and the trie
 * hold two generations; a commit writes the inactive slot, then flips the
 * config word to it in one store. Each rule keeps its table index (and so
 * its counters and its sources' buckets) while its identity, CIDR and
 * match, stays in the policy.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "sluice/algo.h"
#include "store.h"
#include "cluster_state.h"
#include "clock.h"
#include "map_write.h"
#include "opts.h"
#include "output.h"
#include "rule.h"

#define POLICY_READ_TRIES 8

static int read_config(const struct sluice_maps *m, struct sluice_config *cfg)
{
	__u32 zero = 0;

	if (bpf_map_lookup_elem(m->config, &zero, cfg))
		return runtime_err("cannot read the config map: %s", strerror(errno));
	return 0;
}

static void rule_from_table(struct rule *r, const struct sluice_policy *sp, __u32 idx)
{
	memset(r, 0, sizeof(*r));
	memcpy(&r->cidr.addr, sp->addr, sizeof(sp->addr));
	r->cidr.prefixlen = sp->prefixlen;
	r->match.flags = sp->match.flags;
	r->match.proto = sp->match.proto;
	r->match.dport_lo = sp->match.dport_lo;
	r->match.dport_hi = sp->match.dport_hi;
	r->action = sp->action;
	r->unit = sp->unit;
	r->rate = sp->rate;
	r->period = sp->period;
	r->burst = sp->burst;
	r->per = sp->per;
	r->per_len = sp->per_len;
	r->algo = sp->algo;
	if (sp->algo == SLUICE_ALGO_TOKEN_BUCKET) {
		r->ban_ns = gcra_units_to_ns(sp->ban);
	} else {
		r->ban_ns = sp->ban;
		r->window_ns = sp->interval;
	}
	r->ban_after = sp->ban_after;
	r->monitor = sp->flags & SLUICE_POLICY_MONITOR;
	r->cluster = sp->flags & SLUICE_POLICY_CLUSTER;
	r->index = idx;
}

/* The keys of policy slot `slot`, in index order. */
static void slot_keys(__u32 slot, __u32 *keys)
{
	for (__u32 idx = 0; idx < SLUICE_MAX_POLICIES; idx++)
		keys[idx] = slot * SLUICE_MAX_POLICIES + idx;
}

/* Policy slot `slot` whole into out[SLUICE_MAX_POLICIES]: one batched
 * lookup (the batch starts after the key it is given), or one lookup per
 * index where the kernel has no batches for arrays. */
static int read_slot(const struct sluice_maps *m, __u32 slot, struct sluice_policy *out)
{
	__u32 keys[SLUICE_MAX_POLICIES], before = slot * SLUICE_MAX_POLICIES - 1, last;
	__u32 count = SLUICE_MAX_POLICIES;

	if (!bpf_map_lookup_batch(m->policy_table, slot ? &before : NULL, &last, keys, out,
				  &count, NULL) &&
	    count == SLUICE_MAX_POLICIES && keys[0] == slot * SLUICE_MAX_POLICIES)
		return 0;
	slot_keys(slot, keys);
	for (__u32 idx = 0; idx < SLUICE_MAX_POLICIES; idx++)
		if (bpf_map_lookup_elem(m->policy_table, &keys[idx], &out[idx]))
			return runtime_err("cannot read policy %u: %s", idx, strerror(errno));
	return 0;
}

/* Write policy slot `slot` whole from table[SLUICE_MAX_POLICIES]. */
static int write_slot(const struct sluice_maps *m, __u32 slot, const struct sluice_policy *table)
{
	__u32 keys[SLUICE_MAX_POLICIES];

	slot_keys(slot, keys);
	if (map_update_batch(m->policy_table, keys, sizeof(keys[0]), table, sizeof(*table),
			     SLUICE_MAX_POLICIES))
		return runtime_err("cannot write the policy: %s", strerror(errno));
	return 0;
}

/* One read of the active slot; *gen_slot is the config it was read under. */
static int policy_read_once(const struct sluice_maps *m, struct policy *p, __u64 *gen_slot)
{
	struct sluice_config cfg;
	struct sluice_policy *slot;
	int err;

	if (read_config(m, &cfg))
		return EXIT_RUNTIME;
	*gen_slot = cfg.gen_slot;
	policy_init(p);
	slot = calloc(SLUICE_MAX_POLICIES, sizeof(*slot));
	if (!slot)
		return runtime_err("out of memory");
	err = read_slot(m, SLUICE_GEN_SLOT(cfg.gen_slot), slot);
	for (__u32 idx = 0; idx < SLUICE_MAX_POLICIES && !err; idx++) {
		const struct sluice_policy *sp = &slot[idx];

		if (!sp->in_use)
			continue;
		if (idx == SLUICE_POLICY_DEFAULT)
			rule_from_table(&p->def, sp, idx);
		else if (p->n < SLUICE_MAX_POLICIES - 1)
			rule_from_table(&p->rules[p->n++], sp, idx);
	}
	free(slot);
	if (err)
		return err;
	if (cfg.new_src[SLUICE_GEN_SLOT(cfg.gen_slot)].interval) {
		const struct sluice_budget *bg = &cfg.new_src[SLUICE_GEN_SLOT(cfg.gen_slot)];

		p->new_sources.action = SLUICE_ACT_LIMIT;
		p->new_sources.rate = bg->rate;
		p->new_sources.period = bg->period;
		p->new_sources.burst = bg->burst;
	}
	return 0;
}

/* Readers take no lock: a read that a commit overtook (the generation moved
 * meanwhile, so the slot read may have been rewritten) is done again. */
int policy_read(const struct sluice_maps *m, struct policy *p)
{
	struct sluice_config after;
	__u64 before;
	int err;

	for (int i = 0; i < POLICY_READ_TRIES; i++) {
		err = policy_read_once(m, p, &before);
		if (err)
			return err;
		if (read_config(m, &after))
			return EXIT_RUNTIME;
		if (after.gen_slot == before)
			return 0;
	}
	return runtime_err("the policy kept changing while being read: try again");
}

static const struct rule *find_identity(const struct policy *p, const struct rule *r)
{
	for (unsigned int i = 0; i < p->n; i++)
		if (rule_same_identity(&p->rules[i], r))
			return &p->rules[i];
	return NULL;
}

/* Lowest index >= 1 free in both sets, 0 if none. */
static __u32 free_index(const bool *a, const bool *b)
{
	for (__u32 idx = 1; idx < SLUICE_MAX_POLICIES; idx++)
		if (!a[idx] && !b[idx])
			return idx;
	return 0;
}

/* Give each rule a table index: its identity's current one if it has one,
 * else one unused by both the live and the new policy, so that a bucket
 * still holding an old index never counts against a different rule. */
static void assign_indices(struct policy *next, const struct policy *cur,
			   bool fresh[SLUICE_MAX_POLICIES])
{
	bool used_new[SLUICE_MAX_POLICIES] = { true };
	bool used_cur[SLUICE_MAX_POLICIES] = { true };

	memset(fresh, 0, SLUICE_MAX_POLICIES * sizeof(bool));
	for (unsigned int i = 0; i < cur->n; i++)
		used_cur[cur->rules[i].index] = true;
	for (unsigned int i = 0; i < next->n; i++) {
		const struct rule *old = find_identity(cur, &next->rules[i]);

		next->rules[i].index = old ? old->index : 0;
		if (old)
			used_new[old->index] = true;
	}
	for (unsigned int i = 0; i < next->n; i++) {
		struct rule *r = &next->rules[i];
		__u32 idx;

		if (r->index)	/* kept its index, and so its counters */
			continue;
		idx = free_index(used_new, used_cur);
		if (!idx)	/* table crowded: reuse one the live policy retires */
			idx = free_index(used_new, used_new);
		if (!idx)	/* cannot happen: next->n < SLUICE_MAX_POLICIES */
			continue;
		r->index = idx;
		used_new[idx] = true;
		fresh[idx] = true;
	}
	next->def.index = SLUICE_POLICY_DEFAULT;
}

/* The bucket key length of rule r: how much of a source's address (the
 * 128-bit form) its buckets keep. */
static __u8 rule_key_len(const struct rule *r, bool is_default)
{
	switch (r->per) {
	case SLUICE_PER_PREFIX:
		if (is_default)
			return SLUICE_KEY_LEN_SOURCE;	/* refused by the parser */
		return (__u8)(cidr_family(&r->cidr) == SLUICE_FAMILY_V4 ?
			      SLUICE_V4_MAPPED_PREFIX + r->per_len : r->per_len);
	case SLUICE_PER_RULE:
		return is_default ? 0 : (__u8)r->cidr.prefixlen;
	default:
		return SLUICE_KEY_LEN_SOURCE;
	}
}

/* The limit of rule r as the policy table holds it (this host's share of
 * a --cluster rule aside). */
void rule_limit(const struct rule *r, struct sluice_limit *l)
{
	__u32 period = r->period ? r->period : SLUICE_PERIOD_SEC;

	memset(l, 0, sizeof(*l));
	l->algo = (__u8)r->algo;
	if (r->algo == SLUICE_ALGO_TOKEN_BUCKET) {
		l->interval = gcra_interval_per(r->rate, period);
		l->tolerance = gcra_cost(l->interval, r->burst);
		l->ban = r->ban_ns ? gcra_now(r->ban_ns) : 0;
		return;
	}
	l->interval = r->window_ns;
	l->tolerance = r->burst;	/* the budget per window */
	l->ban = r->ban_ns;
	if (r->algo == SLUICE_ALGO_SLIDING_WINDOW) {
		l->bits = (__u8)window_count_bits(r->burst);
		l->ban_windows = (__u32)sw_ban_windows(r->ban_ns, r->window_ns);
	}
}

/* Whether limit l may be judged by the coarse clock (SLUICE_POLICY_COARSE_CLOCK):
 * a token bucket without a ban whose interval is at least the clock's tick. */
static bool coarse_clock_fits(const struct sluice_limit *l)
{
	__u64 tick = coarse_tick_ns();

	return l->algo == SLUICE_ALGO_TOKEN_BUCKET && !l->ban && tick &&
	       l->interval >= gcra_now(tick);
}

/* A --cluster rule's limit as this host's share: the interval times div,
 * the burst divided by it (at least 1). */
static void cluster_limit(const struct rule *r, const struct cluster_share *cs,
			  struct sluice_limit *l)
{
	__u64 burst = r->burst / cs->div;

	l->interval = gcra_cost(l->interval, cs->div);
	l->tolerance = gcra_cost(l->interval, burst ? burst : 1);
}

/* Whether two entries limit alike: a bucket's state means the same under
 * both (a change of --ban is a change: it must end or start bans). */
static bool same_limit(const struct sluice_policy *a, const struct sluice_policy *b)
{
	return a->action == b->action && a->unit == b->unit && a->algo == b->algo &&
	       a->bits == b->bits && a->ban_windows == b->ban_windows && a->ban == b->ban &&
	       a->interval == b->interval && a->tolerance == b->tolerance;
}

/*
 * The table entry of rule r in generation gen. `live` is the entry at the
 * same index in the active slot (generation gen - 1, active since
 * live_ns), NULL when the index held another rule or none. When it limits
 * alike, the entry keeps its `since` and history, so buckets bound to it
 * keep their TAT as it is; when not, the live limit becomes the previous
 * one, so a bucket judged by it and idle across this change and any number
 * of edits to other rules still carries its tokens over exactly.
 */
static void policy_to_table(const struct rule *r, bool is_default,
			    const struct sluice_policy *live, __u64 gen, __u64 live_ns,
			    const struct cluster_share *cs, struct sluice_policy *sp)
{
	struct sluice_limit l;

	memset(sp, 0, sizeof(*sp));
	sp->action = r->action;
	sp->in_use = 1;
	sp->prefixlen = r->cidr.prefixlen;
	memcpy(sp->addr, &r->cidr.addr, sizeof(sp->addr));
	sp->family = is_default ? 0 : cidr_family(&r->cidr);
	sp->match.flags = r->match.flags;
	sp->match.proto = r->match.proto;
	sp->match.dport_lo = r->match.dport_lo;
	sp->match.dport_hi = r->match.dport_hi;
	sp->key_len = SLUICE_KEY_LEN_SOURCE;
	if (r->action == SLUICE_ACT_LIMIT) {
		sp->unit = (__u8)r->unit;
		sp->period = r->period ? r->period : SLUICE_PERIOD_SEC;
		sp->rate = r->rate;
		sp->burst = r->burst;
		rule_limit(r, &l);
		if (r->cluster)
			cluster_limit(r, cs, &l);
		sp->algo = l.algo;
		sp->interval = l.interval;
		sp->tolerance = l.tolerance;
		sp->ban = l.ban;
		sp->bits = l.bits;
		sp->ban_windows = l.ban_windows;
		sp->ban_after = r->ban_after;
		sp->flags = r->monitor ? SLUICE_POLICY_MONITOR : 0;
		if (r->cluster)
			sp->flags |= SLUICE_POLICY_CLUSTER |
				     (cs->leased ? SLUICE_POLICY_LEASED : 0);
		if (coarse_clock_fits(&l))
			sp->flags |= SLUICE_POLICY_COARSE_CLOCK;
		sp->per = (__u8)r->per;
		sp->per_len = (__u8)r->per_len;
		sp->key_len = rule_key_len(r, is_default);
	}
	sp->since = gen;
	sp->prev_since = gen;	/* no previous limit */
	if (!live || !live->in_use)
		return;
	if (same_limit(live, sp)) {
		sp->since = live->since;
		sp->since_ns = live->since + 1 == gen ? live_ns : live->since_ns;
		sp->prev_since = live->prev_since;
		sp->prev_action = live->prev_action;
		sp->prev_algo = live->prev_algo;
		sp->prev_bits = live->prev_bits;
		sp->prev_ban_windows = live->prev_ban_windows;
		sp->prev_interval = live->prev_interval;
		sp->prev_tolerance = live->prev_tolerance;
		sp->prev_ban = live->prev_ban;
		return;
	}
	sp->prev_since = live->since;
	sp->prev_action = (__u8)live->action;
	sp->prev_algo = live->algo;
	sp->prev_bits = live->bits;
	sp->prev_ban_windows = live->ban_windows;
	sp->prev_interval = live->interval;
	sp->prev_tolerance = live->tolerance;
	sp->prev_ban = live->ban;
}

/* Store the config through a shared mapping of the map, so that each word
 * changes in one 8-byte store (a map update is a memcpy that the datapath
 * could see half done), the slots' start times before the generation. */
static int write_config(const struct sluice_maps *m, const struct sluice_config *cfg)
{
	size_t len = (size_t)sysconf(_SC_PAGESIZE);
	struct sluice_config *live;

	live = map_mmap(m->config, len);
	if (live == MAP_FAILED)
		return -1;
	for (int i = 0; i < (int)SLUICE_POLICY_SLOTS; i++)
		__atomic_store_n(&live->active_since_ns[i], cfg->active_since_ns[i],
				 __ATOMIC_RELEASE);
	if (cfg->leasing)	/* before the flip that makes a leased rule live */
		__atomic_store_n(&live->leasing, cfg->leasing, __ATOMIC_RELEASE);
	__atomic_store_n(&live->gen_slot, cfg->gen_slot, __ATOMIC_RELEASE);
	if (!cfg->leasing)	/* after the flip that retired the last one */
		__atomic_store_n(&live->leasing, cfg->leasing, __ATOMIC_RELEASE);
	munmap(live, len);
	return 0;
}

static int zero_policy_counter(const struct sluice_maps *m, __u32 idx)
{
	struct sluice_policy_counter *zero = calloc(m->ncpus, sizeof(*zero));
	int err;

	if (!zero)
		return -ENOMEM;
	err = map_update(m->policy_counters, &idx, zero, BPF_ANY);
	free(zero);
	return err;
}

/* Remove every trie entry of one slot. */
static int clear_lpm_slot(const struct sluice_maps *m, __u8 slot)
{
	struct sluice_lpm_key *keys, k, *prev = NULL;
	unsigned int n = 0, cap = SLUICE_POLICY_SLOTS * SLUICE_MAX_POLICIES;
	int err = 0;

	keys = calloc(cap, sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	while (n < cap && !bpf_map_get_next_key(m->policy_lpm, prev, &k)) {
		keys[n] = k;
		prev = &keys[n];
		n++;
	}
	for (unsigned int i = 0; i < n && !err; i++)
		if (keys[i].slot == slot && map_delete(m->policy_lpm, &keys[i]))
			err = -errno;
	free(keys);
	return err;
}

/* Whether CIDR a covers CIDR b (same family, shorter or equal prefix). */
static bool cidr_covers(const struct cidr *a, const struct cidr *b)
{
	__u32 full = a->prefixlen / 8, rest = a->prefixlen % 8;

	if (cidr_family(a) != cidr_family(b) || a->prefixlen > b->prefixlen)
		return false;
	if (memcmp(a->addr.a, b->addr.a, full) != 0)
		return false;
	return !rest || !((a->addr.a[full] ^ b->addr.a[full]) & (0xff << (8 - rest)));
}

/* How specific a match is: a port beats a protocol alone, which beats no
 * match; at the same level a SYN match beats none, then the narrower port
 * range wins, then the lower port, then the lower protocol number. */
static int match_cmp(const struct rule_match *a, const struct rule_match *b)
{
	int la = (a->flags & SLUICE_MATCH_PORT) ? 2 : (a->flags & SLUICE_MATCH_PROTO) ? 1 : 0;
	int lb = (b->flags & SLUICE_MATCH_PORT) ? 2 : (b->flags & SLUICE_MATCH_PROTO) ? 1 : 0;

	if (la != lb)
		return lb - la;
	if ((a->flags ^ b->flags) & SLUICE_MATCH_SYN)
		return (a->flags & SLUICE_MATCH_SYN) ? -1 : 1;
	if (a->dport_hi - a->dport_lo != b->dport_hi - b->dport_lo)
		return (a->dport_hi - a->dport_lo) - (b->dport_hi - b->dport_lo);
	if (a->dport_lo != b->dport_lo)
		return a->dport_lo - b->dport_lo;
	return a->proto - b->proto;
}

/* A rule that covers a trie entry's CIDR. */
struct candidate {
	const struct rule *r;
};

/* Candidate order: the longer prefix first, then the more specific match. */
static int candidate_cmp(const void *x, const void *y)
{
	const struct rule *a = ((const struct candidate *)x)->r;
	const struct rule *b = ((const struct candidate *)y)->r;

	if (a->cidr.prefixlen != b->cidr.prefixlen)
		return a->cidr.prefixlen > b->cidr.prefixlen ? -1 : 1;
	return match_cmp(&a->match, &b->match);
}

/*
 * The trie entry of CIDR at: the rules that may decide a source it covers
 * (its own and those of every covering CIDR), most specific first, up to
 * and including the first without a match, since no rule after it can
 * decide. Returns 0, or EXIT_USAGE with a message when more than
 * SLUICE_MATCH_MAX would be needed.
 */
int policy_candidates(const struct policy *p, const struct cidr *at, struct sluice_lpm_val *v)
{
	struct candidate c[SLUICE_MAX_POLICIES] = { { NULL } };
	unsigned int n = 0, i;
	char buf[SLUICE_CIDR_STR_MAX];

	for (i = 0; i < p->n; i++)
		if (!rule_is_request(&p->rules[i]) && cidr_covers(&p->rules[i].cidr, at))
			c[n++].r = &p->rules[i];
	qsort(c, n, sizeof(c[0]), candidate_cmp);
	memset(v, 0, sizeof(*v));
	for (i = 0; i < n; i++) {
		const struct rule *r = c[i].r;

		if (v->n == SLUICE_MATCH_MAX) {
			format_cidr(at, buf, sizeof(buf));
			return usage_err("too many rules with a match apply to %s: at most %u may, "
					 "counting those of the prefixes covering it up to the first "
					 "rule without a match", buf, SLUICE_MATCH_MAX);
		}
		v->m[v->n].policy = (__u16)r->index;
		v->m[v->n].flags = r->match.flags;
		v->m[v->n].proto = r->match.proto;
		v->m[v->n].dport_lo = r->match.dport_lo;
		v->m[v->n].dport_hi = r->match.dport_hi;
		v->n++;
		if (!r->match.flags)
			break;
	}
	return 0;
}

/* Write the trie entries of next into slot: one per distinct CIDR. */
static int write_lpm_slot(const struct sluice_maps *m, const struct policy *next, __u8 slot)
{
	struct sluice_lpm_val v;
	int err;

	for (unsigned int i = 0; i < next->n; i++) {
		const struct rule *r = &next->rules[i];
		struct sluice_lpm_key k = {
			.prefixlen = SLUICE_LPM_HDR_BITS + r->cidr.prefixlen,
			.slot = slot,
			.family = cidr_family(&r->cidr),
		};
		bool seen = rule_is_request(r);	/* never judges packets */

		for (unsigned int j = 0; j < i && !seen; j++)
			seen = !rule_is_request(&next->rules[j]) &&
			       next->rules[j].cidr.prefixlen == r->cidr.prefixlen &&
			       !memcmp(&next->rules[j].cidr.addr, &r->cidr.addr,
				       sizeof(r->cidr.addr));
		if (seen)
			continue;
		err = policy_candidates(next, &r->cidr, &v);
		if (err)
			return err;
		memcpy(k.addr, &r->cidr.addr, sizeof(k.addr));
		if (map_update(m->policy_lpm, &k, &v, BPF_ANY))
			return runtime_err("cannot write the policy trie: %s", strerror(errno));
	}
	return 0;
}

/* Every trie entry next needs can be built (checked before anything is
 * written, so a refused policy changes nothing). */
static int check_candidates(const struct policy *next)
{
	struct sluice_lpm_val v;
	int err;

	for (unsigned int i = 0; i < next->n; i++) {
		if (rule_is_request(&next->rules[i]))
			continue;
		err = policy_candidates(next, &next->rules[i].cidr, &v);
		if (err)
			return err;
	}
	return 0;
}

static int commit_with(struct sluice_maps *m, struct policy *next,
		       struct sluice_policy *table, struct sluice_policy *live);
static int budget_write(const struct sluice_maps *m, __u32 slot, __u64 rate, __u32 period,
			__u64 burst);

int policy_commit(struct sluice_maps *m, struct policy *next)
{
	struct sluice_policy *table, *live;
	int err;

	err = check_candidates(next);
	if (err)
		return err;
	table = calloc(2 * SLUICE_MAX_POLICIES, sizeof(*table));
	if (!table)
		return runtime_err("out of memory");
	live = table + SLUICE_MAX_POLICIES;
	err = commit_with(m, next, table, live);
	free(table);
	return err;
}

/* Gives next's rules their indices: those of the live policy's rules of
 * the same identity, free ones for the rest (fresh). */
static int assign_from_live(const struct sluice_maps *m, struct policy *next, bool *fresh)
{
	struct policy *cur;
	int err;

	cur = malloc(sizeof(*cur));
	if (!cur)
		return runtime_err("out of memory");
	err = policy_read(m, cur);
	if (err) {
		free(cur);
		return err;
	}
	assign_indices(next, cur, fresh);
	free(cur);
	return 0;
}

/* The table of generation gen for next, each rule's entry carrying over
 * what its live one had unless fresh; returns whether any entry leases. */
static __u64 fill_table(const struct policy *next, const bool *fresh,
			const struct sluice_policy *live, __u64 gen, __u64 live_ns,
			const struct cluster_share *cs, struct sluice_policy *table)
{
	__u64 leasing = 0;

	/* A free index changes at every commit: its entry is never "unchanged
	 * since" the generation of a bucket bound to the rule it once held
	 * (which the datapath would otherwise read as an allow, and hand the
	 * bucket a fresh budget). */
	for (__u32 idx = 0; idx < SLUICE_MAX_POLICIES; idx++) {
		table[idx].since = gen;
		table[idx].prev_since = gen;
	}
	policy_to_table(&next->def, true, &live[SLUICE_POLICY_DEFAULT], gen, live_ns, cs,
			&table[SLUICE_POLICY_DEFAULT]);
	for (unsigned int i = 0; i < next->n; i++) {
		__u32 idx = next->rules[i].index;

		policy_to_table(&next->rules[i], false, fresh[idx] ? NULL : &live[idx], gen,
				live_ns, cs, &table[idx]);
	}
	for (__u32 idx = 0; idx < SLUICE_MAX_POLICIES; idx++)
		if (table[idx].in_use && (table[idx].flags & SLUICE_POLICY_LEASED))
			leasing = 1;
	return leasing;
}

/* The policy as a file, kept beside the tables: an attach of another
 * version whose tables differ re-reads the rules from it. Written before
 * the flip, so it is never older than the live policy. */
static int write_policy_text(const struct sluice_maps *m, const struct policy *p)
{
	struct sluice_policy_text *t;
	__u32 zero = 0;
	size_t len, by;
	int err = 0;

	t = calloc(1, sizeof(*t));
	if (!t)
		return runtime_err("out of memory");
	by = (size_t)snprintf(t->text, sizeof(t->text), "%s%s\n", SLUICE_POLICY_TEXT_BY,
			      SLUICE_VERSION);
	len = policy_format(p, m->iface, t->text + by, sizeof(t->text) - by);
	if (len != SIZE_MAX)
		len += by;
	t->len = (__u32)len;
	if (len == SIZE_MAX)
		err = runtime_err("out of memory");
	else if (len >= sizeof(t->text))
		err = runtime_err("the policy of %s is too long to keep as text (%u bytes)",
				  m->iface, t->len);
	else if (bpf_map_update_elem(m->policy_text, &zero, t, BPF_ANY))
		err = runtime_err("cannot write the policy text of %s: %s", m->iface,
				  strerror(errno));
	free(t);
	return err;
}

int policy_text_refresh(const struct sluice_maps *m)
{
	struct policy *p = malloc(sizeof(*p));
	int err;

	if (!p)
		return runtime_err("out of memory");
	err = policy_read(m, p);
	if (!err)
		err = write_policy_text(m, p);
	free(p);
	return err;
}

/* policy_commit with scratch space for the new and the live table. */
static int commit_with(struct sluice_maps *m, struct policy *next,
		       struct sluice_policy *table, struct sluice_policy *live)
{
	bool fresh[SLUICE_MAX_POLICIES] = { false };
	struct cluster_share cs;
	struct sluice_config cfg;
	__u64 leasing, live_ns;
	__u64 gen;
	__u8 slot;
	int err;

	err = assign_from_live(m, next, fresh);
	if (err)
		return err;
	if (read_config(m, &cfg))
		return EXIT_RUNTIME;
	slot = !SLUICE_GEN_SLOT(cfg.gen_slot);
	gen = SLUICE_GEN(cfg.gen_slot) + 1;
	if (read_slot(m, SLUICE_GEN_SLOT(cfg.gen_slot), live))
		return EXIT_RUNTIME;

	if (cluster_share_of(m, &cs))
		return EXIT_RUNTIME;
	live_ns = cfg.active_since_ns[SLUICE_GEN_SLOT(cfg.gen_slot)];
	leasing = fill_table(next, fresh, live, gen, live_ns, &cs, table);

	/* Readers of the inactive slot (buckets carrying tokens over from the
	 * previous generation) see this bit and know it is being rewritten. */
	cfg.gen_slot |= SLUICE_GEN_WRITING;
	cfg.leasing |= leasing;
	if (write_config(m, &cfg))
		return runtime_err("cannot mark the policy as being written: %s", strerror(errno));
	if (write_slot(m, slot, table))
		return EXIT_RUNTIME;
	for (__u32 idx = 0; idx < SLUICE_MAX_POLICIES; idx++) {
		if (fresh[idx] && zero_policy_counter(m, idx))
			return runtime_err("cannot reset counters of policy %u: %s",
					   idx, strerror(errno));
	}

	err = clear_lpm_slot(m, slot);
	if (err)
		return runtime_err("cannot clear the inactive policy trie: %s", strerror(-err));
	err = write_lpm_slot(m, next, slot);
	if (err)
		return err;
	err = budget_write(m, slot, next->new_sources.rate, next->new_sources.period,
			   next->new_sources.burst);
	if (!err)
		err = write_policy_text(m, next);
	if (err)
		return err;

	/* The flip: one 8-byte store of the new generation and slot, the
	 * writing bit clear, after the slot's start time (write_config's
	 * order). Every bucket re-binds on its next packet, as of now. A
	 * commit that failed before this point leaves the writing bit set, so
	 * no bucket trusts the half-written slot; the next commit clears it. */
	cfg.active_since_ns[slot] = mono_now_ns();
	cfg.gen_slot = SLUICE_GEN_MAKE(gen, slot);
	cfg.leasing = leasing;
	if (write_config(m, &cfg))
		return runtime_err("cannot switch to the new policy: %s", strerror(errno));
	/* Generation 1 is attach's first policy, on fresh maps: its line says so. */
	if (gen > 1)
		log_event(LOG_NOTICE, "%s: policy committed: %u rule%s besides the default "
			  "(generation %llu)", m->iface, next->n, next->n == 1 ? "" : "s",
			  (unsigned long long)gen);
	return 0;
}

/*
 * The new-source budget of one slot, stored word by word through the config
 * map's shared mapping like the generation. A commit writes the inactive
 * slot's, which the flip then makes live with the rules; for the active
 * slot (new_sources_write) turning it on writes the interval last, turning
 * it off writes it (0) first, so the datapath never sees an interval
 * without its tolerance. rate 0 turns it off. Its TAT is left as it is: a
 * changed budget keeps what was spent.
 */
static int budget_write(const struct sluice_maps *m, __u32 slot, __u64 rate, __u32 period,
			__u64 burst)
{
	size_t len = (size_t)sysconf(_SC_PAGESIZE);
	struct sluice_config *live;
	struct sluice_budget *bg;
	__u64 interval = rate ? gcra_interval_per(rate, period) : 0;

	live = map_mmap(m->config, len);
	if (live == MAP_FAILED)
		return runtime_err("cannot map the config map: %s", strerror(errno));
	bg = &live->new_src[slot & 1];
	if (!rate)
		__atomic_store_n(&bg->interval, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&bg->rate, rate, __ATOMIC_RELEASE);
	__atomic_store_n(&bg->burst, rate ? burst : 0, __ATOMIC_RELEASE);
	__atomic_store_n(&bg->period, rate ? period : 0, __ATOMIC_RELEASE);
	__atomic_store_n(&bg->tolerance, gcra_cost(interval, burst), __ATOMIC_RELEASE);
	if (rate)
		__atomic_store_n(&bg->interval, interval, __ATOMIC_RELEASE);
	munmap(live, len);
	return 0;
}

/* The budget of the live policy changed in place, outside a commit (tests
 * and benchmarks set it on a loaded program). */
int new_sources_write(const struct sluice_maps *m, __u64 rate, __u32 period, __u64 burst)
{
	struct sluice_config cfg;

	if (read_config(m, &cfg))
		return EXIT_RUNTIME;
	return budget_write(m, SLUICE_GEN_SLOT(cfg.gen_slot), rate, period, burst);
}

int budget_state(const struct sluice_maps *m, bool *spent)
{
	const struct sluice_budget *bg;
	struct sluice_config cfg;

	if (read_config(m, &cfg))
		return EXIT_RUNTIME;
	bg = &cfg.new_src[SLUICE_GEN_SLOT(cfg.gen_slot)];
	*spent = bg->interval &&
		 gcra_wait(cfg.new_tat, gcra_now(mono_now_ns()), bg->interval, bg->tolerance) > 0;
	return 0;
}

int new_sources_read(const struct sluice_maps *m, __u64 *rate, __u32 *period, __u64 *burst)
{
	const struct sluice_budget *bg;
	struct sluice_config cfg;

	if (read_config(m, &cfg))
		return EXIT_RUNTIME;
	bg = &cfg.new_src[SLUICE_GEN_SLOT(cfg.gen_slot)];
	*rate = bg->interval ? bg->rate : 0;
	*period = bg->period;
	*burst = bg->burst;
	return 0;
}

int open_policy(struct sluice_maps *m, struct policy **p, bool edit)
{
	int err;

	*p = NULL;
	err = maps_open_picked(m, edit);
	if (err)
		return err;
	*p = malloc(sizeof(**p));
	if (!*p) {
		maps_close(m);
		return runtime_err("out of memory");
	}
	err = policy_read(m, *p);
	if (err) {
		free(*p);
		*p = NULL;
		maps_close(m);
	}
	return err;
}

int cluster_recommit(struct sluice_maps *m, const struct sluice_cluster_state *s)
{
	struct policy *p;
	bool locked = m->lock >= 0;
	int err;

	p = malloc(sizeof(*p));
	if (!p)
		return runtime_err("out of memory");
	err = locked ? 0 : maps_lock(m);
	if (!err)
		err = cluster_state_write(m, s);
	if (!err)
		err = policy_read(m, p);
	if (!err)
		err = policy_commit(m, p);
	if (!locked && m->lock >= 0) {
		close(m->lock);	/* and with it the lock */
		m->lock = -1;
	}
	free(p);
	return err;
}
