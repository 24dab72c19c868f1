// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sluice-flood --xdp: the program BPF_PROG_TEST_RUN runs in live-frames
 * mode. It sends every frame back out of its interface (XDP_TX); with
 * several sources (UDP over IPv4 or IPv6) or --random (IPv4) it first moves
 * the frame to the next source, so one run cycles through them without a
 * syscall per source. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "flood_src.h"

#define IPV4_HDR_WORDS (sizeof(struct iphdr) / sizeof(__u16))

const volatile __u32 src_first;		/* host order */
const volatile __u32 src_count = 1;
const volatile __u32 random_on;		/* sources from rnd, not the walk */
const volatile struct flood_random rnd;
const volatile __u64 src6_hi, src6_lo;	/* IPv6: the first source, host order */
__u32 next_src;

static __always_inline __u16 ipv4_csum(struct iphdr *ip)
{
	__u16 *w = (__u16 *)ip;
	__u32 sum = 0;
	int i;

	ip->check = 0;
#pragma unroll
	for (i = 0; i < (int)IPV4_HDR_WORDS; i++)
		sum += w[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

/* One's complement sum of a 32-bit word's two 16-bit halves. */
static __always_inline __u64 csum_word(__u32 w)
{
	return (w & 0xffff) + (w >> 16);
}

/* IPv6 (UDP, which must carry a checksum there): the frame moves to source
 * src6 + i (128-bit add), its UDP checksum adjusted for the words that
 * changed (RFC 1624: HC' = ~(~HC + ~m + m')). The frame may hold any
 * earlier source (live frames recycle their pages), so old is what it
 * holds now, not the first source. */
static __always_inline void move_src6(struct ipv6hdr *ip6, struct udphdr *udp, __u32 i)
{
	__u64 lo = src6_lo + i, hi = src6_hi + (lo < src6_lo), sum;
	__u32 next[4] = { bpf_htonl(hi >> 32), bpf_htonl((__u32)hi), bpf_htonl(lo >> 32),
			  bpf_htonl((__u32)lo) };
	__u16 check;
	int k;

	sum = (__u16)~udp->check;
#pragma unroll
	for (k = 0; k < 4; k++) {
		sum += csum_word(~ip6->saddr.in6_u.u6_addr32[k]) + csum_word(next[k]);
		ip6->saddr.in6_u.u6_addr32[k] = next[k];
	}
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	check = (__u16)~sum;
	udp->check = check ? check : 0xffff;	/* 0 would mean none: not for IPv6 */
}

SEC("xdp")
int flood_xdp_tx(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);
	__u32 i;

	if (src_count <= 1 && !random_on)
		return XDP_TX;
	if ((void *)(eth + 1) <= end && eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		udp = (void *)(ip6 + 1);
		if ((void *)(udp + 1) > end || ip6->nexthdr != IPPROTO_UDP)
			return XDP_TX;
		i = next_src++;		/* one CPU runs this: no race to mind */
		if (next_src >= src_count)
			next_src = 0;
		move_src6(ip6, udp, i % src_count);
		return XDP_TX;
	}
	if ((void *)(udp + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5)
		return XDP_TX;
	i = next_src++;		/* one CPU runs this: no race to mind */
	if (random_on) {
		struct flood_random r = rnd;

		ip->saddr = bpf_htonl(flood_random_src(&r, i));
	} else {
		if (next_src >= src_count)
			next_src = 0;
		ip->saddr = bpf_htonl(src_first + i % src_count);
	}
	ip->check = ipv4_csum(ip);
	udp->check = 0;		/* none, which IPv4 allows */
	return XDP_TX;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
