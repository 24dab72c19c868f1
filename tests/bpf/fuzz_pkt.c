// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Differential packet fuzzer: generated and mutated frames run through the
 * real XDP program (BPF_PROG_TEST_RUN, policy committed by the CLI's code)
 * and through the reference classifier (refclass.c); the XDP action, the
 * reason counters, the per-rule counters and every bucket must agree, and
 * the per-CPU counters must sum to the frames sent on each CPU.
 *
 * Each frame is a function of (seed, phase, index), so a batch that
 * disagrees is replayed frame by frame on a fresh program to print the
 * first offending frame. `--variant short-ext` loads a build that walks
 * only 4 IPv6 extension headers (tests/bpf/sluice_shortext.bpf.c): the
 * fuzzer fails against it (exit 1, the first offending frame printed), and
 * `--prove`, as tests/list runs it, shows that before each real run.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <sched.h>
#include <time.h>
#include "fixture.h"
#include "refclass.h"
#include "sluice_shortext.skel.h"

#define FRAME_MAX	9000		/* the longest frame sent: a jumbo frame, */
#define LINEAR_MAX	512		/* all of whose headers lie in the first buffer */
#define BUILD_MAX	10240		/* room while building */
#define PHASE_FRAMES	100000U		/* frames per policy (one program load) */
#define MAX_SOURCES	65536U		/* the program's source table */
#define REF_CAP		(1U << 18)	/* the reference's bucket table */
#define SWEEP_LEN	128U		/* truncation sweeps cover offsets 0..127 */
#define MAX_CPUS	256

/* ---- deterministic randomness ---- */

static __u64 mix64(__u64 x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

struct rng {
	__u64 s;
};

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

static struct rng rng_for(__u64 seed, __u64 a, __u64 b)
{
	struct rng r = { mix64(seed ^ mix64(a * 0x100000001b3ULL ^ mix64(b))) };

	return r;
}

/* ---- mutation kinds: what the generator did, for the summary ---- */

#define MUTATION_KINDS(X)						\
	X(vlan0) X(vlan1) X(vlan2) X(vlan3) X(vlan4) X(vlan_deep)	\
	X(qinq_8021ad)							\
	X(arp) X(non_ip) X(v4_tcp_syn) X(v4_tcp_other) X(v4_udp)	\
	X(v4_icmp) X(v4_other_l4) X(v4_options) X(v4_lying_ihl)		\
	X(v4_lying_totlen) X(v4_bad_version) X(v4_frag_first)		\
	X(v4_frag_later) X(v6_tcp_syn) X(v6_tcp_other) X(v6_udp)	\
	X(v6_icmpv6) X(v6_other_l4) X(v6_ext_chain) X(v6_ext_long)	\
	X(v6_ext_loop) X(v6_frag_first) X(v6_frag_later) X(v6_jumbo)	\
	X(v6_bad_version) X(v4_mapped_src) X(random_src)		\
	X(truncate) X(truncate_sweep) X(byte_flip) X(pad) X(jumbo_frame)
#define MK_ENUM(n) MK_##n,
enum mutation { MUTATION_KINDS(MK_ENUM) MK_MAX };
#undef MK_ENUM
#define MK_NAME(n) #n,
static const char *const mk_names[MK_MAX] = { MUTATION_KINDS(MK_NAME) };
#undef MK_NAME
static __u64 mk_count[MK_MAX];

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
static size_t gen_frame(__u64 seed, __u32 phase, __u32 idx, __u8 *out)
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
		/* Past one page: the program sees a multi-buffer frame whose
		 * headers are in the first buffer, and counts every byte. */
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
static void gen_policy(struct rng *r, char *text, size_t len, __u64 *budget)
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

static void ref_rule_of(const struct rule *cr, int is_default, struct ref_rule *rr)
{
	memset(rr, 0, sizeof(*rr));
	if (!is_default) {
		rr->family = cidr_family(&cr->cidr);
		memcpy(rr->addr, cr->cidr.addr.a, sizeof(rr->addr));
		rr->prefixlen = cr->cidr.prefixlen;
	}
	rr->mflags = cr->match.flags;
	rr->proto = cr->match.proto;
	rr->lo = cr->match.dport_lo;
	rr->hi = cr->match.dport_hi;
	rr->action = cr->action;
	/* doc/rules.rst: per source is the whole address, /LEN the family's own
	 * /LEN, per rule the rule's CIDR (one bucket). */
	if (cr->per == SLUICE_PER_PREFIX)
		rr->key_len = rr->family == SLUICE_FAMILY_V4 ? 96 + cr->per_len : cr->per_len;
	else if (cr->per == SLUICE_PER_RULE)
		rr->key_len = rr->prefixlen;
	else
		rr->key_len = SLUICE_KEY_LEN_SOURCE;
	rr->bytes = cr->unit == SLUICE_UNIT_BYTES;
	rr->burst = cr->burst;
	rr->ban = cr->ban_ns != 0;
	rr->monitor = cr->monitor;
	rr->index = (__u16)cr->index;
}

/* Commit the policy text to fx through the CLI's parser and commit, and
 * describe the same policy to the reference. */
static int apply_policy(struct fixture *fx, const char *text, __u64 budget, struct ref_policy *rp)
{
	struct policy *p = malloc(sizeof(*p));
	unsigned int i;
	int err;

	if (!p)
		return -ENOMEM;
	err = fixture_parse_policy(text, p);
	if (!err)
		err = policy_commit(&fx->m, p);
	if (!err && budget)
		err = new_sources_write(&fx->m, 1, SLUICE_PERIOD_HOUR, budget);
	if (!err && p->n > REF_MAX_RULES)
		err = -E2BIG;
	if (!err) {
		memset(rp, 0, sizeof(*rp));
		ref_rule_of(&p->def, 1, &rp->def);
		for (i = 0; i < p->n; i++)
			ref_rule_of(&p->rules[i], 0, &rp->rules[i]);
		rp->n = p->n;
		rp->new_sources = budget;
	}
	free(p);
	return err;
}

/* ---- the run ---- */

static const char *reason_names[SLUICE_R_MAX] = {
	"within_limit", "allowed", "non_ip", "malformed", "rate_limited", "denied",
	"no_bucket", "monitored", "banned", "new_source_limited", "l4_unreadable",
	"vlan_too_deep",
};

static struct {
	__u64 seed, frames, mismatches, refused;
	__u64 reasons[SLUICE_R_MAX];	/* frames per reason, agreed on */
	double seconds;
	const char *variant;
	int verbose;
	int quiet;	/* the self-test: only the closing lines */
	__u32 caught_phase, caught_frame;	/* the replay's first mismatch */
	size_t max_buckets;	/* the most buckets a phase took */
	int cpus[MAX_CPUS], ncpus;	/* the CPUs the run is pinned to in turn */
	__u32 batch;
	int cpu_seen[MAX_CPUS];
} run = { .batch = 4096, .variant = "real" };

#define say(...)						\
	do {							\
		if (!run.quiet)					\
			printf(__VA_ARGS__);			\
	} while (0)

static struct sluice_bpf *open_shortext(void)
{
	return (struct sluice_bpf *)sluice_shortext_bpf__open();
}

static int load(struct fixture *fx)
{
	int err = fixture_open_with(fx, MAX_SOURCES, strcmp(run.variant, "short-ext") ? sluice_bpf__open
										  : open_shortext);

	if (err)
		fprintf(stderr, "fuzz_pkt: cannot load the XDP program: %s\n", strerror(-err));
	return err;
}

static int test_run(int fd, const __u8 *frame, size_t len)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = (__u32)len, .repeat = 1);

	if (bpf_prog_test_run_opts(fd, &o))
		return -errno;
	return (int)o.retval;
}

/* Per-CPU reason counters: c[cpu * SLUICE_R_MAX + reason]. */
static int percpu_counters(struct fixture *fx, struct sluice_counter *c)
{
	__u32 reason;

	for (reason = 0; reason < SLUICE_R_MAX; reason++) {
		struct sluice_counter v[MAX_CPUS];
		int cpu;

		if (bpf_map_lookup_elem(fx->m.counters, &reason, v))
			return -errno;
		for (cpu = 0; cpu < fx->m.ncpus; cpu++)
			c[cpu * SLUICE_R_MAX + reason] = v[cpu];
	}
	return 0;
}

static int pin_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static void hex(const __u8 *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		say("%02x%s", p[i], (i + 1) % 32 == 0 || i + 1 == len ? "\n  " : "");
	say("(%zu bytes)\n", len);
}

static const char *xdp_name(int a)
{
	return a == XDP_PASS ? "pass" : a == XDP_DROP ? "drop" : "?";
}

static void print_key(const char *what, const struct sluice_src_key *k)
{
	char buf[128];

	format_source(k, buf, sizeof(buf));
	if (k->policy == SLUICE_KEY_HOME)
		say("  %s bucket %s (home)\n", what, buf);
	else
		say("  %s bucket %s key_len %u policy %u\n", what, buf, k->key_len, k->policy);
}

/*
 * Replay frames 0..upto of phase on a fresh program, one at a time, with
 * the action, the reason counters and the frame's bucket checked after
 * each; print the first that disagrees. Returns 1 when one was found.
 */
static int replay(__u32 phase, const char *policy, __u64 budget, __u32 upto)
{
	struct sluice_counter before[SLUICE_R_MAX], after[SLUICE_R_MAX];
	struct ref_policy *rp = calloc(1, sizeof(*rp));
	struct ref_state st = { 0 };
	struct fixture fx;
	__u8 frame[FRAME_MAX];
	__u32 i, reason;
	int found = 0;

	say("replaying phase %u frames 0..%u one at a time\n", phase, upto);
	if (!rp || ref_state_init(&st, REF_CAP) || load(&fx) ||
	    apply_policy(&fx, policy, budget, rp)) {
		say("replay: cannot set up\n");
		free(rp);
		return 0;
	}
	counters_now(&fx, before);
	for (i = 0; i <= upto && !found; i++) {
		size_t len = gen_frame(run.seed, phase, i, frame);
		struct ref_verdict v;
		struct sluice_bucket b;
		const struct ref_bucket *rb;
		int act = test_run(fx.prog_fd, frame, len), moved = -1, bad = 0, missing = 0;

		if (len < ETH_HLEN)
			continue;	/* refused by the kernel, checked by the run */
		ref_decide(rp, &st, frame, len, &v);
		counters_now(&fx, after);
		for (reason = 0; reason < SLUICE_R_MAX; reason++) {
			__u64 d = after[reason].packets - before[reason].packets;

			if (d == 1 && moved < 0)
				moved = (int)reason;
			else if (d)
				bad = 1;
		}
		memcpy(before, after, sizeof(after));
		bad |= act != v.xdp || moved != (int)v.reason;
		rb = v.bucketed ? ref_bucket_find(&st, &v.key) : NULL;
		if (rb) {
			missing = bpf_map_lookup_elem(fx.m.src_buckets, &v.key, &b) != 0;
			bad |= missing || b.passed != rb->passed || b.dropped != rb->dropped;
		}
		if (!bad)
			continue;
		found = 1;
		run.caught_phase = phase;
		run.caught_frame = i;
		say("FIRST MISMATCH: phase %u frame %u (seed %llu)\n  policy: %s\n  frame: ", phase,
		       i, (unsigned long long)run.seed, policy);
		hex(frame, len);
		say("  program:   %s, reason %s\n", act < 0 ? strerror(-act) : xdp_name(act),
		       moved < 0 ? "(none or several)" : reason_names[moved]);
		say("  reference: %s, reason %s\n", xdp_name(v.xdp), reason_names[v.reason]);
		if (rb) {
			print_key("reference", &v.key);
			if (missing)
				say("  bucket passed/dropped: program has no such bucket, reference %u/%u\n",
				       rb->passed, rb->dropped);
			else
				say("  bucket passed/dropped: program %u/%u, reference %u/%u\n",
				       b.passed, b.dropped, rb->passed, rb->dropped);
		}
	}
	if (!found)
		say("replay: no single frame disagrees (the batch's disagreement did not recur)\n");
	fixture_close(&fx);
	ref_state_free(&st);
	free(rp);
	return found;
}

/* Every bucket of the program's table against the reference's. */
static int check_buckets(struct fixture *fx, const struct ref_state *st, __u32 phase)
{
	struct bucket_row *rows;
	size_t n, i;
	int bad = 0;

	if (read_buckets(&fx->m, &rows, &n))
		return 1;
	for (i = 0; i < n && bad < 5; i++) {
		const struct ref_bucket *rb = ref_bucket_find(st, &rows[i].key);

		if (rb && rb->passed == rows[i].b.passed && rb->dropped == rows[i].b.dropped)
			continue;
		say("MISMATCH phase %u: bucket not as the reference has it\n", phase);
		print_key("program", &rows[i].key);
		say("  passed/dropped: program %u/%u, reference %s%u/%u\n", rows[i].b.passed,
		       rows[i].b.dropped, rb ? "" : "(no such bucket) ", rb ? rb->passed : 0,
		       rb ? rb->dropped : 0);
		bad++;
	}
	if (!bad && n != st->n) {
		say("MISMATCH phase %u: %zu buckets in the program's table, %zu in the reference's\n",
		       phase, n, st->n);
		bad++;
	}
	free(rows);
	return bad;
}

/* Per-rule counters against the reference's. */
static int check_policy_counters(struct fixture *fx, const __u64 (*pred)[2], __u32 phase)
{
	struct sluice_policy_counter pc;
	__u32 idx;
	int bad = 0;

	for (idx = 0; idx < SLUICE_MAX_POLICIES && bad < 5; idx++) {
		if (read_policy_counter(&fx->m, idx, &pc))
			return 1;
		if (pc.pass_packets == pred[idx][0] && pc.drop_packets == pred[idx][1])
			continue;
		say("MISMATCH phase %u: policy %u pass/drop program %llu/%llu, reference %llu/%llu\n",
		       phase, idx, (unsigned long long)pc.pass_packets,
		       (unsigned long long)pc.drop_packets, (unsigned long long)pred[idx][0],
		       (unsigned long long)pred[idx][1]);
		bad++;
	}
	return bad;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Back to a fresh program's state without loading it again (the verifier
 * takes about a second): no buckets, no per-rule counts, no new-source
 * budget spent. The reason counters are read as deltas. */
static int reset_state(struct fixture *fx)
{
	static __u8 zeros[MAX_CPUS * sizeof(struct sluice_policy_counter)];
	struct sluice_config cfg;
	struct bucket_row *rows;
	__u32 zero = 0, idx;
	size_t n, i;

	if (read_buckets(&fx->m, &rows, &n))
		return -1;
	for (i = 0; i < n; i++)
		if (bpf_map_delete_elem(fx->m.src_buckets, &rows[i].key)) {
			free(rows);
			return -errno;
		}
	free(rows);
	for (idx = 0; idx < SLUICE_MAX_POLICIES; idx++)
		if (bpf_map_update_elem(fx->m.policy_counters, &idx, zeros, BPF_ANY))
			return -errno;
	if (new_sources_write(&fx->m, 0, 0, 0) ||
	    bpf_map_lookup_elem(fx->m.config, &zero, &cfg))
		return -1;
	cfg.new_tat = 0;
	return bpf_map_update_elem(fx->m.config, &zero, &cfg, BPF_ANY) ? -errno : 0;
}

/*
 * One phase: the program reset, a policy, `frames` frames run in batches,
 * each batch on the next CPU. Returns 0 while everything agrees, 1 on a
 * mismatch (printed, with the replay), -1 on an error.
 */
static int phase_run(struct fixture *fx, __u32 phase, __u64 frames, double deadline, __u64 *sent)
{
	static struct sluice_counter c0[MAX_CPUS * SLUICE_R_MAX], c1[MAX_CPUS * SLUICE_R_MAX];
	static __u64 pol_pred[SLUICE_MAX_POLICIES][2];
	struct rng r = rng_for(run.seed, phase, 0xc0ffeeULL);
	struct ref_policy *rp = calloc(1, sizeof(*rp));
	struct ref_state st = { 0 };
	__u64 pred[SLUICE_R_MAX][2], budget, taken0 = 0, taken = 0, phase_ran = 0;
	char policy[4096];
	__u8 frame[FRAME_MAX];
	__u32 i = 0, start, reason, ran;
	int cpu, bad = 0, ret = -1;

	gen_policy(&r, policy, sizeof(policy), &budget);
	if (run.verbose)
		say("phase %u: policy: %s%s\n", phase, policy, budget ? "; limit new-sources" : "");
	if (!rp || ref_state_init(&st, REF_CAP)) {
		free(rp);
		return -1;
	}
	if (reset_state(fx) || apply_policy(fx, policy, budget, rp) || fx->m.ncpus > MAX_CPUS ||
	    percpu_counters(fx, c0) || read_event(&fx->m, SLUICE_EV_NEW_SOURCE_ADMITTED, &taken0)) {
		fprintf(stderr, "fuzz_pkt: cannot set up phase %u\n", phase);
		goto out;
	}
	memset(pol_pred, 0, sizeof(pol_pred));
	while (phase_ran < frames && !bad) {
		int target = run.cpus[(phase + i / run.batch) % (unsigned int)run.ncpus];

		if (now_s() > deadline)
			break;
		if (pin_cpu(target)) {
			fprintf(stderr, "fuzz_pkt: cannot pin to CPU %d: %s\n", target, strerror(errno));
			goto out;
		}
		memset(pred, 0, sizeof(pred));
		ran = 0;
		for (start = i; phase_ran + ran < frames && i - start < run.batch; i++) {
			size_t len = gen_frame(run.seed, phase, i, frame);
			struct ref_verdict v;
			int act = test_run(fx->prog_fd, frame, len);

			if (len < ETH_HLEN) {
				/* The kernel runs no frame shorter than an
				 * Ethernet header (nor does a NIC deliver one). */
				if (act != -EINVAL) {
					say("MISMATCH phase %u frame %u: a %zu-byte frame was run: %d\n",
					       phase, i, len, act);
					bad = 1;
					i++;
					break;
				}
				run.refused++;
				continue;
			}
			ran++;
			ref_decide(rp, &st, frame, len, &v);
			run.reasons[v.reason]++;
			pred[v.reason][0]++;
			pred[v.reason][1] += len;
			if (v.policy >= 0)
				pol_pred[v.policy][sluice_reason_is_drop(v.reason)]++;
			if (act != v.xdp) {
				say("MISMATCH phase %u frame %u: action %s, reference %s (%s)\n",
				       phase, i, act < 0 ? strerror(-act) : xdp_name(act),
				       xdp_name(v.xdp), reason_names[v.reason]);
				bad = 1;
				i++;
				break;
			}
		}
		if (percpu_counters(fx, c1))
			goto out;
		for (reason = 0; reason < SLUICE_R_MAX && !bad; reason++) {
			__u64 pk = 0, by = 0;

			for (cpu = 0; cpu < fx->m.ncpus; cpu++) {
				pk += c1[cpu * SLUICE_R_MAX + reason].packets -
				      c0[cpu * SLUICE_R_MAX + reason].packets;
				by += c1[cpu * SLUICE_R_MAX + reason].bytes -
				      c0[cpu * SLUICE_R_MAX + reason].bytes;
			}
			if (pk != pred[reason][0] || by != pred[reason][1]) {
				say("MISMATCH phase %u frames %u..%u: %s counted %llu packets %llu bytes, reference %llu packets %llu bytes\n",
				       phase, start, i - 1, reason_names[reason], (unsigned long long)pk,
				       (unsigned long long)by, (unsigned long long)pred[reason][0],
				       (unsigned long long)pred[reason][1]);
				bad = 1;
			}
		}
		/* Conservation: each frame under exactly one reason, on the
		 * CPU it ran on. */
		for (cpu = 0; cpu < fx->m.ncpus && !bad; cpu++) {
			__u64 sum = 0;

			for (reason = 0; reason < SLUICE_R_MAX; reason++)
				sum += c1[cpu * SLUICE_R_MAX + reason].packets -
				       c0[cpu * SLUICE_R_MAX + reason].packets;
			if (sum != (cpu == target ? ran : 0)) {
				say("MISMATCH phase %u frames %u..%u: CPU %d counted %llu frames under its reasons, %u were run on CPU %d\n",
				       phase, start, i - 1, cpu, (unsigned long long)sum, ran, target);
				bad = 1;
			}
		}
		if (!bad)
			run.cpu_seen[target] = 1;
		memcpy(c0, c1, sizeof(struct sluice_counter) * SLUICE_R_MAX * (size_t)fx->m.ncpus);
		*sent += ran;
		phase_ran += ran;
	}
	if (!bad)
		bad = check_buckets(fx, &st, phase) || check_policy_counters(fx, (const __u64 (*)[2])pol_pred, phase);
	/* Every bucket taken is one new_source_admitted event. */
	if (!bad && (read_event(&fx->m, SLUICE_EV_NEW_SOURCE_ADMITTED, &taken) ||
		     taken - taken0 != st.n)) {
		say("MISMATCH phase %u: %llu new_source_admitted events, the reference took %zu buckets\n",
		    phase, (unsigned long long)(taken - taken0), st.n);
		bad = 1;
	}
	if (st.n > run.max_buckets)
		run.max_buckets = st.n;
	if (bad) {
		run.mismatches++;
		say("  policy: %s%s\n", policy, budget ? "; limit new-sources" : "");
		replay(phase, policy, budget, i ? i - 1 : 0);
	}
	ret = bad ? 1 : 0;
out:
	ref_state_free(&st);
	free(rp);
	return ret;
}

/* Phases until frames are sent, the deadline passes or a mismatch;
 * returns phase_run's verdict, *phases the phases begun. */
static int fuzz(__u64 frames, double deadline, __u64 *sent, __u32 *phases)
{
	struct fixture fx;
	__u32 phase;
	int r = 0;

	if (load(&fx))
		return -1;
	for (phase = 0; (!frames || *sent < frames) && now_s() < deadline; phase++) {
		__u64 left = frames ? frames - *sent : PHASE_FRAMES;

		r = phase_run(&fx, phase, left < PHASE_FRAMES ? left : PHASE_FRAMES, deadline, sent);
		if (r) {
			phase++;
			break;
		}
	}
	*phases = phase;
	fixture_close(&fx);
	return r;
}

/* --prove: the variant whose parser walks only 4 IPv6 extension headers
 * must be caught, quietly, before the real run; so a pass means the
 * checks can fail. Returns 0 when it was caught. */
static int prove_it(void)
{
	const char *variant = run.variant;
	__u64 sent = 0;
	__u32 phases;
	int r;

	run.variant = "short-ext";
	run.quiet = 1;
	r = fuzz(PHASE_FRAMES, now_s() + 60, &sent, &phases);
	run.quiet = 0;
	run.variant = variant;
	if (r != 1 || !run.mismatches) {
		printf("FAIL fuzz_pkt: the short-ext variant (4 IPv6 extension headers walked, not %d) went uncaught in %llu frames\n",
		       SLUICE_MAX_IPV6_EXT_HDRS, (unsigned long long)sent);
		return 1;
	}
	printf("fuzz_pkt: the short-ext variant was caught, first at phase %u frame %u\n",
	       run.caught_phase, run.caught_frame);
	memset(mk_count, 0, sizeof(mk_count));
	memset(run.reasons, 0, sizeof(run.reasons));
	memset(run.cpu_seen, 0, sizeof(run.cpu_seen));
	run.mismatches = run.refused = 0;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: fuzz_pkt [--seed N] [--frames N] [--seconds S] [--batch K]\n"
		"                [--variant real|short-ext] [--prove] [--verbose]\n"
		"Run generated and mutated frames through sluice's XDP program and a\n"
		"reference classifier; stop at the first disagreement (exit 1).\n"
		"Stops after N frames or S seconds, whichever comes first; given only\n"
		"one, the other is unbounded (default: 10000000 frames, 60 seconds;\n"
		"0 means no bound of that kind). --batch: frames per counter check\n"
		"(default 4096). The seed defaults to the time and is printed.\n"
		"--prove: first show that the short-ext variant (a parser walking too\n"
		"few IPv6 extension headers) is caught, else fail.\n");
}

static int parse_num(const char *opt, const char *s, __u64 max, __u64 *out)
{
	if (!parse_u64(s, 0, max, out)) {
		fprintf(stderr, "fuzz_pkt: %s wants a whole number from 0 to %llu, got '%s': see --help\n",
			opt, (unsigned long long)max, s);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "frames", required_argument, NULL, 'n' },
		{ "seconds", required_argument, NULL, 't' },
		{ "batch", required_argument, NULL, 'b' },
		{ "variant", required_argument, NULL, 'v' },
		{ "verbose", no_argument, NULL, 'V' },
		{ "prove", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	__u64 frames = 10000000, seconds = 60, batch, sent = 0, kinds = 0;
	int got_frames = 0, got_seconds = 0;
	double t0, deadline, took;
	cpu_set_t all;
	__u32 phase = 0;
	int prove = 0;
	int c, i, r = 0;
	char seen[MAX_CPUS * 4] = "";

	run.seed = (__u64)time(NULL);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			if (parse_num("--seed", optarg, ~0ULL, &run.seed))
				return 2;
			break;
		case 'n':
			if (parse_num("--frames", optarg, 1ULL << 48, &frames))
				return 2;
			got_frames = 1;
			break;
		case 't':
			if (parse_num("--seconds", optarg, 365ULL * 86400, &seconds))
				return 2;
			got_seconds = 1;
			break;
		case 'b':
			if (parse_num("--batch", optarg, PHASE_FRAMES, &batch))
				return 2;
			if (!batch) {
				fprintf(stderr, "fuzz_pkt: --batch must be at least 1: see --help\n");
				return 2;
			}
			run.batch = (__u32)batch;
			break;
		case 'v':
			if (strcmp(optarg, "real") && strcmp(optarg, "short-ext")) {
				fprintf(stderr, "fuzz_pkt: --variant is real or short-ext, got '%s': see --help\n",
					optarg);
				return 2;
			}
			run.variant = optarg;
			break;
		case 'V':
			run.verbose = 1;
			break;
		case 'p':
			prove = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "fuzz_pkt: unknown option or missing value: '%s': see --help\n",
				argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "fuzz_pkt: unexpected argument '%s': see --help\n", argv[optind]);
		return 2;
	}
	if (got_frames != got_seconds) {
		if (!got_frames)
			frames = 0;
		else
			seconds = 0;
	}
	if (!frames && !seconds) {
		fprintf(stderr, "fuzz_pkt: --frames 0 and --seconds 0 would never stop: bound one\n");
		return 2;
	}
	if (geteuid() != 0) {
		printf("fuzz_pkt: needs root for BPF_PROG_TEST_RUN\n");
		return 77;
	}
	if (sched_getaffinity(0, sizeof(all), &all)) {
		fprintf(stderr, "fuzz_pkt: cannot read the CPU affinity: %s\n", strerror(errno));
		return 1;
	}
	for (i = 0; i < MAX_CPUS && i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &all))
			run.cpus[run.ncpus++] = i;
	libbpf_set_print(NULL);
	printf("fuzz_pkt: seed %llu, variant %s\n", (unsigned long long)run.seed, run.variant);
	fflush(stdout);
	if (prove && prove_it())
		return 1;
	t0 = now_s();
	deadline = seconds ? t0 + (double)seconds : 1e300;
	r = fuzz(frames, deadline, &sent, &phase);
	took = now_s() - t0;
	for (i = 0; i < MK_MAX; i++)
		kinds += mk_count[i] != 0;
	for (i = 0; i < run.ncpus; i++)
		if (run.cpu_seen[run.cpus[i]])
			snprintf(seen + strlen(seen), sizeof(seen) - strlen(seen), "%s%d",
				 seen[0] ? "," : "", run.cpus[i]);
	if (run.verbose)
		for (i = 0; i < MK_MAX; i++)
			printf("  %-18s %llu\n", mk_names[i], (unsigned long long)mk_count[i]);
	printf("fuzz_pkt: by reason:");
	for (i = 0; i < SLUICE_R_MAX; i++)
		printf(" %s %llu", reason_names[i], (unsigned long long)run.reasons[i]);
	printf("\n");
	printf("fuzz_pkt: %llu shorter than an Ethernet header, refused by the kernel as they should be; at most %zu buckets in a phase (table of %u)\n",
	       (unsigned long long)run.refused, run.max_buckets, MAX_SOURCES);
	printf("fuzz_pkt: %llu frames in %u phases, %.1f s (%.0f frames/s), %llu mutation kinds, %llu mismatches, conservation %s on CPUs %s\n",
	       (unsigned long long)sent, phase, took, sent / (took > 0 ? took : 1),
	       (unsigned long long)kinds, (unsigned long long)run.mismatches,
	       r ? "checked up to the mismatch" : "held", seen[0] ? seen : "(none)");
	if (r < 0)
		return 1;
	return r ? 1 : 0;
}
