/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Packet parsing for the XDP program: every read is preceded by an explicit
 * check against data_end, every loop is bounded. */
#ifndef SLUICE_BPF_PARSE_H
#define SLUICE_BPF_PARSE_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "sluice/sluice.h"

/* A malformed packet whose source address is still readable is charged to
 * that source like any other (PARSE_MALFORMED_SRC), so malformation is no
 * way around a limit; only one without a source passes unlimited. */
enum parse_result {
	PARSE_OK = 0,
	PARSE_NON_IP,
	PARSE_MALFORMED,	/* no source address to charge */
	PARSE_MALFORMED_SRC,	/* source known, the rest malformed */
	PARSE_VLAN_TOO_DEEP,	/* still tagged past SLUICE_MAX_VLAN_TAGS */
};

struct cursor {
	void *pos;
	void *end;
};

/* Fragment offset fields: IPv4's in host order, IPv6's within frag_off. */
#define IPV6_FRAG_OFFSET	0xfff8
#ifndef IP_OFFSET
#define IP_OFFSET		0x1fff
#endif
#ifndef IP_MF
#define IP_MF			0x2000
#endif
#define IPV6_FRAG_MORE		0x0001

/* What rules may match on, beyond the source: the L4 protocol, and for
 * the first fragment of TCP and UDP the destination port and TCP flags.
 * A later fragment (offset != 0) has none of them in its own headers: its
 * L4_LATER_FRAG, and a first fragment's L4_FIRST_FRAG, tell the caller to
 * look its datagram up in the fragment table (bpf/frag.h), where the first
 * fragment's facts are kept, by l3 and id_at. An IPv6 later fragment's
 * proto stays 0: the stack takes the datagram's protocol from its first
 * fragment and ignores what a later one's fragment header says. */
#define L4_PORTS	0x1	/* dport is known */
#define L4_SYN		0x2	/* TCP, SYN set and ACK clear */
#define L4_LATER_FRAG	0x4	/* fragment offset != 0: no L4 facts (yet) */
#define L4_FIRST_FRAG	0x8	/* offset 0 with more fragments to come */
struct l4 {
	__u8 proto;		/* IPPROTO_*, 0 when unknown */
	__u8 flags;		/* L4_* */
	__u16 dport;		/* host byte order, with L4_PORTS */
	__u16 l3;		/* a fragment: where its IP header starts in the frame */
	__u16 id_at;		/* a fragment: where its identification lies, from l3 */
};

/* Where an IPv4 header's identification lies; the most an IPv6 fragment
 * header's may lie past the IPv6 header (each of the extension headers
 * walked before it is at most 2,048 octets). */
#define FRAG_ID_AT_V4		4U
#define FRAG_ID_AT_MAX		(sizeof(struct ipv6hdr) + SLUICE_MAX_IPV6_EXT_HDRS * 2048U + 4U)

/* Bytes left in the IP packet past its L3 headers when its length field
 * sets no bound (an IPv6 jumbogram, payload length 0): the frame's end is
 * the only one. */
#define L4_LEFT_UNBOUNDED	0xffffffffU

/*
 * The L4 header at c->pos of a first fragment (or whole packet) with
 * protocol proto; left is how many bytes of the IP packet (by its length
 * field: IPv4 tot_len, IPv6 payload length) lie from c->pos on. A TCP or
 * UDP header that does not lie whole within both the frame and the IP
 * packet is malformed: its port and flags cannot be read (a tiny first
 * fragment, RFC 1858; or bytes past the packet, such as a NIC's padding of
 * a short frame, read as a header). The caller drops such a packet when a
 * rule covering its source matches on L4 (l4_unreadable).
 */
static __always_inline int parse_l4(struct cursor *c, __u8 proto, int first, __u32 left,
				    struct l4 *l4)
{
	struct tcphdr *th = c->pos;
	struct udphdr *uh = c->pos;

	l4->proto = proto;
	if (!first)
		return PARSE_OK;
	if (proto == IPPROTO_TCP) {
		if (left < sizeof(*th) || (void *)(th + 1) > c->end)
			return PARSE_MALFORMED_SRC;
		l4->dport = bpf_ntohs(th->dest);
		l4->flags = L4_PORTS | (th->syn && !th->ack ? L4_SYN : 0);
	} else if (proto == IPPROTO_UDP) {
		if (left < sizeof(*uh) || (void *)(uh + 1) > c->end)
			return PARSE_MALFORMED_SRC;
		l4->dport = bpf_ntohs(uh->dest);
		l4->flags = L4_PORTS;
	}
	return PARSE_OK;
}

struct vlan_tag {
	__be16 tci;
	__be16 proto;
};

/* Where the IP header can start: after Ethernet and every tag parse_eth
 * takes. */
#define PARSE_L3_OFFSET_MAX \
	(sizeof(struct ethhdr) + SLUICE_MAX_VLAN_TAGS * sizeof(struct vlan_tag))

static __always_inline int proto_is_vlan(__be16 proto)
{
	return proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD);
}

/* Ethernet plus up to SLUICE_MAX_VLAN_TAGS tags; returns 0 with the inner
 * EtherType in *proto, -1 if the frame is too short for what it claims, or
 * PARSE_VLAN_TOO_DEEP when a tag is still there after the last one walked
 * (the stack would strip it too; its packet is unread). The untagged frame
 * leaves at the first test. */
static __always_inline int parse_eth(struct cursor *c, __be16 *proto)
{
	struct ethhdr *eth = c->pos;
	struct vlan_tag *tag;
	int i;

	if ((void *)(eth + 1) > c->end)
		return -1;
	c->pos = eth + 1;
	*proto = eth->h_proto;

#pragma unroll
	for (i = 0; i < SLUICE_MAX_VLAN_TAGS; i++) {
		if (!proto_is_vlan(*proto))
			return 0;
		tag = c->pos;
		if ((void *)(tag + 1) > c->end)
			return -1;
		c->pos = tag + 1;
		*proto = tag->proto;
	}
	return proto_is_vlan(*proto) ? PARSE_VLAN_TOO_DEEP : 0;
}

static __always_inline int parse_ipv4(struct cursor *c, struct sluice_src_key *src,
				      struct l4 *l4)
{
	struct iphdr *ip = c->pos;
	__u32 hdr_len, tot_len;
	int r;

	if ((void *)(ip + 1) > c->end)
		return PARSE_MALFORMED;

	/* Charged to the source it claims, however broken the rest is. */
	__builtin_memset(src, 0, sizeof(*src));
	src->a[10] = 0xff;
	src->a[11] = 0xff;
	__builtin_memcpy(&src->a[12], &ip->saddr, sizeof(ip->saddr));
	src->family = SLUICE_FAMILY_V4;
	src->key_len = SLUICE_KEY_LEN_SOURCE;
	src->policy = SLUICE_KEY_HOME;

	if (ip->version != 4 || ip->ihl < 5)
		return PARSE_MALFORMED_SRC;
	hdr_len = ip->ihl * 4;
	tot_len = bpf_ntohs(ip->tot_len);
	if (c->pos + hdr_len > c->end || tot_len < hdr_len)
		return PARSE_MALFORMED_SRC;
	c->pos += hdr_len;
	/* Ports are in the first fragment only. */
	r = parse_l4(c, ip->protocol, !(ip->frag_off & bpf_htons(IP_OFFSET)),
		     tot_len - hdr_len, l4);
	if (ip->frag_off & bpf_htons(IP_MF | IP_OFFSET)) {
		l4->flags |= (ip->frag_off & bpf_htons(IP_OFFSET)) ? L4_LATER_FRAG : L4_FIRST_FRAG;
		l4->id_at = FRAG_ID_AT_V4;
	}
	return r;
}

/* The IPv6 fragment header (RFC 8200 4.5). */
struct frag_hdr {
	__u8 nexthdr;
	__u8 reserved;
	__be16 frag_off;	/* offset << 3 | M */
	__be32 identification;
};

/* Generic IPv6 extension header: next header, length in 8-octet units. */
struct ipv6_ext {
	__u8 nexthdr;
	__u8 hdrlen;
};

static __always_inline int ipv6_is_ext(__u8 nh)
{
	return nh == IPPROTO_HOPOPTS || nh == IPPROTO_ROUTING ||
	       nh == IPPROTO_FRAGMENT || nh == IPPROTO_DSTOPTS ||
	       nh == IPPROTO_AH || nh == IPPROTO_MH;
}

/* Length of extension header of type nh: AH counts 4-octet units, the
 * fragment header is always 8 octets, the rest count 8-octet units. */
static __always_inline __u32 ipv6_ext_len(const struct ipv6_ext *ext, __u8 nh)
{
	if (nh == IPPROTO_FRAGMENT)
		return 8;
	if (nh == IPPROTO_AH)
		return ((__u32)ext->hdrlen + 2) * 4;
	return ((__u32)ext->hdrlen + 1) * 8;
}

static __always_inline int parse_ipv6(struct cursor *c, struct sluice_src_key *src,
				      struct l4 *l4)
{
	struct ipv6hdr *ip6 = c->pos;
	struct frag_hdr *fh;
	struct ipv6_ext *ext;
	__u32 ext_len, payload_len, left = 0, at, first_at = 0;
	__u8 nh, first = 0;
	int i, r;

	if ((void *)(ip6 + 1) > c->end)
		return PARSE_MALFORMED;
	c->pos = ip6 + 1;
	nh = ip6->nexthdr;

	/* Charged to the source it claims, however broken the rest is. An
	 * IPv6 source is an IPv6 source whatever it looks like: ::ffff:a.b.c.d
	 * is judged by IPv6 rules in a bucket of its own (the family is part of
	 * the key), never as IPv4 a.b.c.d. */
	__builtin_memset(src, 0, sizeof(*src));
	__builtin_memcpy(src->a, &ip6->saddr, sizeof(src->a));
	src->family = SLUICE_FAMILY_V6;
	src->key_len = SLUICE_KEY_LEN_SOURCE;
	src->policy = SLUICE_KEY_HOME;
	if (ip6->version != 6)
		return PARSE_MALFORMED_SRC;

	/* The chain is walked so that a truncated or overlong one counts as
	 * malformed (and is still charged to its source). */
	for (i = 0; i < SLUICE_MAX_IPV6_EXT_HDRS; i++) {
		if (!ipv6_is_ext(nh))
			break;
		ext = c->pos;
		if ((void *)(ext + 1) > c->end)
			return PARSE_MALFORMED_SRC;
		if (nh == IPPROTO_FRAGMENT) {
			fh = c->pos;
			if ((void *)(fh + 1) > c->end)
				return PARSE_MALFORMED_SRC;
			/* Its identification, from the IPv6 header. */
			at = (__u32)((void *)&fh->identification - (void *)ip6);
			/* A later fragment: what follows its header is
			 * payload, and its next header is not believed. */
			if (fh->frag_off & bpf_htons(IPV6_FRAG_OFFSET)) {
				l4->proto = 0;
				l4->flags = L4_LATER_FRAG;
				l4->id_at = (__u16)at;
				return PARSE_OK;
			}
			/* The first of several: the last such header walked
			 * names the datagram. */
			if (fh->frag_off & bpf_htons(IPV6_FRAG_MORE)) {
				first = L4_FIRST_FRAG;
				first_at = at;
			}
		}
		c->pos = (void *)ext + ipv6_ext_len(ext, nh);
		if (c->pos > c->end)
			return PARSE_MALFORMED_SRC;
		nh = ext->nexthdr;
	}
	if (ipv6_is_ext(nh))
		return PARSE_MALFORMED_SRC;
	/* The L4 header lies within 40 + payload length, unless that is 0 (a
	 * jumbogram, RFC 2675: the frame is then the only bound). */
	payload_len = bpf_ntohs(ip6->payload_len);
	ext_len = (__u32)(c->pos - (void *)(ip6 + 1));
	if (!payload_len)
		left = L4_LEFT_UNBOUNDED;
	else if (payload_len > ext_len)
		left = payload_len - ext_len;
	r = parse_l4(c, nh, 1, left, l4);
	l4->flags |= first;
	l4->id_at = (__u16)first_at;
	return r;
}

#endif /* SLUICE_BPF_PARSE_H */
