/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A userspace reference classifier for the packet fuzzer: what sluice's
 * doc/rules.rst and doc/design.md say a frame's reason, source and bucket are, written
 * from them and the protocols' RFCs; it shares only include/sluice/ with
 * the XDP program. */
#ifndef SLUICE_TEST_REFCLASS_H
#define SLUICE_TEST_REFCLASS_H

#include <stddef.h>
#include <linux/types.h>
#include "sluice/sluice.h"

/* What the frame's headers say, before any rule. */
enum ref_parse {
	REF_OK,			/* an IP packet with a source and well-formed headers */
	REF_NON_IP,		/* not IPv4/IPv6 */
	REF_VLAN_DEEP,		/* more VLAN tags than SLUICE_MAX_VLAN_TAGS */
	REF_NO_SOURCE,		/* too short to name a source: passes unlimited */
	REF_BROKEN,		/* source readable, the rest malformed */
};

struct ref_frame {
	enum ref_parse parse;
	__u8 family;		/* SLUICE_FAMILY_V4 / _V6 when a source is known */
	__u8 addr[SLUICE_ADDR_LEN];	/* IPv4 as ::ffff:a.b.c.d */
	int l4_known;		/* the L4 protocol was reached */
	__u8 proto;
	int has_port;		/* first fragment with a whole TCP/UDP header */
	__u16 dport;
	int syn;		/* TCP, SYN without ACK */
	int later_frag;		/* fragment offset != 0: no L4 facts of its own */
	int first_frag;		/* offset 0 with more to come: its facts are kept */
	struct ref_frag_key {	/* a fragment's datagram, as the stack reassembles */
		__u8 family, proto;	/* proto: IPv4's, 0 for IPv6 */
		__u8 src[SLUICE_ADDR_LEN], dst[SLUICE_ADDR_LEN];
		__u8 pad[2];	/* zero: keys are hashed and compared whole */
		__u32 id;
	} fk;
};

/* Read a frame as doc/design.md's data flow describes. */
void ref_parse_frame(const __u8 *p, size_t len, struct ref_frame *f);

/* One rule as the reference sees it. */
struct ref_rule {
	__u8 family;		/* 0 for the default */
	__u8 addr[SLUICE_ADDR_LEN];
	__u32 prefixlen;	/* in the 128-bit form (IPv4: 96 + len) */
	__u8 mflags;		/* SLUICE_MATCH_* */
	__u8 proto;
	__u16 lo, hi;
	__u32 action;		/* enum sluice_action */
	__u32 key_len;		/* bits of the source a bucket keeps */
	int bytes;		/* --bytes: a frame costs its length */
	__u64 burst;		/* units; the rate is so slow no token refills */
	int ban;		/* --ban: banned once rate limited */
	int monitor;
	__u16 index;		/* the policy table index the CLI gave it */
};

#define REF_MAX_RULES	64
struct ref_policy {
	struct ref_rule def;
	struct ref_rule rules[REF_MAX_RULES];
	unsigned int n;
	__u64 new_sources;	/* budget of new buckets, 0: off */
	size_t linear;		/* bytes of a frame in its first buffer, where
				 * the program reads headers; 0: all of it */
};

/* One bucket the reference expects in the source table. */
struct ref_bucket {
	struct sluice_src_key key;
	__u64 spent;		/* units admitted */
	int banned;
	__u32 passed, dropped, would_drop;
	int used;
};

/* A first fragment's L4 facts, kept for its later ones (doc/rules.rst,
 * "Fragments"); the caller sizes the program's table so that none is
 * forgotten within a phase. */
struct ref_frag {
	struct ref_frag_key key;
	__u8 proto, syn, has_port;
	__u16 dport;
	int used;
};

struct ref_state {
	struct ref_bucket *tab;	/* open addressing, cap a power of two */
	size_t cap, n;
	__u64 new_taken;	/* buckets the new-source budget let in */
	struct ref_frag *frags;	/* open addressing, cap entries */
	size_t nfrags;
};

/* The decision for one frame. */
struct ref_verdict {
	__u32 reason;		/* enum sluice_reason */
	int xdp;		/* XDP_PASS or XDP_DROP */
	int policy;		/* deciding policy index, -1 when none counts */
	int bucketed;		/* key names the bucket that judged it */
	struct sluice_src_key key;
};

int ref_state_init(struct ref_state *s, size_t cap);
void ref_state_free(struct ref_state *s);
/* Decide frame (p, len) under pol, updating s. */
void ref_decide(const struct ref_policy *pol, struct ref_state *s, const __u8 *p, size_t len,
		struct ref_verdict *v);
/* The bucket at key, or NULL. */
const struct ref_bucket *ref_bucket_find(const struct ref_state *s, const struct sluice_src_key *key);

#endif /* SLUICE_TEST_REFCLASS_H */
