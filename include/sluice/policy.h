/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The rules and the policy table: a policy's action, unit, algorithm and
 * match; the LPM trie that finds a packet's rules; the config map's
 * generation and slot flip; the live policy's text. */
#ifndef SLUICE_ABI_POLICY_H
#define SLUICE_ABI_POLICY_H

#include <linux/types.h>
#include "sluice/bounds.h"
#include "sluice/addr.h"

/* Policies: slot 0 of each generation is the default, 1.. are CIDR rules. */
#define SLUICE_MAX_POLICIES		1024U
#define SLUICE_POLICY_DEFAULT		0U
#define SLUICE_POLICY_SLOTS		2U	/* double-buffered, flipped atomically */

/* Zero is allow, so a zeroed (not yet written) policy never limits. */
enum sluice_action {
	SLUICE_ACT_ALLOW = 0,
	SLUICE_ACT_LIMIT = 1,
	SLUICE_ACT_DENY = 2,
	SLUICE_ACT_MAX,
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

/* LPM trie key: the policy slot first, so one trie holds both generations
 * and a lookup with the active slot sees only that one; then the family, so
 * an IPv6 prefix such as ::/0 never covers IPv4 (stored IPv4-mapped). */
struct sluice_lpm_key {
	__u32 prefixlen;	/* 8 (slot) + 8 (family) + address prefix length */
	__u8 slot;
	__u8 family;		/* SLUICE_FAMILY_V4 or SLUICE_FAMILY_V6 */
	__u8 addr[SLUICE_ADDR_LEN];
};
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
#define SLUICE_GEN_SLOT(gs)		((__u32)((gs) & 1))
#define SLUICE_GEN_WRITING		2ULL
#define SLUICE_GEN_SHIFT		2
#define SLUICE_GEN(gs)			((gs) >> SLUICE_GEN_SHIFT)
#define SLUICE_GEN_MAKE(gen, slot)	(((__u64)(gen) << SLUICE_GEN_SHIFT) | (slot))

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

#endif /* SLUICE_ABI_POLICY_H */
