// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sluice-flood --xdp: the program BPF_PROG_TEST_RUN runs in live-frames
 * mode. It sends every frame back out of its interface (XDP_TX); with
 * several IPv4 sources (or --random) it first moves the frame to the next
 * source, so one run cycles through them without a syscall per source. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "flood_src.h"

#define IPV4_HDR_WORDS (sizeof(struct iphdr) / sizeof(__u16))

const volatile __u32 src_first;		/* host order */
const volatile __u32 src_count = 1;
const volatile __u32 random_on;		/* sources from rnd, not the walk */
const volatile struct flood_random rnd;
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

SEC("xdp")
int flood_xdp_tx(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);
	__u32 i;

	if ((src_count <= 1 && !random_on) || (void *)(udp + 1) > end ||
	    eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5)
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
