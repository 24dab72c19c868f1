/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Bans: the check server's escalation table and its state word, and the
 * prefix ban trie (ban add, ban load) with its lists. */
#ifndef SLUICE_ABI_BANS_H
#define SLUICE_ABI_BANS_H

#include <linux/types.h>
#include "sluice/bounds.h"
#include "sluice/addr.h"

/* The ban table: sources banned by the check server's escalation (a request
 * rule's --ban), keyed by the source's home key (struct sluice_src_key with
 * key_len SLUICE_KEY_LEN_SOURCE and policy SLUICE_KEY_HOME). Every packet of
 * a source with a live entry is dropped as banned, SYNs included. */
#define SLUICE_MAX_ESCALATION_BANS	65536U
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

#endif /* SLUICE_ABI_BANS_H */
