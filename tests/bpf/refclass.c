// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The packet fuzzer's reference classifier: written from doc/rules.rst and doc/design.md
 * ("stats" reasons, "How it works", "Rules, keys and buckets", "Known
 * limits": malformed frames), doc/rules.rst, doc/design.md and RFC 791 / RFC 8200 / IEEE
 * 802.1Q, not from bpf/parse.h. Offsets are plain byte arithmetic on the
 * frame; nothing is cast to a header struct. */
#include <stdlib.h>
#include <string.h>
#include <linux/bpf.h>
#include "refclass.h"

/* EtherTypes (IEEE 802), IP protocol numbers (IANA). */
#define ET_IPV4		0x0800
#define ET_IPV6		0x86dd
#define ET_CTAG		0x8100	/* 802.1Q */
#define ET_STAG		0x88a8	/* 802.1ad */
#define PR_HOPOPT	0
#define PR_TCP		6
#define PR_UDP		17
#define PR_ROUTING	43
#define PR_FRAGMENT	44
#define PR_AH		51
#define PR_DSTOPTS	60
#define PR_MOBILITY	135

static unsigned int be16(const __u8 *p)
{
	return (unsigned int)p[0] << 8 | p[1];
}

/* The IPv6 extension headers sluice walks (doc/rules.rst: "up to 8 extension
 * headers walked"): those of RFC 8200 4.1 that carry a Next Header field
 * in their first octet, plus AH (RFC 4302) and Mobility (RFC 6275). */
static int v6_ext(unsigned int nh)
{
	return nh == PR_HOPOPT || nh == PR_ROUTING || nh == PR_FRAGMENT || nh == PR_DSTOPTS ||
	       nh == PR_AH || nh == PR_MOBILITY;
}

/* L4 facts at off of protocol proto: a port (and SYN) only for a first
 * fragment with the whole TCP (20 octets) or UDP (8) header present in the
 * frame and within the IP packet, which ends at ip_end (doc/rules.rst, "Rules,
 * keys and buckets": IPv4 Total Length, IPv6 40 + Payload Length, a
 * jumbogram's Payload Length of 0 sets no end); a first fragment cut
 * inside it is malformed. */
static void l4_facts(const __u8 *p, size_t len, size_t off, size_t ip_end, unsigned int proto,
		     int first, struct ref_frame *f)
{
	f->l4_known = 1;
	f->proto = (__u8)proto;
	if (!first || (proto != PR_TCP && proto != PR_UDP))
		return;
	if (off + (proto == PR_TCP ? 20 : 8) > len || off + (proto == PR_TCP ? 20 : 8) > ip_end) {
		f->parse = REF_BROKEN;
		return;
	}
	f->has_port = 1;
	f->dport = (__u16)be16(p + off + 2);
	/* TCP flags octet 13: SYN 0x02, ACK 0x10 (RFC 9293). */
	if (proto == PR_TCP)
		f->syn = (p[off + 13] & 0x02) && !(p[off + 13] & 0x10);
}

static void parse_v4(const __u8 *p, size_t len, size_t off, struct ref_frame *f)
{
	unsigned int ver, hlen;

	if (off + 20 > len) {
		f->parse = REF_NO_SOURCE;
		return;
	}
	f->family = SLUICE_FAMILY_V4;
	f->addr[10] = 0xff;
	f->addr[11] = 0xff;
	memcpy(f->addr + 12, p + off + 12, 4);
	ver = p[off] >> 4;
	hlen = (p[off] & 0xf) * 4u;
	/* A bad version or IHL, a header past the frame or a total length
	 * shorter than the header: the source pays, the rest is broken. */
	if (ver != 4 || hlen < 20 || off + hlen > len || be16(p + off + 2) < hlen) {
		f->parse = REF_BROKEN;
		return;
	}
	f->parse = REF_OK;
	/* Fragment offset: the low 13 bits of octets 6-7, MF 0x2000 (RFC 791). */
	l4_facts(p, len, off + hlen, off + be16(p + off + 2), p[off + 9],
		 (be16(p + off + 6) & 0x1fff) == 0, f);
	f->later_frag = (be16(p + off + 6) & 0x1fff) != 0;
	f->first_frag = !f->later_frag && (be16(p + off + 6) & 0x2000);
	/* The datagram: source, destination, Identification, Protocol. */
	f->fk.family = SLUICE_FAMILY_V4;
	f->fk.proto = p[off + 9];
	memcpy(f->fk.src, f->addr, sizeof(f->fk.src));
	memcpy(f->fk.dst, p + off + 16, 4);
	f->fk.id = be16(p + off + 4);
}

/* The fragment header at off names the datagram of an IPv6 fragment:
 * source, destination and its Identification (RFC 8200 4.5), never its
 * Next Header. */
static void v6_frag_key(const __u8 *p, size_t ip, size_t off, struct ref_frame *f)
{
	f->fk.family = SLUICE_FAMILY_V6;
	memcpy(f->fk.src, f->addr, sizeof(f->fk.src));
	memcpy(f->fk.dst, p + ip + 24, sizeof(f->fk.dst));
	f->fk.id = (__u32)be16(p + off + 4) << 16 | be16(p + off + 6);
}

static void parse_v6(const __u8 *p, size_t len, size_t off, struct ref_frame *f)
{
	unsigned int nh, walked, hlen;
	size_t ip_end, ip = off;

	if (off + 40 > len) {
		f->parse = REF_NO_SOURCE;
		return;
	}
	f->family = SLUICE_FAMILY_V6;
	memcpy(f->addr, p + off + 8, 16);
	if (p[off] >> 4 != 6) {
		f->parse = REF_BROKEN;
		return;
	}
	nh = p[off + 6];
	ip_end = be16(p + off + 4) ? off + 40 + be16(p + off + 4) : (size_t)-1;
	off += 40;
	for (walked = 0; v6_ext(nh); walked++) {
		/* More than SLUICE_MAX_IPV6_EXT_HDRS is malformed. */
		if (walked == SLUICE_MAX_IPV6_EXT_HDRS) {
			f->parse = REF_BROKEN;
			return;
		}
		if (nh == PR_FRAGMENT) {
			/* RFC 8200 4.5: always 8 octets; offset in the top 13
			 * bits of octets 2-3. */
			hlen = 8;
			/* A later fragment (RFC 8200 4.5): the rest is
			 * payload, its Next Header is not the datagram's. */
			if (off + 8 <= len && (be16(p + off + 2) & 0xfff8)) {
				f->parse = REF_OK;
				f->later_frag = 1;
				f->first_frag = 0;	/* whatever a header before said */
				v6_frag_key(p, ip, off, f);
				return;
			}
			/* Offset 0 with M: a first fragment; the last such
			 * header walked names the datagram. */
			if (off + 8 <= len && (be16(p + off + 2) & 1)) {
				f->first_frag = 1;
				v6_frag_key(p, ip, off, f);
			}
		} else if (nh == PR_AH) {
			/* RFC 4302: Payload Len in 4-octet units, minus 2. */
			hlen = off + 2 <= len ? (p[off + 1] + 2u) * 4 : 0;
		} else {
			/* Hdr Ext Len in 8-octet units, not counting the first. */
			hlen = off + 2 <= len ? (p[off + 1] + 1u) * 8 : 0;
		}
		if (off + 2 > len || off + hlen > len) {
			f->parse = REF_BROKEN;
			return;
		}
		nh = p[off];
		off += hlen;
	}
	f->parse = REF_OK;
	l4_facts(p, len, off, ip_end, nh, 1, f);
}

void ref_parse_frame(const __u8 *p, size_t len, struct ref_frame *f)
{
	unsigned int et, tags = 0;
	size_t off = 14;

	memset(f, 0, sizeof(*f));
	if (len < 14) {
		f->parse = REF_NO_SOURCE;
		return;
	}
	et = be16(p + 12);
	/* Up to SLUICE_MAX_VLAN_TAGS tags are looked through (doc/rules.rst,
	 * "VLAN tags"); a frame still tagged after them is dropped unread. */
	while (et == ET_CTAG || et == ET_STAG) {
		if (tags == SLUICE_MAX_VLAN_TAGS) {
			f->parse = REF_VLAN_DEEP;
			return;
		}
		if (off + 4 > len) {
			f->parse = REF_NO_SOURCE;
			return;
		}
		et = be16(p + off + 2);
		off += 4;
		tags++;
	}
	if (et == ET_IPV4)
		parse_v4(p, len, off, f);
	else if (et == ET_IPV6)
		parse_v6(p, len, off, f);
	else
		f->parse = REF_NON_IP;
}

/* Whether rule r's CIDR covers the frame's source (same family). */
static int covers(const struct ref_rule *r, const struct ref_frame *f)
{
	__u32 bit;

	if (r->family != f->family)
		return 0;
	for (bit = 0; bit < r->prefixlen; bit++) {
		__u8 m = (__u8)(0x80 >> (bit % 8));

		if ((r->addr[bit / 8] ^ f->addr[bit / 8]) & m)
			return 0;
	}
	return 1;
}

static int match_holds(const struct ref_rule *r, const struct ref_frame *f)
{
	if ((r->mflags & SLUICE_MATCH_PROTO) && (!f->l4_known || f->proto != r->proto))
		return 0;
	if ((r->mflags & SLUICE_MATCH_PORT) && (!f->has_port || f->dport < r->lo || f->dport > r->hi))
		return 0;
	if ((r->mflags & SLUICE_MATCH_SYN) && !f->syn)
		return 0;
	return 1;
}

/* Whether rule r matches a later fragment without its first's facts: 1
 * yes, 0 no, -1 cannot be told (it matches on a port or SYN, or on a
 * protocol an IPv6 later fragment does not say). */
static int orphan_holds(const struct ref_rule *r, const struct ref_frame *f)
{
	if (!r->mflags)
		return 1;
	if (!(r->mflags & SLUICE_MATCH_PROTO) || !f->l4_known)
		return -1;
	if (f->proto != r->proto)
		return 0;
	return (r->mflags & (SLUICE_MATCH_PORT | SLUICE_MATCH_SYN)) ? -1 : 1;
}

/* doc/rules.rst, "Rules, keys and buckets": the longer prefix first; at one
 * prefix a port match, then a protocol match, then none; then SYN before
 * none, the narrower port range, the lower port, the lower protocol.
 * Negative when a goes first. */
static int level(const struct ref_rule *r)
{
	if (r->mflags & SLUICE_MATCH_PORT)
		return 2;
	return (r->mflags & SLUICE_MATCH_PROTO) ? 1 : 0;
}

static int precedes(const struct ref_rule *a, const struct ref_rule *b)
{
	if (a->prefixlen != b->prefixlen)
		return a->prefixlen > b->prefixlen;
	if (level(a) != level(b))
		return level(a) > level(b);
	if ((a->mflags ^ b->mflags) & SLUICE_MATCH_SYN)
		return (a->mflags & SLUICE_MATCH_SYN) != 0;
	if (a->hi - a->lo != b->hi - b->lo)
		return a->hi - a->lo < b->hi - b->lo;
	if (a->lo != b->lo)
		return a->lo < b->lo;
	return a->proto < b->proto;
}

/* The rule that decides f, and whether the choice is independent of L4
 * (the source's most specific covering rule has no match), so that all
 * of the source's packets go to one rule. */
static const struct ref_rule *decide_rule(const struct ref_policy *pol, const struct ref_frame *f,
					  int *direct, const struct ref_rule **lead, int *orphan)
{
	const struct ref_rule *cand[REF_MAX_RULES];
	unsigned int n = 0, i, j;

	for (i = 0; i < pol->n; i++)
		if (covers(&pol->rules[i], f))
			cand[n++] = &pol->rules[i];
	/* Insertion sort by precedence. */
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && precedes(cand[j], cand[j - 1]); j--) {
			const struct ref_rule *t = cand[j];

			cand[j] = cand[j - 1];
			cand[j - 1] = t;
		}
	*direct = n == 0 || cand[0]->mflags == 0;
	*lead = n ? cand[0] : &pol->def;
	*orphan = 0;
	/* doc/rules.rst, "Fragments": a later fragment whose first was not
	 * seen has no port or SYN, nor an IPv6 protocol; the first candidate
	 * that might match on what it lacks makes it an orphan. */
	for (i = 0; i < n; i++) {
		int h = f->later_frag ? orphan_holds(cand[i], f) : match_holds(cand[i], f);

		if (!h)
			continue;
		*orphan = h < 0;
		return cand[i];
	}
	return &pol->def;
}

static size_t key_hash(const struct sluice_src_key *k)
{
	const __u8 *b = (const __u8 *)k;
	size_t h = 1469598103934665603ULL, i;

	for (i = 0; i < sizeof(*k); i++)
		h = (h ^ b[i]) * 1099511628211ULL;
	return h;
}

int ref_state_init(struct ref_state *s, size_t cap)
{
	s->cap = cap;
	s->n = 0;
	s->new_taken = 0;
	s->nfrags = 0;
	s->tab = calloc(cap, sizeof(*s->tab));
	s->frags = calloc(cap, sizeof(*s->frags));
	return s->tab && s->frags ? 0 : -1;
}

void ref_state_free(struct ref_state *s)
{
	free(s->tab);
	free(s->frags);
	s->tab = NULL;
	s->frags = NULL;
}

static struct ref_frag *frag_of(const struct ref_state *s, const struct ref_frag_key *k)
{
	const __u8 *b = (const __u8 *)k;
	size_t h = 1469598103934665603ULL, i;

	for (i = 0; i < sizeof(*k); i++)
		h = (h ^ b[i]) * 1099511628211ULL;
	for (i = h & (s->cap - 1);
	     s->frags[i].used && memcmp(&s->frags[i].key, k, sizeof(*k)) != 0;)
		i = (i + 1) & (s->cap - 1);
	return &s->frags[i];
}

/* doc/rules.rst, "Fragments": a first fragment's facts kept, a later
 * one's taken from its first when that was seen. */
static void frag_track(struct ref_state *s, struct ref_frame *f)
{
	struct ref_frag *r;

	if (f->parse != REF_OK || !(f->first_frag || f->later_frag))
		return;
	r = frag_of(s, &f->fk);
	if (f->first_frag) {
		if (!r->used && 2 * (++s->nfrags) > s->cap)
			abort();	/* the caller sizes the table */
		memcpy(&r->key, &f->fk, sizeof(r->key));
		r->used = 1;
		r->proto = f->proto;
		r->has_port = (__u8)f->has_port;
		r->dport = f->has_port ? f->dport : 0;
		r->syn = (__u8)f->syn;
		return;
	}
	if (!r->used)
		return;
	f->later_frag = 0;
	f->l4_known = 1;
	f->proto = r->proto;
	f->has_port = r->has_port;
	f->dport = r->dport;
	f->syn = r->syn;
}

static struct ref_bucket *slot_of(const struct ref_state *s, const struct sluice_src_key *key)
{
	size_t i = key_hash(key) & (s->cap - 1);

	while (s->tab[i].used && memcmp(&s->tab[i].key, key, sizeof(*key)) != 0)
		i = (i + 1) & (s->cap - 1);
	return &s->tab[i];
}

const struct ref_bucket *ref_bucket_find(const struct ref_state *s, const struct sluice_src_key *key)
{
	const struct ref_bucket *b = slot_of(s, key);

	return b->used ? b : NULL;
}

static __u32 finish(struct ref_verdict *v, __u32 reason)
{
	v->reason = reason;
	v->xdp = sluice_reason_is_drop(reason) ? XDP_DROP : XDP_PASS;
	return reason;
}

/* A limit rule r's verdict on frame f (len bytes): its bucket taken (within
 * the new-source budget), charged, banned; v gets the key. */
static __u32 judge_limit(const struct ref_policy *pol, struct ref_state *s,
			 const struct ref_rule *r, const struct ref_frame *f, int direct,
			 size_t len, struct ref_verdict *v)
{
	struct ref_bucket *b;
	__u64 cost;
	__u32 reason, bit;

	/* The home bucket (whole address) when one per-source rule
	 * takes all of the source's packets; else keyed by the
	 * source masked to the rule's key length and its index. */
	memset(&v->key, 0, sizeof(v->key));
	memcpy(v->key.a, f->addr, sizeof(f->addr));
	v->key.family = f->family;
	if (direct && r->key_len >= SLUICE_KEY_LEN_SOURCE) {
		v->key.key_len = SLUICE_KEY_LEN_SOURCE;
		v->key.policy = SLUICE_KEY_HOME;
	} else {
		for (bit = r->key_len; bit < 8 * SLUICE_ADDR_LEN; bit++)
			v->key.a[bit / 8] &= (__u8)~(0x80 >> (bit % 8));
		v->key.key_len = (__u8)r->key_len;
		v->key.policy = r->index;
	}
	b = slot_of(s, &v->key);
	if (!b->used && pol->new_sources && s->new_taken >= pol->new_sources) {
		/* Over the new-source budget: no entry taken. */
		reason = SLUICE_R_NEW_SOURCE_LIMITED;
		goto judged;
	}
	if (!b->used) {
		if (pol->new_sources)
			s->new_taken++;
		if (2 * (s->n + 1) > s->cap)
			abort();	/* the caller sizes the table */
		b->used = 1;
		b->key = v->key;
		s->n++;
	}
	v->bucketed = 1;
	/* No token refills within a run: admitted while the units
	 * admitted plus this frame's stay within the burst. */
	cost = r->bytes ? len : 1;
	if (b->banned) {
		reason = SLUICE_R_BANNED;
	} else if (b->spent + cost <= r->burst) {
		b->spent += cost;
		reason = SLUICE_R_WITHIN_LIMIT;
	} else {
		reason = SLUICE_R_RATE_LIMITED;
		b->banned = r->ban;
	}
judged:
	if (r->monitor && sluice_reason_is_drop(reason))
		reason = SLUICE_R_MONITORED;
	if (v->bucketed) {
		/* A --monitor rule's would-drop has a count of its own. */
		if (sluice_reason_is_drop(reason))
			b->dropped++;
		else if (reason == SLUICE_R_MONITORED)
			b->would_drop++;
		else
			b->passed++;
	}
	return reason;
}

void ref_decide(const struct ref_policy *pol, struct ref_state *s, const __u8 *p, size_t len,
		struct ref_verdict *v)
{
	const struct ref_rule *r, *lead;
	struct ref_frame f;
	__u32 reason;
	int direct, orphan;

	memset(v, 0, sizeof(*v));
	v->policy = -1;
	/* Headers are read from the first buffer only: past it, a
	 * multi-buffer frame's bytes are counted, never parsed. */
	ref_parse_frame(p, pol->linear && len > pol->linear ? pol->linear : len, &f);
	if (f.parse == REF_NO_SOURCE) {
		finish(v, SLUICE_R_MALFORMED);
		return;
	}
	if (f.parse == REF_NON_IP) {
		finish(v, SLUICE_R_NON_IP);
		return;
	}
	if (f.parse == REF_VLAN_DEEP) {
		finish(v, SLUICE_R_VLAN_TOO_DEEP);
		return;
	}
	frag_track(s, &f);
	r = decide_rule(pol, &f, &direct, &lead, &orphan);
	v->policy = r->index;
	if (f.parse == REF_BROKEN && !direct) {
		/* doc/metrics.md: l4_unreadable. Broken where a rule that
		 * matches on protocol, port or SYN covers the source: dropped,
		 * counted on the most specific such rule. */
		v->policy = lead->index;
		reason = SLUICE_R_L4_UNREADABLE;
	} else if (orphan) {
		/* doc/metrics.md: frag_orphan, counted on that rule. */
		reason = SLUICE_R_FRAG_ORPHAN;
	} else if (r->action == SLUICE_ACT_ALLOW) {
		reason = SLUICE_R_ALLOWED;
	} else if (r->action == SLUICE_ACT_DENY) {
		reason = SLUICE_R_DENIED;
	} else {
		reason = judge_limit(pol, s, r, &f, direct, len, v);
	}
	/* A broken frame that passes is counted malformed: the stack decides. */
	if (f.parse == REF_BROKEN && !sluice_reason_is_drop(reason))
		reason = SLUICE_R_MALFORMED;
	finish(v, reason);
}
