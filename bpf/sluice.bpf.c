// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sluice's XDP program: per-source GCRA buckets, resolved once per policy
 * generation from an LPM trie, admitted with a compare-and-swap. */
#include "parse.h"
#include "sluice/gcra.h"

#define READ_ONCE(x) (*(volatile typeof(x) *)&(x))

/* The atomic step of admission; tests/bpf swaps in a racy one to prove the
 * race test catches lost updates. */
#ifndef SLUICE_CAS
#define SLUICE_CAS(ptr, old, new) __sync_val_compare_and_swap(ptr, old, new)
#endif

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SLUICE_MAX_SOURCES_DEFAULT);	/* set by attach */
	__type(key, struct sluice_addr);
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

static __always_inline int count(__u32 reason, __u64 bytes)
{
	struct sluice_counter *c = bpf_map_lookup_elem(&counters, &reason);

	if (c) {
		c->packets++;
		c->bytes += bytes;
	}
	return sluice_reason_is_drop(reason) ? XDP_DROP : XDP_PASS;
}

static __always_inline void count_policy(__u32 policy, int drop, __u64 bytes)
{
	struct sluice_policy_counter *pc;

	pc = bpf_map_lookup_elem(&policy_counters, &policy);
	if (!pc)
		return;
	if (drop) {
		pc->drop_packets++;
		pc->drop_bytes += bytes;
	} else {
		pc->pass_packets++;
		pc->pass_bytes += bytes;
	}
}

/* Resolve the policy for src in the active slot and cache it in b. */
static __always_inline int resolve(struct sluice_bucket *b, const struct sluice_addr *src,
				   __u8 family, __u64 gen_slot)
{
	struct sluice_lpm_key key = {
		.prefixlen = SLUICE_LPM_FULL_PREFIX,
		.slot = SLUICE_GEN_SLOT(gen_slot),
		.family = family,
	};
	struct sluice_lpm_val *hit;
	struct sluice_policy *p;
	__u32 idx = SLUICE_POLICY_DEFAULT;

	__builtin_memcpy(key.addr, src->a, sizeof(key.addr));
	hit = bpf_map_lookup_elem(&policy_lpm, &key);
	if (hit && hit->policy < SLUICE_MAX_POLICIES)
		idx = hit->policy;

	idx += SLUICE_GEN_SLOT(gen_slot) * SLUICE_MAX_POLICIES;
	p = bpf_map_lookup_elem(&policy_table, &idx);
	if (!p)
		return -1;
	b->interval_ns = p->interval_ns;
	b->tolerance_ns = p->tolerance_ns;
	b->action = p->action;
	b->policy = idx - SLUICE_GEN_SLOT(gen_slot) * SLUICE_MAX_POLICIES;
	b->gen = SLUICE_GEN(gen_slot);
	return 0;
}

/* One GCRA step with CAS; a lost race re-reads TAT and decides again. A
 * bucket contended past SLUICE_CAS_TRIES rejects, so it never over-admits. */
static __always_inline int admit(struct sluice_bucket *b, __u64 now)
{
	__u64 tat = b->tat, seen, next;
	int i;

	for (i = 0; i < SLUICE_CAS_TRIES; i++) {
		if (!gcra_admit(tat, now, b->interval_ns, b->tolerance_ns, &next))
			return 0;
		seen = SLUICE_CAS(&b->tat, tat, next);
		if (seen == tat)
			return 1;
		tat = seen;
	}
	return 0;
}

static __always_inline struct sluice_bucket *
find_bucket(const struct sluice_addr *src)
{
	struct sluice_bucket *b, fresh = {};

	b = bpf_map_lookup_elem(&src_buckets, src);
	if (b)
		return b;
	/* gen 0 precedes every committed policy, so the first packet resolves. */
	bpf_map_update_elem(&src_buckets, src, &fresh, BPF_NOEXIST);
	return bpf_map_lookup_elem(&src_buckets, src);
}

/* xdp.frags: multi-buffer aware, so it attaches natively to interfaces
 * with jumbo MTUs; headers are read from the first buffer only, and bytes
 * count the whole frame. */
SEC("xdp.frags")
int sluice_xdp(struct xdp_md *ctx)
{
	struct cursor c = {
		.pos = (void *)(long)ctx->data,
		.end = (void *)(long)ctx->data_end,
	};
	__u64 bytes = bpf_xdp_get_buff_len(ctx);
	struct sluice_addr src;
	struct sluice_config *cfg;
	struct sluice_bucket *b;
	__u32 zero = 0, reason;
	__u64 gen_slot;
	__u8 family = 0;
	__be16 proto;
	int r, pass;

	if (parse_eth(&c, &proto) < 0)
		return count(SLUICE_R_MALFORMED, bytes);
	if (proto == bpf_htons(ETH_P_IP)) {
		r = parse_ipv4(&c, &src);
		family = SLUICE_FAMILY_V4;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		family = SLUICE_FAMILY_V6;
		r = parse_ipv6(&c, &src, &family);
	} else {
		r = PARSE_NON_IP;
	}
	if (r == PARSE_NON_IP)
		return count(SLUICE_R_NON_IP, bytes);
	if (r == PARSE_MALFORMED)
		return count(SLUICE_R_MALFORMED, bytes);

	cfg = bpf_map_lookup_elem(&config, &zero);
	b = find_bucket(&src);
	/* Only when the source table cannot hold an entry at all. */
	if (!cfg || !b)
		return count(SLUICE_R_WITHIN_LIMIT, bytes);

	gen_slot = READ_ONCE(cfg->gen_slot);
	if (b->gen != SLUICE_GEN(gen_slot) && resolve(b, &src, family, gen_slot) < 0)
		return count(SLUICE_R_WITHIN_LIMIT, bytes);

	if (b->action == SLUICE_ACT_ALLOW) {
		reason = SLUICE_R_ALLOWED;
		pass = 1;
	} else if (b->action == SLUICE_ACT_DENY) {
		reason = SLUICE_R_DENIED;
		pass = 0;
	} else {
		pass = admit(b, bpf_ktime_get_ns());
		reason = pass ? SLUICE_R_WITHIN_LIMIT : SLUICE_R_RATE_LIMITED;
	}
	/* Passed but malformed: the stack decides; the source paid for it. */
	if (pass && r == PARSE_MALFORMED_SRC)
		reason = SLUICE_R_MALFORMED;

	if (pass)
		__sync_fetch_and_add(&b->passed, 1);
	else
		__sync_fetch_and_add(&b->dropped, 1);
	count_policy(b->policy, !pass, bytes);
	return count(reason, bytes);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
