// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The floor sluice is measured against: a minimal XDP token
 * bucket. One LRU hash keyed by the source address holds one 8-byte TAT
 * (GCRA); a packet is one lookup and, when it is admitted, one CAS. No
 * counters, no policy: the benchmark counts packets outside the program. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

/* Set by the loader (tools/bench_min.c), in ns: the emission interval
 * T = 1e9 / rate, and the tolerance burst x T. */
const volatile __u64 interval_ns = 1000000000;
const volatile __u64 tolerance_ns = 1000000000;

/* A CAS lost to another CPU means that CPU moved the TAT: read it and
 * decide again, a bounded number of times (then drop: never over-admit). */
#define CAS_TRIES	8

/* tests/bpf/bench_min_random.bpf.c replaces marker IPv4 sources (network
 * order, in place) for BPF_PROG_TEST_RUN, as sluice's benchmark variant
 * does; nothing here. */
#ifndef BENCH_MIN_SOURCE_HOOK
#define BENCH_MIN_SOURCE_HOOK(src) do { } while (0)
#endif

struct src6 {
	__u8 a[16];
};

/* max_entries: the loader sets both to sluice's --max-sources. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u64);
} min_tat4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct src6);
	__type(value, __u64);
} min_tat6 SEC(".maps");

/* GCRA: admit when max(TAT, now) + T - now <= tolerance, and then store
 * max(TAT, now) + T. A new source is admitted and starts at now + T. */
static __always_inline int admit(void *map, const void *key)
{
	__u64 now = bpf_ktime_get_ns(), *tat, old, next;
	int i;

	tat = bpf_map_lookup_elem(map, key);
	if (!tat) {
		next = now + interval_ns;
		bpf_map_update_elem(map, key, &next, BPF_NOEXIST);
		return XDP_PASS;
	}
	for (i = 0; i < CAS_TRIES; i++) {
		old = *(volatile __u64 *)tat;
		next = (old > now ? old : now) + interval_ns;
		if (next - now > tolerance_ns)
			return XDP_DROP;
		if (__sync_val_compare_and_swap(tat, old, next) == old)
			return XDP_PASS;
	}
	return XDP_DROP;
}

SEC("xdp")
int bench_min(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > end)
		return XDP_PASS;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		__u32 src;

		if ((void *)(ip + 1) > end)
			return XDP_PASS;
		src = ip->saddr;
		BENCH_MIN_SOURCE_HOOK(&src);
		return admit(&min_tat4, &src);
	}
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		struct src6 src;

		if ((void *)(ip6 + 1) > end)
			return XDP_PASS;
		__builtin_memcpy(&src, &ip6->saddr, sizeof(src));
		return admit(&min_tat6, &src);
	}
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
