// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sluice's XDP program: per-source GCRA buckets, resolved once per policy
 * generation from an LPM trie, admitted with a compare-and-swap. */
#include "parse.h"
#include "sluice/algo.h"

#define READ_ONCE(x) (*(volatile typeof(x) *)&(x))
#define WRITE_ONCE(x, v) (*(volatile typeof(x) *)&(x) = (v))

#define barrier() asm volatile("" ::: "memory")

#include "seams.h"

#include "maps.h"
#include "counters.h"
#include "resolve.h"
#include "bans.h"
#include "frag.h"
#include "rebind.h"
#include "srctab.h"
#include "bucket.h"
#include "lease.h"
#include "judge.h"

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
 * Parse the frame: its source and L4 facts into src and l4 (a later
 * fragment's from its first, bpf/frag.h), and a PARSE_* result (PARSE_MALFORMED when even the Ethernet header or its
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
	__u32 l3;
	int r;

	r = parse_eth(&c, &proto);
	if (r)
		return r < 0 ? PARSE_MALFORMED : r;
	l3 = (__u32)(c.pos - (void *)(long)ctx->data);
	l4->l3 = (__u16)l3;
	if (proto == bpf_htons(ETH_P_IP))
		r = parse_ipv4(&c, src, l4);
	else if (proto == bpf_htons(ETH_P_IPV6))
		r = parse_ipv6_at(ctx, l3, src, l4);
	else
		return PARSE_NON_IP;
	/* A fragment: its datagram's L4 facts, kept from its first. */
	if (r == PARSE_OK && (l4->flags & (L4_FIRST_FRAG | L4_LATER_FRAG)))
		frag_facts(ctx, src, l4);
	return r;
}

/* The bucket a packet is judged in: a slot of the source table, home or
 * keyed, at index at (< 0: none), whose slot bits were id. */
struct bref {
	struct sluice_bucket *b;
	__u64 id;
	int at;
};

/*
 * The bucket packet p is judged in when its home bucket (home->b, or NULL)
 * does not serve it in this generation: its rule resolved, then the home
 * bucket, or a new home slot, or a keyed bucket of the rule, taken if need
 * be. 0 with *out set; -1 when
 * the packet is decided without one, with *idx and *reason set; r is the
 * parser's result.
 */
static __always_inline int rule_bucket(struct sluice_config *cfg, struct pkt *p,
				       const struct bref *home, int r, __u32 *idx, __u32 *reason,
				       struct bref *out)
{
	__u32 lead = SLUICE_POLICY_DEFAULT;
	struct sluice_src_key key;
	struct verdict v;
	__u64 gen_slot, bound;
	int direct, tries;

	/* Resolve the packet's rule; a commit meanwhile means once more. Allow
	 * and deny need no bucket. */
	for (tries = 0; tries < SLUICE_RESOLVE_TRIES; tries++) {
		gen_slot = READ_ONCE(cfg->gen_slot);
		*idx = resolve(p, SLUICE_GEN_SLOT(gen_slot), &direct, &lead);
		if (!read_policy(cfg, gen_slot, SLUICE_GEN_SLOT(gen_slot), *idx, &v, 0))
			break;
	}
	if (tries == SLUICE_RESOLVE_TRIES) {
		/* Commits in quick succession, each within one packet. */
		*idx = SLUICE_POLICY_DEFAULT;
		*reason = SLUICE_R_NO_BUCKET;
		return -1;
	}
	/* Malformed where a rule covering its source matches on L4: the
	 * protocol, port or SYN it was judged by may not be what the stack
	 * sees (a SYN behind too many extension headers, a first fragment too
	 * short for its port), so no such rule can be matched safely. */
	if (r == PARSE_MALFORMED_SRC && !direct) {
		*idx = lead;
		*reason = SLUICE_R_L4_UNREADABLE;
		return -1;
	}
	/* A later fragment whose first was not seen (or is forgotten), where
	 * a rule that matches on what it lacks (a port, SYN, an IPv6
	 * protocol) might decide it: which rule its datagram belongs to
	 * cannot be told. Counted on that rule. */
	if ((p->l4.flags & L4_LATER_FRAG) && !direct) {
		lead = orphan_rule(p, SLUICE_GEN_SLOT(gen_slot));
		if (lead & ORPHAN_UNSURE) {
			*idx = lead & ~ORPHAN_UNSURE;
			*reason = SLUICE_R_FRAG_ORPHAN;
			return -1;
		}
	}
	if (v.action == SLUICE_ACT_ALLOW) {
		*reason = SLUICE_R_ALLOWED;
		return -1;
	}
	if (v.action != SLUICE_ACT_LIMIT) {
		*reason = SLUICE_R_DENIED;
		return -1;
	}
	*reason = SLUICE_R_NO_BUCKET;
	key = p->src;
	bound = SLUICE_BOUND(SLUICE_GEN(gen_slot), *idx);
	if (served_at_home(direct, &v)) {
		/* A stale home bucket is rebound by judge_step. */
		if (home->b) {
			*out = *home;
			return 0;
		}
		bound |= SLUICE_BOUND_DIRECT;
	} else {
		key.key_len = v.key_len;
		key.policy = (__u16)*idx;
		mask_addr(key.a, v.key_len);
		p->kidx = *idx;
	}
	out->id = 0;
	out->at = take_bucket(cfg, &key, bound, home->b, &out->id, reason);
	out->b = out->at < 0 ? NULL : (struct sluice_bucket *)src_slot((__u32)out->at);
	if (out->b)
		return 0;
	/* Over the new-source budget, or no entry to be had: fail closed, and
	 * visibly; a --monitor rule passes it. */
	if (v.flags & SLUICE_POLICY_MONITOR)
		*reason = SLUICE_R_MONITORED;
	return -1;
}

/* xdp.frags: multi-buffer aware, so it attaches natively to interfaces
 * with jumbo MTUs; headers are read from the first buffer only, and bytes
 * count the whole frame. */
SEC("xdp.frags")
int sluice_xdp(struct xdp_md *ctx)
{
	struct pkt p = { .bytes = bpf_xdp_get_buff_len(ctx) };
	__u32 zero = 0, reason, idx = SLUICE_POLICY_DEFAULT;
	struct bref home, br;
	struct sluice_slot_count *n;
	struct sluice_config *cfg;
	struct sluice_slot *s;
	__u64 bound;
	int r, r2, pass;

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

	/* Banned prefixes, then sources the check server banned: first. */
	if (prefix_banned(&p))
		return count(SLUICE_R_BANNED, p.bytes);
	if (source_banned(&p, &idx)) {
		reason = SLUICE_R_BANNED;
		goto counted;
	}

	/* The common case: the source's home bucket, a slot of the source
	 * table, serves it in this generation, and knows its rule. */
	p.kidx = SLUICE_KEY_HOME;
	/* Field by field: an initializer would be a constant in .rodata, a
	 * map the pins would have to keep. */
	home.b = NULL;
	home.id = 0;
	home.at = -1;
	r2 = src_lookup(cfg, &p.src, &home.id);
	if (r2 >= 0) {
		s = src_slot((__u32)r2);
		if (s) {
			home.b = (struct sluice_bucket *)s;
			home.at = r2;
			bound = READ_ONCE(s->ctl);
			if ((bound & SLUICE_BOUND_DIRECT) && !(bound & SLUICE_BOUND_PENDING) &&
			    SLUICE_BOUND_GEN_IS(bound, SLUICE_GEN(READ_ONCE(cfg->gen_slot)))) {
				br = home;
				goto judge;
			}
		}
	}
	if (rule_bucket(cfg, &p, &home, r, &idx, &reason, &br))
		goto counted;
judge:
	n = src_count((__u32)br.at);
	p.id = br.id;
	reason = judge_bucket(cfg, br.b, n, &p, &idx);
	if (reason == JUDGE_REBIND) {
		/* Bound to an older generation: re-bound to this one (by this
		 * CPU or another), then judged again. A slot given to another
		 * source meanwhile is not re-bound: its ctl no longer matches. */
		bound = READ_ONCE(br.b->bound);
		r2 = (bound & SLUICE_SLOT_ID_MASK) == br.id ?
		     rebind(cfg, br.b, &p, READ_ONCE(cfg->gen_slot), bound) : 1;
		reason = r2 > 0 ? JUDGE_REBIND : judge_bucket(cfg, br.b, n, &p, &idx);
		if (reason == JUDGE_REBIND)	/* rerouted, or another commit */
			reason = SLUICE_R_NO_BUCKET;
	}

counted:
	SLUICE_VERDICT_HOOK(&p.src, reason);
	pass = !sluice_reason_is_drop(reason);
	/* Passed but malformed: the stack decides; the source paid for it. */
	if (pass && r == PARSE_MALFORMED_SRC)
		reason = SLUICE_R_MALFORMED;
	count_policy(idx, reason, p.bytes);
	return count(reason, p.bytes);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
