/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The pinned-map ABI shared by the XDP program and userspace: map keys and
 * values, counter layouts, and the enums and flags stored in them. */
#ifndef SLUICE_ABI_H
#define SLUICE_ABI_H

#include <linux/types.h>
#include "sluice/bounds.h"

/* Policies: slot 0 of each generation is the default, 1.. are CIDR rules. */
#define SLUICE_MAX_POLICIES		1024U
#define SLUICE_POLICY_DEFAULT		0U
#define SLUICE_POLICY_SLOTS		2U	/* double-buffered, flipped atomically */

/* Address family of a source key, IPv4 is stored IPv4-mapped (::ffff:a.b.c.d). */
#define SLUICE_ADDR_LEN			16
#define SLUICE_V4_MAPPED_PREFIX		96

/* Zero is allow, so a zeroed (not yet written) policy never limits. */
enum sluice_action {
	SLUICE_ACT_ALLOW = 0,
	SLUICE_ACT_LIMIT = 1,
	SLUICE_ACT_DENY = 2,
	SLUICE_ACT_MAX,
};

/* Events counted beside the reasons (per CPU): what happened to the source
 * table, not to a packet. */
enum sluice_event {
	SLUICE_EV_NEW_SOURCE_ADMITTED = 0,	/* a new entry was taken */
	SLUICE_EV_SOURCE_RECLAIMED = 1,		/* ... by reclaiming an idle source's slot */
	SLUICE_EV_SOURCE_REFUSED = 2,		/* a new source found both its buckets
						 * full of sources in debt: dropped */
	SLUICE_EV_SOURCE_ESTABLISHED = 3,	/* a slot's source became established */
	SLUICE_EV_ESTABLISHED_RECLAIMED = 4,	/* an established source's slot was
						 * reclaimed (idle past its time) */
	SLUICE_EV_LOCK_GAVE_UP = 5,		/* a claim found its stripe lock held
						 * and gave up after bounded tries */
	SLUICE_EV_MAX,
};

/* The source table's occupancy, kept by the datapath as per-CPU deltas
 * (struct src_stats: each CPU adds +1 and -1, the sum is the count), so
 * status and a scrape read it without walking the table. */
enum sluice_src_stat {
	SLUICE_SRC_STAT_LIVE = 0,		/* slots held (home and keyed) */
	SLUICE_SRC_STAT_ESTABLISHED = 1,	/* ... by established sources */
	SLUICE_SRC_STAT_KEYED = 2,		/* ... by keyed buckets */
	SLUICE_SRC_STAT_MAX,
};

/* What a limit counts. */
enum sluice_unit {
	SLUICE_UNIT_PACKETS = 0,	/* --rate */
	SLUICE_UNIT_BYTES = 1,		/* --bytes: the frame's whole length */
	SLUICE_UNIT_REQUESTS = 2,	/* --requests: HTTP requests the check server
					 * answers; such rules never judge packets
					 * (they are not in the trie) */
	SLUICE_UNIT_MAX,
};

/* How a limit decides (--algo); see gcra.h and window.h. */
enum sluice_algo {
	SLUICE_ALGO_TOKEN_BUCKET = 0,	/* GCRA: smooths */
	SLUICE_ALGO_FIXED_WINDOW = 1,	/* N per aligned window */
	SLUICE_ALGO_SLIDING_WINDOW = 2,	/* the counter approximation */
	SLUICE_ALGO_MAX,
};

/* The periods a rate may be written per: N, N/s, N/m, N/h. */
#define SLUICE_PERIOD_SEC		1U
#define SLUICE_PERIOD_MIN		60U
#define SLUICE_PERIOD_HOUR		3600U

/* How a rule's sources share buckets (--per), as written. */
enum sluice_per {
	SLUICE_PER_SOURCE = 0,		/* each address: /32 or /128 */
	SLUICE_PER_PREFIX = 1,		/* each /LEN of the source */
	SLUICE_PER_RULE = 2,		/* one bucket for the whole rule */
};

/* The ban table: sources banned by the check server's escalation (a request
 * rule's --ban), keyed by the source's home key (struct sluice_src_key with
 * key_len SLUICE_KEY_LEN_SOURCE and policy SLUICE_KEY_HOME). Every packet of
 * a source with a live entry is dropped as banned, SYNs included. */
#define SLUICE_MAX_BANS			65536U
struct sluice_ban {
	__u64 until_ns;		/* CLOCK_MONOTONIC: the ban ends then */
	__u32 policy;		/* the request rule's index (its counters) */
	__u32 pad;
};

/*
 * The prefix ban table (ban add, ban load): a longest-prefix-match trie of
 * banned prefixes, checked before any rule. It lives in slot 0 of the
 * ban_trie map (an array of maps): userspace builds a new trie and swaps it
 * in whole, so a list is replaced in one step, and removes it when the
 * last ban goes, so the datapath looks at none while no prefix is banned.
 * The key is the source's family, then its address in the 128-bit form
 * (IPv4 as ::ffff:a.b.c.d), as struct sluice_src_key has them.
 */
struct sluice_ban_key {
	__u32 prefixlen;	/* SLUICE_BAN_KEY_FAMILY_BITS + prefix, 128-bit form */
	__u8 family;		/* SLUICE_FAMILY_V4 or SLUICE_FAMILY_V6 */
	__u8 addr[SLUICE_ADDR_LEN];
	/* zero; 28 bytes in all, so that the trie keeps the value (what
	 * follows the key's 24 bytes of data) 8-byte aligned: the datapath's
	 * atomic add to `dropped` never straddles a cache line (a split lock
	 * cost 1.4 us a banned packet) */
	__u8 pad[7];
};
#define SLUICE_BAN_KEY_FAMILY_BITS	8U
/* The key of the ban on prefix addr/plen (the 128-bit form) of family:
 * padding zeroed. The datapath's lookup and userspace's writes build it
 * here alike. */
static inline void sluice_ban_key_make(struct sluice_ban_key *k, __u8 family, const __u8 *addr,
				       __u32 plen)
{
	__builtin_memset(k, 0, sizeof(*k));
	k->prefixlen = SLUICE_BAN_KEY_FAMILY_BITS + plen;
	k->family = family;
	__builtin_memcpy(k->addr, addr, sizeof(k->addr));
}
/*
 * A prefix's entry. Each list that holds the prefix keeps its own end
 * (ends[], in the order of the set bits of lists), and until_ns is the
 * latest of them: the prefix is banned while any list's ban on it is
 * live. An entry whose until_ns has passed is absent to the datapath,
 * and so is every entry of a shorter prefix it may hide: the lookup is
 * done again at prefixlen - 1, which finds the next covering entry
 * (bpf/sluice.bpf.c, prefix_banned), until a live one or none.
 */
struct sluice_pfx_ban {
	__u64 until_ns;		/* CLOCK_MONOTONIC, the latest of ends[]; 0: forever */
	__u64 dropped;		/* packets dropped (atomic adds) */
	__u64 lists;		/* bit i: list i holds the prefix */
	__u32 list;		/* the list its drops count to: the one whose end is until_ns */
	__u32 prefixlen;	/* its key's prefixlen, where the next lookup starts below */
	__u64 loaded;		/* bit i: list i's ban came by ban load (else ban add) */
	__u64 ends[SLUICE_BAN_ENDS];	/* each list's end, by rank of its bit; 0: forever */
};
/* How a list's ban on a prefix came (a list's tallies count by it). */
#define SLUICE_BAN_KIND_ADDED		1U	/* ban add */
#define SLUICE_BAN_KIND_LOADED		2U	/* ban load */
/* A list of prefix bans (ban_lists map, index = list): its name, "" when
 * unused; written by userspace only. */
#define SLUICE_BAN_LIST_NAME		32
struct sluice_ban_list {
	char name[SLUICE_BAN_LIST_NAME];
	__u64 entries[3];	/* prefixes by kind (index SLUICE_BAN_KIND_*) */
	__u64 next_expiry;	/* the earliest until_ns of its entries, 0: none */
};

/* A rule's match (--proto, --dport, --syn). A rule applies to a packet when
 * its CIDR covers the source and every flag set here holds. */
#define SLUICE_MATCH_PROTO		0x1	/* the L4 protocol is proto */
#define SLUICE_MATCH_PORT		0x2	/* TCP/UDP, dport in [dport_lo, dport_hi] */
#define SLUICE_MATCH_SYN		0x4	/* TCP, SYN set and ACK clear */
#define SLUICE_MATCH_ALL		(SLUICE_MATCH_PROTO | SLUICE_MATCH_PORT | SLUICE_MATCH_SYN)
/* Rules one LPM entry lists as candidates (its own and its covering
 * prefixes', up to the first rule without a match). */
#define SLUICE_MATCH_MAX		8

struct sluice_match {
	__u16 policy;		/* index into the slot's policy table */
	__u8 flags;		/* SLUICE_MATCH_* */
	__u8 proto;		/* IPPROTO_*, with SLUICE_MATCH_PROTO */
	__u16 dport_lo;		/* host byte order, with SLUICE_MATCH_PORT */
	__u16 dport_hi;
};

/* An address: IPv4 stored IPv4-mapped (::ffff:a.b.c.d). */
struct sluice_addr {
	__u8 a[SLUICE_ADDR_LEN];
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
 * The fragment table: what the first fragment of a fragmented datagram
 * said of its L4 (protocol, destination port, TCP flags), so that its later
 * fragments, which carry no L4 header, are judged by the rule the first was
 * (doc/rules.rst, "Fragments"). Keyed as the stack reassembles: IPv4 by
 * (source, destination, identification, protocol), IPv6 by (source,
 * destination, the fragment header's identification); an IPv6 later
 * fragment's next header is not the datagram's, so proto is 0 there.
 * Addresses in the 128-bit form (IPv4 as ::ffff:a.b.c.d). An LRU hash of
 * SLUICE_FRAG_ENTRIES datagrams in flight; written and read by the program
 * only.
 */
struct sluice_frag_key {
	__u8 src[SLUICE_ADDR_LEN];
	__u8 dst[SLUICE_ADDR_LEN];
	__u32 id;		/* IPv4: 16 bits, IPv6: 32; as on the wire */
	__u8 family;		/* SLUICE_FAMILY_V4 or SLUICE_FAMILY_V6 */
	__u8 proto;		/* IPv4's protocol; 0 for IPv6 */
	__u16 pad;		/* zero */
};
struct sluice_frag_l4 {
	__u8 proto;		/* the datagram's L4 protocol */
	__u8 flags;		/* bpf/parse.h's L4_PORTS and L4_SYN */
	__u16 dport;		/* host byte order, with L4_PORTS */
};

/* LPM trie key: the policy slot first, so one trie holds both generations
 * and a lookup with the active slot sees only that one; then the family, so
 * an IPv6 prefix such as ::/0 never covers IPv4 (stored IPv4-mapped). */
struct sluice_lpm_key {
	__u32 prefixlen;	/* 8 (slot) + 8 (family) + address prefix length */
	__u8 slot;
	__u8 family;		/* SLUICE_FAMILY_V4 or SLUICE_FAMILY_V6 */
	__u8 addr[SLUICE_ADDR_LEN];
};
#define SLUICE_FAMILY_V4		4
#define SLUICE_FAMILY_V6		6
#define SLUICE_LPM_HDR_BITS		16	/* slot and family */
#define SLUICE_LPM_FULL_PREFIX		(SLUICE_LPM_HDR_BITS + 8 * SLUICE_ADDR_LEN)

/* The rules that may decide a source this entry covers, most specific
 * first: the first whose match holds decides; when none does, the default
 * (policy 0). A list ends at its first rule without a match. */
struct sluice_lpm_val {
	__u32 n;		/* entries of m in use, 1..SLUICE_MATCH_MAX */
	__u32 pad;
	struct sluice_match m[SLUICE_MATCH_MAX];
};

/* SLUICE_POLICY_* flags of a policy. */
#define SLUICE_POLICY_MONITOR		0x1	/* --monitor: would-drops pass */
/* Judged by the coarse clock (bpf_ktime_get_coarse_ns, CLOCK_MONOTONIC_COARSE,
 * one tick cheaper to read by ~20 ns than the precise one): set by the CLI
 * for a token bucket without --ban whose emission interval is at least one
 * tick, so the clock's lag (under a tick while the timer ticks on time) is
 * worth at most one unit: in any interval t such a rule admits at most
 * burst + rate x t + 2 (one for the interval's rounding, one for the
 * clock), one more per tick the timer runs late. A ban keeps the precise clock: its
 * slack (gcra.h) is below a tick. */
#define SLUICE_POLICY_COARSE_CLOCK	0x2
/* --cluster: the rule's limit holds across every host that joined one
 * Redis (`sluice cluster join`); interval and tolerance are this host's
 * share of it, set by the commit from struct sluice_cluster_state. */
#define SLUICE_POLICY_CLUSTER		0x4
/* Set with SLUICE_POLICY_CLUSTER while the agent is up: a packet the share
 * rejects may spend its bucket's lease (struct sluice_lease). */
#define SLUICE_POLICY_LEASED		0x8

/* One policy: what to do with a source and, for limit, its algorithm's
 * parameters (struct sluice_limit, algo.h). A packet reads the first 56
 * bytes only; a bucket re-bound to a new generation also reads the next
 * 48 (when the limit last changed, and the one before); the rest is the
 * rule as written, for the CLI. */
struct sluice_policy {
	__u64 interval;		/* token bucket: emission interval T, GCRA units
				 * (gcra.h), per packet or, for SLUICE_UNIT_BYTES,
				 * per byte; windows: the window, ns */
	__u64 tolerance;	/* token bucket: burst * T, GCRA units;
				 * windows: the budget per window, units */
	__u32 action;		/* enum sluice_action */
	__u32 in_use;		/* 1 if this index holds a policy in its slot */
	__u64 since;		/* generation since which action, unit, algo,
				 * interval, tolerance and ban at this index are
				 * unchanged */
	__u64 ban;		/* --ban, GCRA units (token bucket) or ns
				 * (windows); 0 for none */
	__u32 ban_windows;	/* sliding-window: --ban in windows (window.h) */
	__u32 ban_after;	/* request rules: --ban-after (0 without --ban) */
	__u8 unit;		/* enum sluice_unit */
	__u8 key_len;		/* buckets key the source masked to this many
				 * bits of the 128-bit form: 128 per source */
	__u8 flags;		/* SLUICE_POLICY_* */
	__u8 algo;		/* enum sluice_algo */
	__u8 bits;		/* sliding-window: bits of each count */
	__u8 per;		/* enum sluice_per, as written */
	__u16 period;		/* SLUICE_PERIOD_*: what rate is per */
	/* The limit's history at this index, for re-binding a bucket whose
	 * generation is older than `since`: when `since` became active, and
	 * the limit in force before it, which judged the generations
	 * prev_since .. since - 1 (none when prev_since >= since). */
	__u64 since_ns;		/* CLOCK_MONOTONIC ns generation `since` became
				 * active; 0 while `since` is the generation this
				 * slot holds (then the slot's active_since_ns) */
	__u64 prev_since;
	__u64 prev_interval;
	__u64 prev_tolerance;
	__u64 prev_ban;
	__u32 prev_ban_windows;
	__u8 prev_action;	/* enum sluice_action */
	__u8 prev_algo;
	__u8 prev_bits;
	__u8 prev_pad;
	/* the rule as written */
	__u64 rate;		/* units per period */
	__u64 burst;		/* units */
	__u32 prefixlen;	/* address prefix length (0..128, v4 as 96+) */
	__u8 addr[SLUICE_ADDR_LEN];
	__u8 family;		/* SLUICE_FAMILY_*, 0 for the default */
	__u8 per_len;		/* --per /LEN, in the family's own terms */
	__u8 pad[2];
	struct sluice_match match;	/* the rule's match (policy unused) */
};
/* The datapath's two read regions (above), kept where they are. */
_Static_assert(__builtin_offsetof(struct sluice_policy, since_ns) == 56,
	       "a packet reads the first 56 bytes of a policy");
_Static_assert(__builtin_offsetof(struct sluice_policy, rate) == 104,
	       "a re-bind reads the 48 after them");

/* Single entry of the config map, changed in single 8-byte stores:
 * generation in the high bits, bit 1 set while a commit writes the inactive
 * slot, active slot in bit 0. A commit sets the writing bit, fills the
 * inactive slot, then stores the next generation with the slots swapped. */
struct sluice_config {
	__u64 gen_slot;
	/* When each slot last became active (CLOCK_MONOTONIC ns), written
	 * before the flip: a bucket re-bound later carries the tokens it had
	 * at that moment and has refilled at the new rate since. */
	__u64 active_since_ns[SLUICE_POLICY_SLOTS];
	/* The new-source budget (limit new-sources): one GCRA bucket that every
	 * packet taking a new entry of the source table must pass. It is part
	 * of the policy, so each slot has its own, written with the slot and
	 * switched by the same flip (a commit killed between two stores must
	 * not leave the new rules with the old budget); the datapath reads the
	 * active slot's and changes new_tat only, by CAS, and only when it
	 * admits: spending carries over from one generation to the next. */
	__u64 new_tat;
	struct sluice_budget {
		__u64 interval;	/* 0: no budget */
		__u64 tolerance;
		__u64 rate;	/* as written, for the CLI: per period */
		__u64 burst;
		__u32 period;
		__u32 pad;
	} new_src[SLUICE_POLICY_SLOTS];
	/* Nonzero while a policy may be leased (SLUICE_POLICY_LEASED): only
	 * then does a rate-limited packet look for a lease. A commit sets it
	 * before its flip when the new policy has a leased rule, and clears
	 * it after the flip when it has none. */
	__u64 leasing;
	/* The source table (struct sluice_slot): its buckets and
	 * --max-sources, written once by attach, after its seed (struct
	 * sluice_src_seed, a map of its own) and before the program places a
	 * source. */
	__u32 src_buckets;
	__u32 src_capacity;
	/* The prefix ban table's capacity (attach --max-bans). */
	__u32 ban_capacity;
	__u32 pad_bans;
	/* How long an established source's slot must have been idle before
	 * a new source may take it (attach --established-idle), ns; 0 reads
	 * as SLUICE_EST_IDLE_NS_DEFAULT (a table made by an older attach). */
	__u64 src_idle_ns;
};
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
 * The only entry of the ban_state map: whether the ban table (the check
 * server's escalation bans) has entries, SLUICE_BANS_*. The datapath looks
 * a source up in the table only while SLUICE_BANS_LIVE is set, so it costs
 * nothing without bans. A writer adds its entry, then sets the bit and adds
 * SLUICE_BANS_WRITE in one CAS; the sweeper clears the bit by a CAS from
 * the value it read before finding the table empty, which fails if any
 * entry was added meanwhile (see user/cmd/ban.c). A map of its own, not a
 * word of the config: the check server writes it, and may write nothing
 * of the policy.
 */
struct sluice_ban_state {
	__u64 bans;
};
#define SLUICE_BANS_LIVE		1ULL
#define SLUICE_BANS_WRITE		2ULL
#define SLUICE_GEN_SLOT(gs)		((__u32)((gs) & 1))
#define SLUICE_GEN_WRITING		2ULL
#define SLUICE_GEN_SHIFT		2
#define SLUICE_GEN(gs)			((gs) >> SLUICE_GEN_SHIFT)
#define SLUICE_GEN_MAKE(gen, slot)	(((__u64)(gen) << SLUICE_GEN_SHIFT) | (slot))

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

/* What a bucket may admit beyond its share: units granted by the agent,
 * spent by CAS; void after expires_ns. Keyed by the bucket's key. */
struct sluice_lease {
	__u64 credit;		/* units left */
	__u64 expires_ns;	/* CLOCK_MONOTONIC */
	__u32 policy;		/* the rule's index: a lease serves it only */
	__u32 pad;
};

/* A hot notice: a bucket of a leased rule rejected by its share. */
struct sluice_hot {
	struct sluice_src_key key;	/* the bucket's */
	__u32 policy;
};

/* One lease write of the agent (bpf/cluster.bpf.c's sluice_grant). */
struct sluice_grant {
	struct sluice_src_key key;
	__u32 policy;
	__u64 credit;		/* in: the new credit (0 with expires_ns 0: release
				 * the lease); out: the credit it had left */
	__u64 expires_ns;
};
/* A grant's credit on return when no lease could be added (map full). */
#define SLUICE_GRANT_FAILED		(~0ULL)
struct sluice_grant_batch {
	__u32 n;
	__u32 pad;
	struct sluice_grant g[SLUICE_CLUSTER_GRANT_BATCH];
};

enum sluice_cluster_mode {
	SLUICE_CLUSTER_NONE = 0,	/* no agent has run on this interface */
	SLUICE_CLUSTER_UP = 1,		/* agent up, Redis answering */
	SLUICE_CLUSTER_FALLBACK = 2,	/* agent up, Redis not answering */
	SLUICE_CLUSTER_STOPPED = 3,	/* the agent exited */
};

/* The agent's state, written by it alone; the commit reads mode and peers
 * for the shares, status and the exporter the rest. */
struct sluice_cluster_state {
	__u32 mode;		/* enum sluice_cluster_mode */
	__u32 peers;		/* N the shares use, >= 1 */
	__u32 pid;		/* the agent's */
	__u32 sync_ms;
	__u64 started_ns;	/* CLOCK_MONOTONIC: agent start */
	__u64 heartbeat_ns;	/* CLOCK_MONOTONIC: the agent's last loop */
	__u64 last_sync_ns;	/* CLOCK_MONOTONIC: last successful sync, 0 none */
	__u64 syncs;		/* successful */
	__u64 sync_failures;
	__u64 grants;		/* lease grants written */
	__u64 granted;		/* units granted */
	__u64 redis_ops;	/* commands sent */
	__u64 fallbacks;	/* times it entered fallback */
	__u64 fallback_ns;	/* time in fallback, finished periods */
	__u64 fallback_since_ns;/* CLOCK_MONOTONIC, 0 when not in fallback */
	__u32 leases;		/* buckets holding a lease now */
	__u32 npeers;		/* names in peer[] */
	char node[SLUICE_CLUSTER_NAME_MAX];
	char url[SLUICE_CLUSTER_URL_MAX];
	char peer[SLUICE_CLUSTER_PEERS_MAX][SLUICE_CLUSTER_NAME_MAX];
};

/* Per-CPU counters, indexed by enum sluice_reason. */
struct sluice_counter {
	__u64 packets;
	__u64 bytes;
};

/* Per-CPU counters per policy index. */
struct sluice_policy_counter {
	__u64 pass_packets;
	__u64 drop_packets;
	__u64 pass_bytes;
	__u64 drop_bytes;
	/* Of the passed: those a --monitor rule would have dropped. */
	__u64 monitor_packets;
	__u64 monitor_bytes;
};

/* Written by `sluice attach` so status and the exporter can report it. */
struct sluice_meta {
	__u32 ifindex;
	__u32 xdp_mode;		/* enum xdp_attach_mode actually used */
	__u32 multiprog;	/* 1 = libxdp dispatcher, 0 = single program */
	__u32 prog_id;
	__u64 attached_at;	/* CLOCK_REALTIME seconds */
};

/* The live policy as `policy show` prints it, written by every commit
 * beside the slot it flips to. Its layout never changes: an attach of
 * another version whose policy maps differ re-reads the rules from here
 * (doc/upgrading.md). The datapath never reads it. */
/* A comment line, the default, every rule and the budget, a line each. */
#define SLUICE_POLICY_TEXT_MAX	((SLUICE_MAX_POLICIES + 2U) * SLUICE_RULE_TEXT_MAX)
struct sluice_policy_text {
	__u32 len;		/* bytes of text, without a NUL */
	__u32 pad;
	char text[SLUICE_POLICY_TEXT_MAX];
};
/* The text's first line names the version that wrote it, the pins' version
 * as far as a later one can tell (pins of a version that wrote none are of
 * an earlier one): "# written by sluice 0.2.0". It shares the comment
 * line's room in SLUICE_POLICY_TEXT_MAX. */
#define SLUICE_POLICY_TEXT_BY	"# written by sluice "

#endif /* SLUICE_ABI_H */
