/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The reasons a packet is counted under, listed once. */
#ifndef SLUICE_REASONS_H
#define SLUICE_REASONS_H

#include <linux/types.h>

/*
 * Why a packet passed or dropped: exactly one per packet. One line per
 * reason, X(ID, name, drop, help): SLUICE_R_ID, in enum order (the index
 * of its counters, part of the pinned-map ABI); the name stats, `stats -j`
 * and the exporter's reason label print; 1 if such a packet is dropped;
 * what it means, as doc/metrics.md's reason table says (tests/lint/reasons.sh
 * checks that table against this list).
 */
#define SLUICE_REASONS(X)							\
	X(WITHIN_LIMIT, "within_limit", 0, "admitted by its bucket")		\
	X(ALLOWED, "allowed", 0,						\
	  "an `allow` rule, or the default before any `limit default`")	\
	X(NON_IP, "non_ip", 0, "ARP, LLDP and other non-IP frames, tagged or not") \
	X(MALFORMED, "malformed", 0,						\
	  "IP headers that do not parse, passed so the stack can decide; "	\
	  "charged to their source when they name one")				\
	X(RATE_LIMITED, "rate_limited", 1, "over its rate and burst")		\
	X(DENIED, "denied", 1, "a `deny` rule")					\
	X(NO_BUCKET, "no_bucket", 1,						\
	  "limited, but the source table could not give it a bucket: "		\
	  "dropped, never passed unjudged")					\
	X(MONITORED, "monitored", 0, "a `--monitor` rule would have dropped it") \
	X(BANNED, "banned", 1,							\
	  "its source or prefix is serving a `--ban` after it was rate "	\
	  "limited, or the check server banned its address for a request "	\
	  "rule's `--ban`")							\
	X(NEW_SOURCE_LIMITED, "new_source_limited", 1,				\
	  "it needed a new entry of the source table while the new-source "	\
	  "budget was spent; it took none")					\
	X(L4_UNREADABLE, "l4_unreadable", 1,					\
	  "malformed, e.g. a SYN behind more than 8 IPv6 extension headers "	\
	  "or a TCP header cut into a tiny first fragment, from a source a "	\
	  "`--proto`, `--dport` or `--syn` rule covers: its L4 facts cannot "	\
	  "be read, so it is dropped; counted on that rule")			\
	X(VLAN_TOO_DEEP, "vlan_too_deep", 1,					\
	  "a frame whose VLAN tag stack is deeper than sluice parses, more "	\
	  "than 8 tags: its source is never read, so "	\
	  "it is dropped; counted on no rule")					\
	X(FRAG_ORPHAN, "frag_orphan", 1,					\
	  "a later fragment whose first fragment was never seen (or was "	\
	  "forgotten), where a `--dport` or `--syn` rule covering its source "	\
	  "(for IPv6 also a `--proto` rule) might decide it: the rule its "	\
	  "datagram belongs to cannot be told, so it is dropped; counted on "	\
	  "that rule")

enum sluice_reason {
#define SLUICE_REASON_ENUM(id, name, drop, help) SLUICE_R_##id,
	SLUICE_REASONS(SLUICE_REASON_ENUM)
#undef SLUICE_REASON_ENUM
	SLUICE_R_MAX,
};

/* The drop set: bit r set when reason r drops. */
#define SLUICE_REASON_DROP_BIT(id, name, drop, help) | ((__u32)(drop) << SLUICE_R_##id)
#define SLUICE_REASONS_DROP		(0 SLUICE_REASONS(SLUICE_REASON_DROP_BIT))
_Static_assert(SLUICE_R_MAX <= 32, "the drop set is one 32-bit word");

/* Tested as one comparison per drop reason, which the datapath compiles
 * to fewer instructions than a bounded test of SLUICE_REASONS_DROP. */
#define SLUICE_REASON_IS(id, name, drop, help) || ((drop) && reason == SLUICE_R_##id)

static inline int sluice_reason_is_drop(__u32 reason)
{
	return 0 SLUICE_REASONS(SLUICE_REASON_IS);
}

#endif /* SLUICE_REASONS_H */
