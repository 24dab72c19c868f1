/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Shared between the XDP program and the CLI: limits, map keys and values,
 * counter layouts. Every struct here is part of the pinned-map ABI. */
#ifndef SLUICE_SLUICE_H
#define SLUICE_SLUICE_H

#include <linux/types.h>

#define SLUICE_NS_PER_SEC		1000000000ULL

/* Limits of the policy the CLI accepts. */
#define SLUICE_RATE_MIN			1ULL
#define SLUICE_RATE_MAX			1000000000ULL	/* 1e9 per second */
#define SLUICE_BURST_MIN		1ULL
#define SLUICE_BURST_MAX		1000000000ULL	/* burst*interval <= 1e18 ns */

/* Default and bounds of the source table (one bucket per address). */
#define SLUICE_MAX_SOURCES_DEFAULT	262144U
#define SLUICE_MAX_SOURCES_MIN		1024U
#define SLUICE_MAX_SOURCES_MAX		16777216U

/* Policies: slot 0 of each generation is the default, 1.. are CIDR rules. */
#define SLUICE_MAX_POLICIES		1024U
#define SLUICE_POLICY_DEFAULT		0U
#define SLUICE_POLICY_SLOTS		2U	/* double-buffered, flipped atomically */

/* Datapath bounds. */
#define SLUICE_MAX_VLAN_TAGS		2
#define SLUICE_MAX_IPV6_EXT_HDRS	8
#define SLUICE_CAS_TRIES		16

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

/* Why a packet passed or dropped: exactly one per packet. */
enum sluice_reason {
	SLUICE_R_WITHIN_LIMIT = 0,	/* pass */
	SLUICE_R_ALLOWED,		/* pass */
	SLUICE_R_NON_IP,		/* pass */
	SLUICE_R_MALFORMED,		/* pass */
	SLUICE_R_RATE_LIMITED,		/* drop */
	SLUICE_R_DENIED,		/* drop */
	SLUICE_R_MAX,
};

static inline int sluice_reason_is_drop(__u32 reason)
{
	return reason == SLUICE_R_RATE_LIMITED || reason == SLUICE_R_DENIED;
}

/* Key of the source table and of the policy trie's address part. */
struct sluice_addr {
	__u8 a[SLUICE_ADDR_LEN];
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

struct sluice_lpm_val {
	__u32 policy;		/* index into the slot's policy table */
};

/* One policy: what to do with a source and, for limit, its GCRA parameters. */
struct sluice_policy {
	__u64 rate;		/* packets per second */
	__u64 burst;		/* packets */
	__u64 interval_ns;	/* emission interval T = 1e9 / rate */
	__u64 tolerance_ns;	/* burst * T */
	__u32 action;		/* enum sluice_action */
	__u32 in_use;		/* 1 if this index holds a policy in its slot */
	__u32 prefixlen;	/* address prefix length (0..128, v4 as 96+) */
	__u8 addr[SLUICE_ADDR_LEN];
};

/* Single entry of the config map. gen_slot changes in one 8-byte store:
 * generation in the high bits, active slot in bit 0. */
struct sluice_config {
	__u64 gen_slot;
};
#define SLUICE_GEN_SLOT(gs)		((__u32)((gs) & 1))
#define SLUICE_GEN(gs)			((gs) >> 1)

/* Per-source state: the GCRA word, the policy resolved for this source at
 * generation gen, and the source's own counters (for `sluice top`). */
struct sluice_bucket {
	__u64 tat;		/* theoretical arrival time, ns, CAS-updated */
	__u64 interval_ns;
	__u64 tolerance_ns;
	__u64 gen;		/* config generation the cached policy is from */
	__u32 policy;
	__u32 action;
	__u64 passed;		/* packets, atomically added */
	__u64 dropped;
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
};

/* Written by `sluice attach` so status and the exporter can report it. */
struct sluice_meta {
	__u32 ifindex;
	__u32 xdp_mode;		/* enum xdp_attach_mode actually used */
	__u32 multiprog;	/* 1 = libxdp dispatcher, 0 = single program */
	__u32 prog_id;
	__u64 attached_at;	/* CLOCK_REALTIME seconds */
};

#endif /* SLUICE_SLUICE_H */
