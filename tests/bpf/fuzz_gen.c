// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The differential packet fuzzer's generator: frames built from a base
 * (Ethernet, VLAN tags, IPv4 or IPv6 with options and extension headers,
 * L4) then maybe truncated, flipped and padded, and the phases' policies;
 * each a function of (seed, phase, index), so a batch can be replayed.
 */
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/if_ether.h>
#include "sluice/sluice.h"
#include "fuzz_pkt.h"

/* ---- deterministic randomness ---- */

static __u64 mix64(__u64 x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}


static __u64 rnd(struct rng *r)
{
	r->s += 0x9e3779b97f4a7c15ULL;
	return mix64(r->s);
}

static __u32 below(struct rng *r, __u32 n)
{
	return (__u32)(rnd(r) % n);
}

static int chance(struct rng *r, __u32 percent)
{
	return below(r, 100) < percent;
}

struct rng rng_for(__u64 seed, __u64 a, __u64 b)
{
	struct rng r = { mix64(seed ^ mix64(a * 0x100000001b3ULL ^ mix64(b))) };

	return r;
}

/* ---- mutation kinds: what the generator did, for the summary ---- */


/* ---- mutation kinds ---- */

#define MK_NAME(n) #n,
const char *const mk_names[MK_MAX] = { MUTATION_KINDS(MK_NAME) };
#undef MK_NAME
__u64 mk_count[MK_MAX];

/* ---- frame generation ---- */

struct gen {
	__u8 b[BUILD_MAX];
	size_t len;
};

static __u8 *put(struct gen *g, size_t n)
{
	__u8 *at = g->b + g->len;

	if (g->len + n > sizeof(g->b))
		n = 0;	/* cannot happen: the parts are bounded */
	memset(at, 0, n);
	g->len += n;
	return at;
}

static void put16(__u8 *p, unsigned int v)
{
	p[0] = (__u8)(v >> 8);
	p[1] = (__u8)v;
}

static void fill(struct rng *r, __u8 *p, size_t n)
{
	while (n--)
		*p++ = (__u8)rnd(r);
}

/* Destination ports the policies' port rules look at, and some others. */
static __u16 pick_port(struct rng *r)
{
	static const __u16 ports[] = { 22, 53, 79, 80, 85, 89, 90, 443, 444, 0, 65535 };

	return chance(r, 80) ? ports[below(r, sizeof(ports) / sizeof(ports[0]))]
			     : (__u16)below(r, 65536);
}

/* A source: mostly from the ranges the policies name (repeated, so buckets
 * fill up), sometimes anything at all. */
static void pick_v4_src(struct rng *r, __u8 a[4])
{
	if (chance(r, 4)) {
		mk_count[MK_random_src]++;
		fill(r, a, 4);
		return;
	}
	a[0] = 198;
	a[1] = chance(r, 90) ? 18 : 19;
	a[2] = (__u8)below(r, 13);
	a[3] = (__u8)below(r, 24);
}

static void pick_v6_src(struct rng *r, __u8 a[16])
{
	memset(a, 0, 16);
	if (chance(r, 4)) {
		mk_count[MK_random_src]++;
		fill(r, a, 16);
		return;
	}
	if (chance(r, 10)) {	/* ::ffff:198.18.x.y, an IPv6 source all the same */
		mk_count[MK_v4_mapped_src]++;
		a[10] = a[11] = 0xff;
		pick_v4_src(r, a + 12);
		return;
	}
	a[0] = 0x20;
	a[1] = 0x01;
	a[3] = 0x02;
	a[7] = (__u8)below(r, 6);
	a[15] = (__u8)below(r, 24);
	if (chance(r, 10))
		a[14] = (__u8)below(r, 256);
}

/* TCP, UDP, ICMP/ICMPv6 or another protocol's header and some payload. */
static void put_l4(struct rng *r, struct gen *g, __u8 proto, int v6)
{
	__u8 *h, fl;
	__u32 k;

	if (proto == IPPROTO_TCP) {
		h = put(g, 20);
		put16(h, 40000 + below(r, 1000));
		put16(h + 2, pick_port(r));
		h[12] = 5 << 4;
		switch (below(r, 4)) {
		case 0: fl = 0x02; break;		/* SYN */
		case 1: fl = 0x12; break;		/* SYN+ACK */
		case 2: fl = 0x10; break;		/* ACK */
		default: fl = (__u8)rnd(r); break;
		}
		h[13] = fl;
		mk_count[(fl & 0x12) == 0x02 ? (v6 ? MK_v6_tcp_syn : MK_v4_tcp_syn)
					     : (v6 ? MK_v6_tcp_other : MK_v4_tcp_other)]++;
	} else if (proto == IPPROTO_UDP) {
		h = put(g, 8);
		put16(h, 4000);
		put16(h + 2, pick_port(r));
		put16(h + 4, 8);
		mk_count[v6 ? MK_v6_udp : MK_v4_udp]++;
	} else if (proto == IPPROTO_ICMP || proto == IPPROTO_ICMPV6) {
		h = put(g, 8);
		h[0] = v6 ? 128 : 8;	/* echo request */
		mk_count[v6 ? MK_v6_icmpv6 : MK_v4_icmp]++;
	} else {
		mk_count[v6 ? MK_v6_other_l4 : MK_v4_other_l4]++;
	}
	k = below(r, 49);
	fill(r, put(g, k), k);
}

static __u8 pick_l4(struct rng *r, int v6)
{
	static const __u8 other[] = { 47, 50, 59, 132, 255 };
	__u32 k = below(r, 100);

	if (k < 40)
		return IPPROTO_TCP;
	if (k < 75)
		return IPPROTO_UDP;
	if (k < 90)
		return v6 ? IPPROTO_ICMPV6 : IPPROTO_ICMP;
	return chance(r, 50) ? other[below(r, sizeof(other))] : (__u8)rnd(r);
}

static void gen_ipv4(struct rng *r, struct gen *g)
{
	size_t at = g->len, hlen = 20;
	__u8 *ip, proto = pick_l4(r, 0);
	__u32 k;

	if (chance(r, 20)) {
		hlen = 4 * (6 + below(r, 10));
		mk_count[MK_v4_options]++;
	}
	ip = put(g, hlen);
	ip[0] = (__u8)(0x40 | hlen / 4);
	ip[8] = 64;
	ip[9] = proto;
	pick_v4_src(r, ip + 12);
	ip[16] = 198; ip[17] = 18; ip[18] = 0; ip[19] = 2;
	ip[5] = (__u8)below(r, 4);	/* a few ids: fragments meet their first */
	if (hlen > 20) {	/* NOPs, then an end of list, or junk */
		memset(ip + 20, 1, hlen - 20);
		if (chance(r, 50))
			fill(r, ip + 20, hlen - 20);
		else
			ip[hlen - 1] = 0;
	}
	k = below(r, 100);
	if (k < 8) {
		put16(ip + 6, 0x2000);	/* MF, offset 0 */
		mk_count[MK_v4_frag_first]++;
	} else if (k < 16) {
		put16(ip + 6, (chance(r, 50) ? 0x2000 : 0) | (1 + below(r, 0x1fff)));
		mk_count[MK_v4_frag_later]++;
	} else if (k < 50) {
		put16(ip + 6, 0x4000);	/* DF */
	}
	put_l4(r, g, proto, 0);
	ip = g->b + at;
	put16(ip + 2, (unsigned int)(g->len - at));
	if (chance(r, 5)) {
		ip[0] = (__u8)(0x40 | below(r, 16));
		mk_count[MK_v4_lying_ihl]++;
	}
	if (chance(r, 5)) {
		put16(ip + 2, chance(r, 50) ? below(r, 24) : below(r, 65536));
		mk_count[MK_v4_lying_totlen]++;
	}
	if (chance(r, 3)) {
		ip[0] = (__u8)((below(r, 16) << 4) | (ip[0] & 0xf));
		mk_count[MK_v4_bad_version]++;
	}
}

static const __u8 ext_types[] = { IPPROTO_HOPOPTS, IPPROTO_ROUTING, IPPROTO_FRAGMENT,
				  IPPROTO_DSTOPTS, IPPROTO_AH, IPPROTO_MH };

/* One extension header of type t whose Next Header is set later; returns
 * where that field is. */
static __u8 *put_ext(struct rng *r, struct gen *g, __u8 t, int *later)
{
	__u8 *h, units = (__u8)below(r, 3);

	if (t == IPPROTO_FRAGMENT) {
		h = put(g, 8);
		if (chance(r, 30)) {
			put16(h + 2, (1 + below(r, 0x1fff)) << 3 | below(r, 2));
			*later = 1;
		} else {
			put16(h + 2, 1);	/* offset 0, M */
		}
		/* Mostly a few ids, so later fragments meet their first. */
		if (chance(r, 75))
			h[7] = (__u8)below(r, 4);
		else
			fill(r, h + 4, 4);
	} else if (t == IPPROTO_AH) {
		h = put(g, ((size_t)units + 2) * 4);
		h[1] = units;
	} else {
		h = put(g, ((size_t)units + 1) * 8);
		h[1] = units;
		h[2] = 1;	/* PadN over the rest */
		h[3] = (__u8)(((size_t)units + 1) * 8 - 4);
	}
	return h;
}

static void gen_ipv6(struct rng *r, struct gen *g)
{
	size_t at = g->len;
	__u8 *ip6, *nh, *h, proto = pick_l4(r, 1), t;
	int later = 0, frag = 0;
	__u32 n = 0, i, k = below(r, 100);

	ip6 = put(g, 40);
	ip6[0] = 0x60;
	ip6[7] = 64;
	pick_v6_src(r, ip6 + 8);
	ip6[24] = 0x20; ip6[25] = 0x01; ip6[27] = 0x02; ip6[39] = 2;
	nh = ip6 + 6;
	if (k < 6) {
		/* A jumbogram (RFC 2675): hop-by-hop with the jumbo option,
		 * payload length 0. */
		h = put(g, 8);
		*nh = IPPROTO_HOPOPTS;
		nh = h;
		h[2] = 0xc2;
		h[3] = 4;
		put16(h + 4, 1);	/* 65536 + ... */
		mk_count[MK_v6_jumbo]++;
	} else if (k < 40) {
		n = 1 + below(r, 5);
		mk_count[MK_v6_ext_chain]++;
	} else if (k < 52) {
		n = SLUICE_MAX_IPV6_EXT_HDRS - 1 + below(r, 6);
		mk_count[MK_v6_ext_long]++;
	} else if (k < 58) {
		/* One type over and over, as a chain that loops would. */
		n = 4 + below(r, 12);
		t = ext_types[below(r, sizeof(ext_types))];
		for (i = 0; i < n; i++) {
			*nh = t;
			nh = put_ext(r, g, t, &later);
		}
		n = 0;
		frag = t == IPPROTO_FRAGMENT;
		mk_count[MK_v6_ext_loop]++;
	}
	for (i = 0; i < n; i++) {
		t = ext_types[below(r, sizeof(ext_types))];
		*nh = t;
		nh = put_ext(r, g, t, &later);
		frag |= t == IPPROTO_FRAGMENT;
	}
	*nh = proto;
	if (frag)
		mk_count[later ? MK_v6_frag_later : MK_v6_frag_first]++;
	put_l4(r, g, proto, 1);
	ip6 = g->b + at;
	put16(ip6 + 4, k < 6 ? 0 : (unsigned int)(g->len - at - 40));
	if (chance(r, 3)) {
		ip6[0] = (__u8)(below(r, 16) << 4);
		mk_count[MK_v6_bad_version]++;
	}
}

/* A whole frame of some kind, before truncation and flips. */
static void gen_base(struct rng *r, struct gen *g)
{
	static const __u16 non_ip[] = { 0x88cc, 0x8847, 0x8863, 0x88e5, 0x0842, 0x9000 };
	__u32 tags = 0, i, k = below(r, 100);
	__u8 *eth, *h;

	g->len = 0;
	eth = put(g, 14);
	eth[0] = 2; eth[5] = 2; eth[6] = 2; eth[11] = 1;
	h = eth + 12;
	if (k >= 50)
		tags = k < 70 ? 1 : k < 85 ? 2 : k < 93 ? 3 : k < 97 ? 4 : 5 + below(r, 6);
	/* 5 to 10 tags: around SLUICE_MAX_VLAN_TAGS, deeper than it walks */
	mk_count[tags <= 4 ? MK_vlan0 + tags : MK_vlan_deep]++;
	for (i = 0; i < tags; i++) {
		int ad = chance(r, 30);

		put16(h, ad ? ETH_P_8021AD : ETH_P_8021Q);
		if (ad)
			mk_count[MK_qinq_8021ad]++;
		h = put(g, 4);
		put16(h, below(r, 4096));
		h += 2;
	}
	k = below(r, 100);
	if (k < 45) {
		put16(h, ETH_P_IP);
		gen_ipv4(r, g);
	} else if (k < 88) {
		put16(h, ETH_P_IPV6);
		gen_ipv6(r, g);
	} else if (k < 94) {
		put16(h, ETH_P_ARP);
		h = put(g, 28);
		put16(h, 1); put16(h + 2, ETH_P_IP); h[4] = 6; h[5] = 4; put16(h + 6, 1);
		mk_count[MK_arp]++;
	} else {
		put16(h, chance(r, 70) ? non_ip[below(r, 6)] : below(r, 65536));
		k = below(r, 64);
		fill(r, put(g, k), k);
		mk_count[MK_non_ip]++;
	}
}

/*
 * Frame idx of a phase. Every 16th block of SWEEP_LEN frames is a sweep:
 * one base frame cut at every offset 0..SWEEP_LEN-1; other frames are a
 * base frame, then maybe truncated, flipped and padded.
 */
size_t gen_frame(__u64 seed, __u32 phase, __u32 idx, __u8 *out)
{
	struct gen g;
	struct rng r;
	__u32 block = idx / SWEEP_LEN, n, i;

	if (block % 16 == 3) {
		r = rng_for(seed, phase, 0x5eed00000000ULL | block);
		gen_base(&r, &g);
		if (g.len > LINEAR_MAX)
			g.len = LINEAR_MAX;
		if (idx % SWEEP_LEN < g.len)
			g.len = idx % SWEEP_LEN;
		mk_count[MK_truncate_sweep]++;
		memcpy(out, g.b, g.len);
		return g.len;
	}
	r = rng_for(seed, phase, idx);
	gen_base(&r, &g);
	if (g.len > LINEAR_MAX)
		g.len = LINEAR_MAX;
	if (chance(&r, 5)) {
		n = 1 + below(&r, 64);
		fill(&r, put(&g, n), n);
		mk_count[MK_pad]++;
	} else if (chance(&r, 1)) {
		/* Past one page: the program sees a multi-buffer frame and
		 * counts every byte. Its headers are in the first buffer,
		 * unless a header cut at LINEAR_MAX claims a length that runs
		 * into the fill and on past the first buffer: the program
		 * reads no header there, nor does the reference. */
		n = 1500 + below(&r, FRAME_MAX - 1500 + 1);
		if (n > g.len)
			fill(&r, put(&g, n - g.len), n - g.len);
		mk_count[MK_jumbo_frame]++;
	}
	if (chance(&r, 10)) {
		n = 1 + below(&r, 4);
		for (i = 0; i < n; i++)
			g.b[below(&r, (__u32)g.len)] = (__u8)rnd(&r);
		mk_count[MK_byte_flip]++;
	}
	if (chance(&r, 12)) {
		g.len = below(&r, (__u32)g.len + 1);
		mk_count[MK_truncate]++;
	}
	memcpy(out, g.b, g.len);
	return g.len;
}

/* ---- policies: CLI words, committed by the CLI's code ---- */

/* The phase's policy as policy-file lines; each rule in it with some
 * chance, so phases differ in what decides a source. */
void gen_policy(struct rng *r, char *text, size_t len, __u64 *budget)
{
	static const char *const rules[] = {
		"deny 198.18.1.0/24",
		"allow 198.18.2.0/24",
		"limit set 198.18.3.0/24 --rate 1/h --burst %u",
		"limit set 198.18.4.0/24 --rate 1/h --burst %u --per /28",
		"limit set 198.18.5.0/24 --rate 1/h --burst %u --ban 1h",
		"limit set 198.18.6.0/24 --rate 1/h --burst %u --monitor",
		"limit set 198.18.7.0/24 --bytes 1/h --burst 277",
		"limit set 198.18.0.0/16 --proto tcp --dport 80-89 --rate 1/h --burst %u",
		"limit set 198.18.0.0/16 --proto udp --rate 1/h --burst %u",
		"limit set 198.18.8.0/24 --syn --rate 1/h --burst %u",
		"deny 198.18.9.0/24 --proto icmp",
		"limit set 198.18.10.0/24 --rate 1/h --burst %u --per rule",
		"allow 198.18.11.0/24 --proto tcp --dport 443",
		"limit set 198.18.12.0/24 --rate 1/h --burst %u --ban 1h --monitor",
		"deny 2001:2:0:1::/64",
		"allow 2001:2:0:2::/64",
		"limit set 2001:2:0:3::/64 --rate 1/h --burst %u --per /124",
		"limit set 2001:2::/48 --syn --rate 1/h --burst %u",
		"deny 2001:2:0:6::/64 --proto tcp",
		"limit set 2001:2:0:4::/64 --proto icmpv6 --rate 1/h --burst %u --monitor",
		"limit set 2001:2:0:5::/64 --proto udp --dport 53 --rate 1/h --burst %u --per /64",
		"limit set ::/0 --proto 47 --rate 1/h --burst %u",
	};
	static const char *const defaults[] = {
		"",	/* not set: allowed */
		"limit default --rate 1000000000 --burst 1000000000",
		"limit default --rate 1/h --burst %u",
		"limit default --rate 1/h --burst %u --monitor",
	};
	size_t used = 0, i;

	text[0] = 0;
	for (i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		if (chance(r, 60))
			used += (size_t)snprintf(text + used, len - used, rules[i], 1 + below(r, 12)),
			used += (size_t)snprintf(text + used, len - used, ";");
	snprintf(text + used, len - used, defaults[below(r, 4)], 1 + below(r, 12));
	*budget = chance(r, 25) ? 20 + below(r, 200) : 0;
}
