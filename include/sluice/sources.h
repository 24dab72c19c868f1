/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The source table's ABI: source keys, buckets and slots, the table's
 * seed and occupancy. Its arithmetic (hash, places, reclaim) is
 * sluice/srctab.h's. */
#ifndef SLUICE_ABI_SOURCES_H
#define SLUICE_ABI_SOURCES_H

#include <linux/types.h>
#include "sluice/addr.h"

/* The source table's occupancy, kept by the datapath as per-CPU deltas
 * (struct src_stats: each CPU adds +1 and -1, the sum is the count), so
 * status and a scrape read it without walking the table. */
enum sluice_src_stat {
	SLUICE_SRC_STAT_LIVE = 0,		/* slots held (home and keyed) */
	SLUICE_SRC_STAT_ESTABLISHED = 1,	/* ... by established sources */
	SLUICE_SRC_STAT_KEYED = 2,		/* ... by keyed buckets */
	SLUICE_SRC_STAT_MAX,
};

/* Key of the source table. The family is part of the key: an IPv6 packet
 * from ::ffff:a.b.c.d is an IPv6 source, judged by IPv6 rules, and never
 * shares the bucket of IPv4 source a.b.c.d. */
/*
 * A source's home bucket is keyed by its whole address, key_len 128 and
 * policy SLUICE_KEY_HOME; it serves the source while every packet of it is
 * decided by one per-source rule (the bucket's bound word has
 * SLUICE_BOUND_DIRECT). Otherwise (--per /LEN, --per rule, or rules that
 * match on L4 so the source's packets go to more than one rule) a bucket is
 * keyed by the source masked to the rule's key length and the rule's
 * policy index.
 */
struct sluice_src_key {
	__u8 a[SLUICE_ADDR_LEN];	/* source address, masked to key_len */
	__u8 family;		/* SLUICE_FAMILY_V4 or SLUICE_FAMILY_V6 */
	__u8 key_len;		/* bits of a kept, in the 128-bit form */
	__u16 policy;		/* SLUICE_KEY_HOME, or the rule's policy index */
};
#define SLUICE_KEY_HOME			0xffffU
#define SLUICE_KEY_LEN_SOURCE		128U

/*
 * The only entry of the src_seed map: the seed of the source table's hash
 * (include/sluice/srctab.h), drawn at random (getrandom) whenever the
 * table is made anew and kept with it across a re-attach, since it places
 * its entries. A map of its own, pinned root's and mode 0600: whoever
 * knows the seed can aim a few addresses at one source's two buckets and
 * lock it out, so not even the pins' group may read it (the config map is
 * theirs to read).
 */
struct sluice_src_seed {
	__u64 seed;
};

/*
 * Per-bucket state. tat is the algorithm's state word, changed only by CAS.
 * bound names the policy the bucket is judged by, in one word written at
 * once: the low 32 bits of the generation and the policy index, plus a
 * pending bit while the CPU that re-binds it converts tat to the new
 * policy (tokens carried over), and for a home bucket the direct bit while
 * it serves its source. A ban is kept in tat: a banned bucket's TAT lies
 * more than its tolerance ahead of now. The source table's slots (struct
 * sluice_slot), home and keyed, begin with the same two words; userspace
 * reads a slot and its counts as this struct.
 */
struct sluice_bucket {
	__u64 tat;		/* the algorithm's state word: a token bucket's
				 * theoretical arrival time (GCRA units), or a
				 * window's counts (window.h) */
	__u64 bound;		/* SLUICE_BOUND(gen, policy) [| _DIRECT] [| _PENDING] */
	__u32 passed;		/* packets, atomically added, up to
				 * SLUICE_SRC_COUNT_MAX */
	__u32 dropped;
	__u32 would_drop;	/* passed, but dropped but for a --monitor
				 * rule: counted apart, so a rule that changes
				 * mode relabels no earlier packet */
};
/* Where a bucket's passed and dropped stop counting (about 4.3e9): below
 * 2^32 by more than any number of CPUs that add at once, so they never
 * wrap. */
#define SLUICE_SRC_COUNT_MAX		(0xffffffffU - 4096U)
#define SLUICE_BOUND_IDX_MASK		0xffffULL
#define SLUICE_BOUND_PENDING		0x10000ULL
#define SLUICE_BOUND_DIRECT		0x20000ULL
#define SLUICE_BOUND_GEN_SHIFT		32
#define SLUICE_BOUND(gen, idx)		(((__u64)(__u32)(gen) << SLUICE_BOUND_GEN_SHIFT) | (idx))
/* The generation's low 32 bits; SLUICE_BOUND_GEN_IS compares them with a
 * generation, SLUICE_BOUND_GEN_FULL widens them again given the current
 * one (a bucket is never 2^32 commits behind: 136 years at one a second). */
#define SLUICE_BOUND_GEN(w)		((__u32)((w) >> SLUICE_BOUND_GEN_SHIFT))
#define SLUICE_BOUND_GEN_IS(w, gen)	(SLUICE_BOUND_GEN(w) == (__u32)(gen))
#define SLUICE_BOUND_GEN_FULL(w, gen)	((gen) - (__u32)((__u32)(gen) - SLUICE_BOUND_GEN(w)))
#define SLUICE_BOUND_IDX(w)		((__u32)((w) & SLUICE_BOUND_IDX_MASK))

/*
 * The source table: every bucket, home (a source judged by a per-source
 * rule) or keyed (SLUICE_SLOT_KEYED), in an open-addressing table that the XDP program manages inside
 * an mmapable array (include/sluice/srctab.h has the hash and the rules;
 * doc/design.md the protocol). A slot is 32 bytes; its ctl word is the
 * bucket's bound word with the slot's state, the address's family and a
 * version in bits that a bound word leaves clear (SLUICE_SLOT_*), so one
 * CAS changes both and a reader that re-reads ctl knows the slot is still
 * its source's. Buckets of SLUICE_SLOTS_PER_BUCKET slots, 128 bytes: two
 * cache lines, page-aligned by the mmapable array.
 */
struct sluice_slot {
	__u64 tat;		/* as struct sluice_bucket's */
	__u64 ctl;		/* a bound word | SLUICE_SLOT_* */
	__u8 a[SLUICE_ADDR_LEN];	/* the source address (IPv4 mapped) */
};
#define SLUICE_SLOTS_PER_BUCKET		4U
struct sluice_slot_bucket {
	struct sluice_slot s[SLUICE_SLOTS_PER_BUCKET];
};
/* Each slot's passed, dropped and would-drop (a --monitor rule's) counts,
 * beside the table (one entry per bucket): zeroed when a source claims the
 * slot. */
struct sluice_slot_count {
	__u32 passed;
	__u32 dropped;
	__u32 would_drop;
};
struct sluice_slot_counts {
	struct sluice_slot_count c[SLUICE_SLOTS_PER_BUCKET];
};
_Static_assert(__builtin_offsetof(struct sluice_slot, tat) ==
	       __builtin_offsetof(struct sluice_bucket, tat), "a slot is judged as a bucket");
_Static_assert(__builtin_offsetof(struct sluice_slot, ctl) ==
	       __builtin_offsetof(struct sluice_bucket, bound), "a slot is judged as a bucket");
_Static_assert(sizeof(struct sluice_slot_bucket) == 128, "a bucket is two cache lines");

/* The slot bits of ctl, clear in every other bound word. */
#define SLUICE_SLOT_STATE_MASK		(3ULL << 18)
#define SLUICE_SLOT_EMPTY		0ULL		/* never claimed */
#define SLUICE_SLOT_CLAIMING		(1ULL << 18)	/* being written: skip */
#define SLUICE_SLOT_LIVE		(2ULL << 18)	/* a source's */
#define SLUICE_SLOT_V6			(1ULL << 20)	/* family: IPv6 */
/* The slot's source is established (bpf/judge.h: it came back after an
 * emission interval): set once by CAS, kept by every other write of ctl,
 * cleared by the next claim. Not a slot bit of SLUICE_SLOT_ID_MASK: it
 * changes while the slot stays its source's. */
#define SLUICE_SLOT_ESTABLISHED		(1ULL << 21)
/* A keyed bucket's slot (struct sluice_src_key with a policy, not
 * SLUICE_KEY_HOME): its key's policy is the slot's bound index, and its
 * address is the key's masked address with a sentinel bit just past the
 * mask (bit key_len of the 128-bit form), which tells the key length;
 * a key of the whole address (key_len 128) has no room for one and has
 * SLUICE_SLOT_KEY_FULL instead. */
#define SLUICE_SLOT_KEYED		(1ULL << 22)
#define SLUICE_SLOT_KEY_FULL		(1ULL << 23)
#define SLUICE_SLOT_KEY_MASK		(SLUICE_SLOT_KEYED | SLUICE_SLOT_KEY_FULL)
#define SLUICE_SLOT_VER_ONE		(1ULL << 24)	/* the version, bumped at */
#define SLUICE_SLOT_VER_MASK		(0xffULL << 24)	/* each claim */
#define SLUICE_SLOT_ID_MASK		(SLUICE_SLOT_STATE_MASK | SLUICE_SLOT_V6 | \
					 SLUICE_SLOT_KEY_MASK | SLUICE_SLOT_VER_MASK)
/* What a re-bind of a slot keeps of its ctl: its slot bits and its class. */
#define SLUICE_SLOT_KEEP_MASK		(SLUICE_SLOT_ID_MASK | SLUICE_SLOT_ESTABLISHED)

#endif /* SLUICE_ABI_SOURCES_H */
